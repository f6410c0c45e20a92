package faults

import (
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// TestLatencyInterruptedWithStuckWriter: removing the latency toxic while
// its writer takes no data (its connection is closing, and its writer waits
// for the lock the removal holds) must not hang.
func TestLatencyInterruptedWithStuckWriter(t *testing.T) {
	in := make(chan *stream.StreamChunk, 1)
	out := make(chan *stream.StreamChunk) // nobody reads
	stub := toxics.NewToxicStub(in, out)
	go stub.Run(&toxics.ToxicWrapper{Toxic: &latency{Latency: 10}, Toxicity: 1})
	in <- &stream.StreamChunk{Data: []byte("+OK\r\n"), Timestamp: time.Now()}
	time.Sleep(50 * time.Millisecond) // past the delay: the chunk is being handed over
	done := make(chan bool, 1)
	go func() { done <- stub.InterruptToxic() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("interrupting the latency toxic hung while its writer takes nothing")
	}
}
