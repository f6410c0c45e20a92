package driver

import (
	"testing"
)

// FuzzDecode feeds script replies of every shape to the decoder: it never
// panics, accepts exactly the arrays of integers (which may end with one
// byte string), and keeps their values.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 1, 2}, int64(7), "x")
	f.Add([]byte{}, int64(-1), "")
	f.Add([]byte{3, 3}, int64(0), "OK")
	s := NewScript("fuzz", Query, "return 1", nil)
	f.Fuzz(func(t *testing.T, shape []byte, n int64, str string) {
		// Each byte of shape picks an element: 0 integer, 1 string, 2 nil,
		// 3 nested array; more than 64 elements are cut.
		if len(shape) > 64 {
			shape = shape[:64]
		}
		arr := make([]any, len(shape))
		ints := true
		for i, k := range shape {
			switch k % 4 {
			case 0:
				arr[i] = n + int64(i)
			case 1:
				arr[i] = str
				// Allowed only in last place, after at least one element.
				ints = ints && i == len(shape)-1 && i > 0
			case 2:
				arr[i], ints = nil, false
			case 3:
				arr[i], ints = []any{n}, false
			}
		}
		c := &Call{Script: s}
		c.Decode(arr)
		r, data, err := c.Reply, c.Data, c.Err
		if (err == nil) != ints {
			t.Fatalf("decode(%v) = (%v, %q, %v); want an error exactly when an element other than a trailing string is not an integer", arr, r, data, err)
		}
		for i := range r {
			if r[i] != n+int64(i) {
				t.Fatalf("decode kept %d at %d; want %d", r[i], i, n+int64(i))
			}
		}
		if err == nil && len(shape) > 1 && shape[len(shape)-1]%4 == 1 && string(data) != str {
			t.Fatalf("decode kept data %q; want %q", data, str)
		}
		if _, _, err := decode(s.Name(), str, nil); err == nil {
			t.Fatalf("decode of a bare string succeeded")
		}
		// A single integer: a token when positive, else minus a wait.
		want := Reply{StatusOK, n}
		if n <= 0 {
			want = Reply{StatusContended, -n}
		}
		if r, data, err := decode(s.Name(), n, nil); err != nil || data != nil || len(r) != 2 || r[0] != want[0] || r[1] != want[1] {
			t.Fatalf("decode(%d) = (%v, %q, %v); want %v", n, r, data, err, want)
		}
		if st := r.Status(); len(r) == 0 && st != StatusGone {
			t.Fatalf("Status of an empty reply = %d; want StatusGone", st)
		}
		_ = r.At(len(shape) + 5)
	})
}
