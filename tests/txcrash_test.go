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

	"github.com/jackc/pgx/v5"
)

// txRows is how many rows a transaction inserts into each of its tables.
const txRows = 10

// txLedger records what the server acknowledged of multi-statement
// transactions, and what it may have done of the ones a kill cut short.
type txLedger struct {
	mu     sync.Mutex
	nextID int64
	// inserted are transactions whose COMMIT was acknowledged; tried are
	// all that sent COMMIT (some may have committed unacknowledged).
	inserted, tried map[int64]bool
	// deleted: a committed transaction deleted that one's rows; mayDelete:
	// some transaction that sent COMMIT tried to.
	deleted, mayDelete map[int64]bool
	// bumps and mayBump count committed and tried updates of a
	// transaction's rows.
	bumps, mayBump map[int64]int
}

// txWriter runs transactions until stop or the server dies: each inserts
// txRows rows tagged with its ID into two tables, updates every row of the
// writer's previous transaction (step + 1) and deletes every row of one
// before that from both tables — several statements, two tables, rows in
// files and buffered.
func (l *txLedger) txWriter(s *server, stop chan struct{}, seed int64) {
	ctx := context.Background()
	c, err := s.tryConnect(ctx)
	if err != nil {
		return
	}
	rnd := rand.New(rand.NewSource(seed))
	var mine []int64 // this writer's committed transactions, oldest first
	for {
		select {
		case <-stop:
			return
		default:
		}
		l.mu.Lock()
		l.nextID++
		id := l.nextID
		l.mu.Unlock()
		var bump, del int64
		if n := len(mine); n > 0 {
			bump = mine[n-1]
		}
		if n := len(mine); n > 3 && rnd.Intn(2) == 0 {
			del = mine[0]
		}
		var sb strings.Builder
		for j := 0; j < txRows; j++ {
			if j > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, "(now() - interval '%d milliseconds', %d, 1)", rnd.Intn(3000), id)
		}
		stmts := []string{
			"INSERT INTO acct (time, tx, step) VALUES " + sb.String(),
			"INSERT INTO mirror (time, tx, step) SELECT time, tx, step FROM acct WHERE tx = " + strconv.FormatInt(id, 10),
		}
		if bump != 0 {
			stmts = append(stmts, fmt.Sprintf("UPDATE acct SET step = step + 1 WHERE tx = %d", bump),
				fmt.Sprintf("UPDATE mirror SET step = step + 1 WHERE tx = %d", bump))
		}
		if del != 0 {
			stmts = append(stmts, fmt.Sprintf("DELETE FROM acct WHERE tx = %d", del), fmt.Sprintf("DELETE FROM mirror WHERE tx = %d", del))
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			return
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				tx.Rollback(ctx)
				if pgCode(err) == "40P01" || pgCode(err) == "40001" {
					continue
				}
				return
			}
		}
		l.mu.Lock()
		l.tried[id] = true
		if bump != 0 {
			l.mayBump[bump]++
		}
		if del != 0 {
			l.mayDelete[del] = true
		}
		l.mu.Unlock()
		if err := tx.Commit(ctx); err != nil {
			return
		}
		l.mu.Lock()
		l.inserted[id] = true
		if bump != 0 {
			l.bumps[bump]++
		}
		if del != 0 {
			l.deleted[del] = true
			mine = mine[1:]
		}
		l.mu.Unlock()
		mine = append(mine, id)
	}
}

// verify checks that every transaction is there whole or not at all, and
// that the acknowledged ones are.
func (l *txLedger) verify(t *testing.T, s *server) (present, partial int) {
	t.Helper()
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	type state struct{ n, steps, minStep int64 }
	read := func(table string) map[int64]state {
		rows, err := c.Query(ctx, "SELECT tx, count(*), count(DISTINCT step), min(step) FROM "+table+" GROUP BY tx")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
			tx int64
			st state
		}, error) {
			var v struct {
				tx int64
				st state
			}
			err := r.Scan(&v.tx, &v.st.n, &v.st.steps, &v.st.minStep)
			return v, err
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]state{}
		for _, v := range out {
			m[v.tx] = v.st
		}
		return m
	}
	acct, mirror := read("acct"), read("mirror")
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, a := range acct {
		m := mirror[id]
		switch {
		case a.n != txRows || m.n != txRows:
			partial++
			t.Errorf("transaction %d: %d rows in acct, %d in mirror, want %d in both: partly applied", id, a.n, m.n, txRows)
		case a.steps != 1 || m.steps != 1 || a.minStep != m.minStep:
			partial++
			t.Errorf("transaction %d: steps %d/%d (min %d/%d): an update partly applied", id, a.steps, m.steps, a.minStep, m.minStep)
		case !l.tried[id]:
			t.Errorf("transaction %d is there but never sent COMMIT", id)
		case l.deleted[id]:
			t.Errorf("transaction %d is there but a committed transaction deleted it", id)
		case a.minStep < int64(1+l.bumps[id]) || a.minStep > int64(1+l.mayBump[id]):
			t.Errorf("transaction %d: step %d, want %d to %d", id, a.minStep, 1+l.bumps[id], 1+l.mayBump[id])
		default:
			present++
		}
	}
	for id := range mirror {
		if _, ok := acct[id]; !ok {
			partial++
			t.Errorf("transaction %d is in mirror only", id)
		}
	}
	for id := range l.inserted {
		if _, ok := acct[id]; !ok && !l.mayDelete[id] {
			t.Errorf("acknowledged transaction %d is lost", id)
		}
	}
	return present, partial
}

// SIGKILL while clients run multi-statement transactions over two tables
// (inserts, updates and deletes of rows in files and in the buffer), round
// after round: after every restart each transaction is there whole or not
// at all, and every acknowledged COMMIT is there.
func TestCrashDuringTransactions(t *testing.T) {
	rounds := 8
	if v, err := strconv.Atoi(os.Getenv("TSDB_CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = max(v/4, 2)
	}
	dir := t.TempDir()
	l := &txLedger{inserted: map[int64]bool{}, tried: map[int64]bool{}, deleted: map[int64]bool{}, mayDelete: map[int64]bool{},
		bumps: map[int64]int{}, mayBump: map[int64]int{}}
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < rounds; round++ {
		s := startServer(t, dir, crashArgs)
		if round == 0 {
			s.psql("CREATE TABLE acct (time TIMESTAMPTZ NOT NULL, tx BIGINT, step BIGINT); CREATE TABLE mirror (time TIMESTAMPTZ NOT NULL, tx BIGINT, step BIGINT)")
		} else {
			l.verify(t, s)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Go(func() { l.txWriter(s, stop, int64(round*10+w)) })
		}
		wg.Go(func() {
			c, err := s.tryConnect(context.Background())
			if err != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if _, err := c.Exec(context.Background(), "CHECKPOINT"); err != nil {
					return
				}
			}
		})
		time.Sleep(time.Duration(300+rnd.Intn(700)) * time.Millisecond)
		s.kill9()
		close(stop)
		wg.Wait()
	}
	s := startServer(t, dir, crashArgs)
	present, partial := l.verify(t, s)
	t.Logf("%d kill rounds; %d transactions committed and acknowledged (%d sent COMMIT); %d present after the last restart, %d partial",
		rounds, len(l.inserted), len(l.tried), present, partial)
	if len(l.inserted) < rounds*3 {
		t.Fatalf("only %d transactions committed over %d rounds: the test exercised little", len(l.inserted), rounds)
	}
	s.stop()
}
