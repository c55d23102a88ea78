package tests

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// crashArgs make flushes frequent: 1s buckets, flushed 50ms after their
// last write, so kills land before, during and after flushes.
var crashArgs = []string{"--bucket-duration", "1s", "--idle-flush", "50ms", "--flush-interval", "20ms", "--small-file-bytes", "1KiB"}

const batchRows = 20

// ledger records what the server acknowledged.
type ledger struct {
	mu      sync.Mutex
	acked   map[int64]bool // batch ids
	nextID  int64
	crashes map[string]int
}

func (l *ledger) newBatch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	return l.nextID
}

func (l *ledger) ack(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[id] = true
}

// verify checks that every acknowledged batch is there exactly once and that
// no batch is there partly: a batch is one INSERT statement.
func (l *ledger) verify(t *testing.T, s *server) (rows int64) {
	t.Helper()
	ctx := context.Background()
	c := s.connect(ctx)
	r, err := c.Query(ctx, "SELECT batch, count(*), count(DISTINCT id) FROM ev GROUP BY batch")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for r.Next() {
		var b, n, distinct int64
		if err := r.Scan(&b, &n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != batchRows || distinct != batchRows {
			t.Errorf("batch %d has %d rows (%d distinct), want %d: partial or duplicated", b, n, distinct, batchRows)
		}
		seen[b] = true
		rows += n
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := 0
	for id := range l.acked {
		if !seen[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged batches lost", lost)
	}
	return rows
}

// write runs writers and a CHECKPOINT loop until stop is closed or the
// server dies.
func (l *ledger) write(s *server, stop chan struct{}, seed int64) *sync.WaitGroup {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.tryConnect(ctx)
			if err != nil {
				return
			}
			rnd := rand.New(rand.NewSource(seed + int64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := l.newBatch()
				var sb strings.Builder
				for j := 0; j < batchRows; j++ {
					if j > 0 {
						sb.WriteString(",")
					}
					// Rows over the last few seconds: several buckets per
					// batch, closed ones included (late data).
					fmt.Fprintf(&sb, "(now() - interval '%d milliseconds', %d, %d)", rnd.Intn(4000), id*100+int64(j), id)
				}
				if _, err := c.Exec(ctx, "INSERT INTO ev VALUES "+sb.String()); err != nil {
					return
				}
				l.ack(id)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := s.tryConnect(ctx)
		if err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
				return
			}
		}
	}()
	return &wg
}

// SIGKILL at random moments and at each step of a flush, round after round
// on one data directory: every acknowledged row is there exactly once.
func TestCrashRecoveryExactlyOnce(t *testing.T) {
	rounds := 30
	if v, err := strconv.Atoi(os.Getenv("TSDB_CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	modes := []struct{ name, faults string }{
		{"kill-while-writing", ""},
		{"crash-after-parquet", "flush.after-parquet=crash"},
		{"crash-after-commit", "flush.after-commit=crash"},
		{"crash-after-wal-drop", "flush.after-wal-drop=crash"},
		{"kill-during-checkpoint", ""},
	}
	dir := t.TempDir()
	l := &ledger{acked: map[int64]bool{}, crashes: map[string]int{}}
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < rounds; round++ {
		mode := modes[round%len(modes)]
		faults := mode.faults
		if faults != "" {
			// Let a few flushes pass first, so that some crashes hit the
			// start-up flush of replayed rows and others a flush under load.
			faults += fmt.Sprintf("@%d", rnd.Intn(4))
		}
		s, died := launch(t, dir, crashArgs, "TSDB_FAULTS="+faults)
		if died != nil {
			// Buckets replayed from the previous round were flushed at
			// start-up, and the fault fired there: a crash round too.
			if !strings.Contains(s.logs.String(), "fault: crashing at") {
				t.Fatalf("round %d: tsdb exited during start-up: %v\n%s", round, died, s.logs.String())
			}
			l.crashes[mode.name+"(at start-up)"]++
			continue
		}
		if round == 0 {
			c := s.connect(context.Background())
			if _, err := c.Exec(context.Background(), "CREATE TABLE ev (time TIMESTAMPTZ NOT NULL, id BIGINT, batch BIGINT)"); err != nil {
				t.Fatal(err)
			}
		}
		if mode.faults == "" {
			// With a fault armed the server may die any moment; the
			// next kill round and the last restart verify instead.
			l.verify(t, s)
		}
		stop := make(chan struct{})
		wg := l.write(s, stop, int64(round)*1000)
		switch {
		case mode.faults != "":
			// The fault kills the process at its first flush.
			select {
			case <-s.done:
				l.crashes[mode.name]++
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: fault %s never fired", round, mode.faults)
			}
		case mode.name == "kill-during-checkpoint":
			time.Sleep(time.Duration(100+rnd.Intn(300)) * time.Millisecond)
			go func() {
				if c, err := s.tryConnect(context.Background()); err == nil {
					c.Exec(context.Background(), "CHECKPOINT")
				}
			}()
			time.Sleep(time.Duration(rnd.Intn(15)) * time.Millisecond)
			s.kill9()
			l.crashes[mode.name]++
		default:
			time.Sleep(time.Duration(100+rnd.Intn(500)) * time.Millisecond)
			s.kill9()
			l.crashes[mode.name]++
		}
		close(stop)
		wg.Wait()
	}
	s := startServer(t, dir, crashArgs)
	rows := l.verify(t, s)
	t.Logf("%d crash rounds %v; %d batches (%d rows) acknowledged; %d rows after the last restart; 0 lost, 0 duplicated",
		rounds, l.crashes, len(l.acked), int64(len(l.acked))*batchRows, rows)
	if len(l.acked) < rounds {
		t.Fatalf("only %d batches acknowledged over %d rounds: the test exercised little", len(l.acked), rounds)
	}
	s.stop()
}
