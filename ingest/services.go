package ingest

import (
	"context"
	"sync"
	"time"
)

// A service is one of the store's background jobs: the flusher, the
// compactor, retention, the refresher of other writers' commits and the
// scrubber. Run works until ctx ends and returns only when nothing it
// started is still running.
type service interface {
	Run(ctx context.Context)
}

// services owns the store's background jobs: it starts each in a
// goroutine of its own, and Stop cancels them all and waits for every one.
// Close and the tests' crash stop them the same way.
type services struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed once every service has returned
}

func startServices(list ...service) *services {
	ctx, cancel := context.WithCancel(context.Background())
	g := &services{cancel: cancel, done: make(chan struct{})}
	for _, svc := range list {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			svc.Run(ctx)
		}()
	}
	go func() {
		g.wg.Wait()
		close(g.done)
	}()
	return g
}

// Stop cancels every service and returns once all have returned.
func (g *services) Stop() {
	g.cancel()
	<-g.done
}

// periodic is a service that calls fn every interval (never, for a
// negative one): compaction, retention, refresh and scrubbing have this
// shape, so each is testable with a short interval.
type periodic struct {
	every time.Duration
	fn    func(ctx context.Context)
}

func (p periodic) Run(ctx context.Context) {
	if p.every < 0 {
		return
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Both may be ready at once, and select picks either.
		if ctx.Err() != nil {
			return
		}
		p.fn(ctx)
	}
}

// eachTable is a periodic job over every table tsdb maintains; a failure
// is logged with msg and the table is tried again the next round.
func (s *Store) eachTable(every time.Duration, msg string, fn func(ctx context.Context, table string) error) periodic {
	return periodic{every: every, fn: func(ctx context.Context) {
		for _, tbl := range s.Tables() {
			if ts, err := s.state(tbl.Name); err != nil || ts.rowChangeBlock() != nil {
				// Another writer's table of features tsdb cannot write,
				// or append-only: its own writer maintains it.
				continue
			}
			if err := fn(ctx, tbl.Name); err != nil && ctx.Err() == nil {
				s.logger.Warn(msg, "table", tbl.Name, "err", err)
			}
		}
	}}
}

// flusher is the service that flushes buckets (see flushLoop).
type flusher struct{ s *Store }

func (f flusher) Run(ctx context.Context) { f.s.flushLoop(ctx) }
