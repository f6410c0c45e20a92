// Package faults injects network faults between a test's clients and its
// redis-server processes, with in-process TCP proxies (toxiproxy): latency,
// a blackholed link, and a link that is cut and healed.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/faults), so that toxiproxy, and the prometheus and
// zerolog modules it brings along, stay out of the library's go.mod; the
// library's own packages and tests cannot import it. tests/chaos and
// tests/topology use it.
package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
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
	p.add(t, "latency", "redisync_latency", "downstream", fmt.Sprintf(`{"latency":%d}`, d.Milliseconds()))
}

// latency is toxiproxy's latency toxic without its deadlock: toxiproxy's
// own blocks on handing a delayed chunk to the link's writer, and when the
// client closes its connection (as go-redis does after a read timeout) at
// the moment the toxic is removed, the writer waits for the lock that the
// removal holds while the removal waits for the toxic: the proxy hangs for
// good (Shopify/toxiproxy#558). This one hands a chunk over while it can
// still be interrupted, and gives up on a writer that takes no data for a
// second: its connection is going away.
type latency struct {
	Latency int64 `json:"latency"` // milliseconds
}

func (*latency) GetBufferSize() int { return 1024 }

func (t *latency) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			sleep := time.Duration(t.Latency)*time.Millisecond - time.Since(c.Timestamp)
			select {
			case <-time.After(sleep):
				select {
				case stub.Output <- c:
				case <-stub.Interrupt:
					flush(stub, c)
					return
				}
			case <-stub.Interrupt:
				flush(stub, c) // without the rest of its delay
				return
			}
		}
	}
}

// flush hands c to the writer, unless the writer takes nothing for a
// second.
func flush(stub *toxics.ToxicStub, c *stream.StreamChunk) {
	_ = stub.WriteOutput(c, time.Second)
}

func init() { toxics.Register("redisync_latency", new(latency)) }

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
