// Package faults injects network faults between a test's clients and its
// redis-server processes, with in-process TCP proxies (toxiproxy): latency,
// a blackholed link, and a link that is cut and healed.
package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

var (
	serverOnce sync.Once
	server     *toxiproxy.ApiServer
	seq        struct {
		sync.Mutex
		n int
	}
)

func apiServer() *toxiproxy.ApiServer {
	serverOnce.Do(func() {
		// Toxics log through the global logger, whatever logger the server
		// is given.
		zerolog.SetGlobalLevel(zerolog.Disabled)
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	})
	return server
}

// A Proxy forwards a loopback port to a server and can degrade the link.
type Proxy struct {
	// Addr is where clients connect instead of the server.
	Addr string
	p    *toxiproxy.Proxy
}

// NewProxy starts a proxy to upstream ("host:port") on a free loopback port;
// it is stopped when the test ends.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	seq.Lock()
	seq.n++
	name := fmt.Sprintf("proxy-%d", seq.n)
	seq.Unlock()
	p := toxiproxy.NewProxy(apiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("faults: start proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{Addr: p.Listen, p: p}
}

func (p *Proxy) add(t testing.TB, name, typ, stream, attrs string) {
	t.Helper()
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1.0,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatalf("faults: add %s toxic: %v", typ, err)
	}
}

// Latency delays everything the server sends back by d.
func (p *Proxy) Latency(t testing.TB, d time.Duration) {
	p.add(t, "latency", "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":0}`, d.Milliseconds()))
}

// Blackhole drops everything in both directions without closing the
// connections, as a dead network path does.
func (p *Proxy) Blackhole(t testing.TB) {
	p.add(t, "hole-up", "timeout", "upstream", `{"timeout":0}`)
	p.add(t, "hole-down", "timeout", "downstream", `{"timeout":0}`)
}

// Heal removes every toxic. Connections that went through a blackhole are
// closed (their byte streams are broken) and are dialled again.
func (p *Proxy) Heal(t testing.TB) {
	t.Helper()
	p.p.Toxics.ResetToxics(context.Background())
}

// Reset makes the server side of every connection through the proxy send a
// TCP reset as soon as data arrives, as a crashed middlebox does. Heal ends
// it.
func (p *Proxy) Reset(t testing.TB) {
	p.add(t, "reset", "reset_peer", "upstream", `{"timeout":0}`)
}
