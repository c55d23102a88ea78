package ingest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Stop cancels every service and returns only after each has returned,
// also one busy in its round when Stop is called.
func TestServicesStopWaitsForAll(t *testing.T) {
	var rounds, finished atomic.Int32
	busy := periodic{every: time.Millisecond, fn: func(ctx context.Context) {
		rounds.Add(1)
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // cleaning up after cancellation
		finished.Add(1)
	}}
	var ticks atomic.Int32
	quick := periodic{every: time.Millisecond, fn: func(context.Context) { ticks.Add(1) }}
	never := periodic{every: -1, fn: func(context.Context) { t.Error("a service with a negative interval ran") }}
	g := startServices(busy, quick, never)
	for rounds.Load() == 0 || ticks.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	g.Stop()
	if finished.Load() != 1 || rounds.Load() != 1 {
		t.Fatalf("Stop returned with %d of %d rounds finished: a service was still in its round, or began one after Stop", finished.Load(), rounds.Load())
	}
	select {
	case <-g.done:
	default:
		t.Fatal("done not closed after Stop")
	}
	n := ticks.Load()
	time.Sleep(10 * time.Millisecond)
	if ticks.Load() != n {
		t.Fatal("a service ran after Stop")
	}
}
