package background

import (
	"testing"
	"time"
)

func TestWaitWaitsForEveryRepetition(t *testing.T) {
	first, second := Start(), Start()
	waited := make(chan struct{})
	go func() {
		Wait()
		close(waited)
	}()
	first()
	first() // a second call changes nothing
	select {
	case <-waited:
		t.Fatal("Wait returned with a repetition still under way")
	case <-time.After(50 * time.Millisecond):
	}
	second()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return once every repetition had ended")
	}
	Wait() // none under way: returns at once
}
