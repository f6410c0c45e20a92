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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/backend"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/mutex"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// ACLRule is the Redis ACL rule documented in README.md for a user that may
// run redisync and nothing else, with the default prefix.
const ACLRule = "resetkeys ~redisync:* resetchannels &redisync:* -@all " +
	"+ping +hello +auth +client|setname +evalsha +eval " +
	"+subscribe +unsubscribe +ssubscribe +sunsubscribe +publish +spublish " +
	"+time +get +set +del +exists +pexpire +pttl " +
	"+hget +hset +hdel +hincrby +hlen +hgetall +hmget +hexists " +
	"+zadd +zrem +zrange +zrangebyscore +zremrangebyscore +zscore +zcard +zrank +zcount +zincrby +zrevrange " +
	"+incr +incrby +decr +decrby +expire +pexpireat +type"

// TestACLUser runs the mutex as a user limited by ACLRule: it works, and the
// same user is refused a key outside the prefix (NOPERM, not retried).
func TestACLUser(t *testing.T) {
	n := redistest.StartNode(t, redistest.WithConfig("user locker on >s3cret "+ACLRule))
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr, Username: "locker", Password: "s3cret", ContextTimeoutEnabled: true})
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
