package security_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/admin"
	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/fair"
	"github.com/redisync/redisync/fence"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
	"github.com/redisync/redisync/multi"
	"github.com/redisync/redisync/mutex"
	"github.com/redisync/redisync/reentrant"
	"github.com/redisync/redisync/rwmutex"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// aclRule returns the rule of the Redis ACL user documented in README.md:
// the text after "ACL SETUSER redisync on >PASSWORD " on its line.
func aclRule(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const lead = "ACL SETUSER redisync on >PASSWORD "
	for _, line := range strings.Split(string(readme), "\n") {
		if i := strings.Index(line, lead); i >= 0 {
			return strings.TrimSpace(line[i+len(lead):])
		}
	}
	t.Fatalf("README.md has no line with %q", lead)
	return ""
}

// TestACLRuleCoversScripts checks that every command the Lua scripts call,
// and the publish commands they get as an argument, is allowed by the
// documented rule.
func TestACLRuleCoversScripts(t *testing.T) {
	rule := " " + aclRule(t) + " "
	files, err := filepath.Glob("../../internal/script/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Lua scripts found: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\(\s*'([A-Za-z|]+)'`)
	quoted := regexp.MustCompile(`cmd = '([A-Za-z]+)'`)
	used := map[string]bool{"publish": true, "spublish": true}
	// The commands the scripts call with a subcommand only, and those
	// subcommands (the rule allows them one by one).
	subcommands := map[string][]string{"pubsub": {"numsub", "shardnumsub"}}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{call, quoted} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				used[strings.ToLower(m[1])] = true
			}
		}
	}
	for cmd := range used {
		if subs, ok := subcommands[cmd]; ok {
			for _, sub := range subs {
				if !strings.Contains(rule, " +"+cmd+"|"+sub+" ") {
					t.Errorf("the scripts call %s %s, which the README's ACL rule does not allow", cmd, sub)
				}
			}
			continue
		}
		if !strings.Contains(rule, " +"+cmd+" ") {
			t.Errorf("the scripts call %s, which the README's ACL rule does not allow", cmd)
		}
	}
	t.Logf("%d commands used by the scripts, all allowed", len(used))
}

// TestACLUser runs the mutex as a user limited by the README's rule: it
// works, with the scripts called as functions, and the same user is
// refused a key outside the prefix (NOPERM, not retried). A user without
// FCALL and FUNCTION LOAD (the rule of earlier releases) works too, with
// every script sent with EVALSHA.
func TestACLUser(t *testing.T) {
	rule := aclRule(t)
	for _, tc := range []struct {
		name, rule string
		functions  bool
	}{
		{"Functions", rule, true},
		{"ScriptsOnly", strings.NewReplacer(" +fcall ", " ", " +function|load ", " ").Replace(rule), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rule == rule && !tc.functions {
				t.Fatalf("the README's rule %q has no +fcall or +function|load to take away", rule)
			}
			n := redistest.StartNode(t, redistest.WithConfig("user locker on >s3cret "+tc.rule))
			asACLUser(t, n.Addr)
			admin := redis.NewClient(&redis.Options{Addr: n.Addr})
			defer admin.Close()
			stats, err := admin.Info(context.Background(), "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			calls := func(cmd string) int {
				var n int
				if i := strings.Index(stats, "cmdstat_"+cmd+":calls="); i >= 0 {
					fmt.Sscanf(stats[i+len("cmdstat_"+cmd+":calls="):], "%d", &n)
				}
				return n
			}
			if fcalls, evalshas := calls("fcall"), calls("evalsha"); tc.functions && fcalls == 0 || !tc.functions && (fcalls > 0 || evalshas == 0) {
				t.Errorf("%d FCALL and %d EVALSHA calls; want the scripts called as functions: %v", fcalls, evalshas, tc.functions)
			}
		})
	}
}

// asACLUser runs every primitive as the user locker (password s3cret) on
// the server at addr.
func asACLUser(t *testing.T, addr string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: "locker", Password: "s3cret", ContextTimeoutEnabled: true})
	defer rdb.Close()
	b := backend.New(rdb)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a, _ := mutex.New(b, "acl")
	w, _ := mutex.New(b, "acl")
	if err := a.Lock(ctx); err != nil {
		t.Fatalf("Lock as the confined user: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.Lock(ctx) }() // subscribes to the wake channel
	time.Sleep(100 * time.Millisecond)
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("Unlock as the confined user: %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiter as the confined user: %v", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Every other primitive, once, as the same user.
	for _, p := range everyPrimitive {
		if err := p.run(ctx, b); err != nil {
			t.Errorf("%s as the confined user: %v", p.name, err)
		}
	}

	other := backend.New(rdb, backend.WithPrefix("elsewhere"))
	defer other.Close()
	m, _ := mutex.New(other, "acl")
	start := time.Now()
	err := m.Lock(ctx)
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Lock outside the user's key pattern = %v; want a NOPERM error", err)
	}
	if backend.IsTransient(err) || time.Since(start) > 10*time.Second {
		t.Errorf("NOPERM was retried (transient = %v, after %v); want it surfaced at once", backend.IsTransient(err), time.Since(start))
	}
	if err := rdb.Do(ctx, "CONFIG", "GET", "maxmemory").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("CONFIG as the confined user = %v; want NOPERM", err)
	}
}

// everyPrimitive exercises each primitive's scripts and wake-ups.
var everyPrimitive = []struct {
	name string
	run  func(ctx context.Context, b backend.Backend) error
}{
	{"rwmutex", func(ctx context.Context, b backend.Backend) error {
		m, _ := rwmutex.New(b, "acl-rw")
		w, _ := rwmutex.New(b, "acl-rw")
		if err := m.RLock(ctx); err != nil {
			return err
		}
		waited := make(chan error, 1)
		go func() { waited <- w.Lock(ctx) }()
		time.Sleep(50 * time.Millisecond)
		if err := m.RUnlock(ctx); err != nil {
			return err
		}
		if err := <-waited; err != nil {
			return err
		}
		return w.Unlock(ctx)
	}},
	{"reentrant", func(ctx context.Context, b backend.Backend) error {
		m, _ := reentrant.New(b, "acl-re")
		ctx = reentrant.WithOwner(ctx)
		for range 2 {
			if err := m.Lock(ctx); err != nil {
				return err
			}
		}
		return errors.Join(m.Unlock(ctx), m.Unlock(ctx))
	}},
	{"fair", func(ctx context.Context, b backend.Backend) error {
		a, _ := fair.New(b, "acl-fair")
		w, _ := fair.New(b, "acl-fair")
		if err := a.Lock(ctx); err != nil {
			return err
		}
		waited := make(chan error, 1)
		go func() { waited <- w.Lock(ctx) }() // joins the line
		time.Sleep(50 * time.Millisecond)
		if err := a.Unlock(ctx); err != nil {
			return err
		}
		if err := <-waited; err != nil {
			return err
		}
		return w.Unlock(ctx)
	}},
	{"semaphore", func(ctx context.Context, b backend.Backend) error {
		s, _ := semaphore.NewWeighted(b, "acl-sem", 2)
		if err := s.Acquire(ctx, 2); err != nil {
			return err
		}
		return s.Release(ctx, 2)
	}},
	{"latch", func(ctx context.Context, b backend.Backend) error {
		l, _ := latch.New(b, "acl-latch", 1)
		if err := l.CountDown(ctx); err != nil {
			return err
		}
		return l.Await(ctx)
	}},
	{"fence", func(ctx context.Context, b backend.Backend) error {
		if err := fence.Set(ctx, b, "acl-fence", 5, []byte("v")); err != nil {
			return err
		}
		_, err := fence.Update(ctx, b, "acl-fence", func(old []byte) ([]byte, error) { return append(old, '!'), nil })
		return err
	}},
	{"multi", func(ctx context.Context, b backend.Backend) error {
		l, _ := multi.New(b, []multi.Member{multi.Mutex("acl-m1"), multi.Mutex("acl-m2")})
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	}},
	{"inspect", func(ctx context.Context, b backend.Backend) error {
		m, _ := mutex.New(b, "acl-inspect")
		if err := m.Lock(ctx); err != nil {
			return err
		}
		defer m.Unlock(ctx)
		st, err := admin.Inspect(ctx, b, "acl-inspect")
		if err == nil && (st.Mutex == nil || st.Mutex.Token != m.Token()) {
			err = fmt.Errorf("Inspect read %+v; want the mutex held with token %d", st.Mutex, m.Token())
		}
		return err
	}},
}

// certs writes a CA and a server certificate for 127.0.0.1 into dir and
// returns the CA's pool.
func certs(t *testing.T, dir, prefix string) *x509.CertPool {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: prefix + " test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKeyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, prefix+name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.crt", "CERTIFICATE", caDER)
	write("server.crt", "CERTIFICATE", srvDER)
	write("server.key", "EC PRIVATE KEY", srvKeyDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestTLS runs the mutex over TLS with the right CA, and checks that a
// client trusting another CA fails closed instead of falling back to plain
// text.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	good := certs(t, dir, "good-")
	wrong := certs(t, dir, "wrong-")
	port := freePort(t)
	redistest.StartNode(t, redistest.WithConfig(
		"tls-port "+strconv.Itoa(port),
		"tls-cert-file "+filepath.Join(dir, "good-server.crt"),
		"tls-key-file "+filepath.Join(dir, "good-server.key"),
		"tls-ca-cert-file "+filepath.Join(dir, "good-ca.crt"),
		"tls-auth-clients no",
	))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: good, MinVersion: tls.VersionTLS12}})
	defer rdb.Close()
	b := backend.New(rdb)
	defer b.Close()
	m, _ := mutex.New(b, "tls")
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock over TLS: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock over TLS: %v", err)
	}

	bad := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: wrong, MinVersion: tls.VersionTLS12}})
	defer bad.Close()
	bb := backend.New(bad)
	defer bb.Close()
	mb, _ := mutex.New(bb, "tls")
	ok, err := mb.TryLock(ctx)
	var unknown x509.UnknownAuthorityError
	if ok || !errors.As(err, &unknown) {
		t.Fatalf("TryLock trusting the wrong CA = (%v, %v); want a certificate error", ok, err)
	}
}
