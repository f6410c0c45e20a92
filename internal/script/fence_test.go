package script_test

import (
	"testing"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/script"
)

func TestDecodeFenceGet(t *testing.T) {
	v, err := script.DecodeFenceGet(backend.Reply{1, 42, 1234567890, 123456789, 1}, []byte("hi"))
	if err != nil || v.Version != 42 || v.Token != 1234567890123456789 || string(v.Data) != "hi" {
		t.Errorf("DecodeFenceGet = (%+v, %v); want version 42, token 1234567890123456789, data hi", v, err)
	}
	v, err = script.DecodeFenceGet(backend.Reply{1, 7, 0, 5, 0}, nil)
	if err != nil || v.Data != nil || v.Version != 7 || v.Token != 5 {
		t.Errorf("DecodeFenceGet of an absent value = (%+v, %v); want nil data, version 7, token 5", v, err)
	}
	for _, r := range []backend.Reply{nil, {1, 2, 3}, {-2, 0, 0, 0, 0}, {1, 0, 0, 0, 1}} {
		if _, err := script.DecodeFenceGet(r, nil); err == nil {
			t.Errorf("DecodeFenceGet(%v) = nil error; want an error for a malformed reply", r)
		}
	}
}
