package planner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"tsdb/internal/sqlerr"
)

// PRIMARY KEY and UNIQUE hold for every write path: a key repeated in
// one statement, or repeating one of a buffered row, of a flushed file or
// of the transaction's own rows, is refused with 23505 and nothing of the
// statement lands; NULLs do not repeat a UNIQUE key; another session's
// write waits for a transaction that wrote the table, and REPEATABLE READ
// refuses a write to a table changed since its snapshot.
func TestKeys(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE k (time TIMESTAMPTZ, id INT PRIMARY KEY, host TEXT, v INT, UNIQUE (host, time))", "tag:CREATE TABLE"},
		{0, "INSERT INTO k VALUES ('2026-01-01', 1, 'a', 10), ('2026-01-01', 2, 'b', 20)", "tag:INSERT 0 2"},
		{0, "CHECKPOINT", "tag:CHECKPOINT"},
		{0, "INSERT INTO k VALUES ('2026-01-02', 3, 'a', 30)", "tag:INSERT 0 1"},
		// Against a flushed row, a buffered row, and within the statement.
		{0, "INSERT INTO k VALUES ('2026-01-03', 1, 'c', 0)", "err:23505"},
		{0, "INSERT INTO k VALUES ('2026-01-03', 3, 'c', 0)", "err:23505"},
		{0, "INSERT INTO k VALUES ('2026-01-03', 4, 'c', 0), ('2026-01-04', 4, 'd', 0)", "err:23505"},
		{0, "INSERT INTO k VALUES ('2026-01-02', 5, 'a', 0)", "err:23505"},
		{0, "INSERT INTO k SELECT time + interval '10 days', id + 10, host, v FROM k", "tag:INSERT 0 3"},
		{0, "INSERT INTO k VALUES ('2026-01-05', NULL, 'e', 0)", "err:23502"},
		// NULL hosts never repeat the UNIQUE key.
		{0, "INSERT INTO k VALUES ('2026-01-05', 20, NULL, 0), ('2026-01-05', 21, NULL, 0)", "tag:INSERT 0 2"},
		{0, "SELECT count(*), count(DISTINCT id) FROM k", "8|8"},
		// A key freed by DELETE can be written again; a key column is
		// not updated.
		{0, "DELETE FROM k WHERE id = 1", "tag:DELETE 1"},
		{0, "INSERT INTO k VALUES ('2026-01-01', 1, 'a', 11)", "tag:INSERT 0 1"},
		{0, "UPDATE k SET v = v + 1 WHERE id = 1", "tag:UPDATE 1"},
		{0, "UPDATE k SET id = 100 WHERE id = 1", "err:0A000"},
		// A transaction's own rows count, and its lock makes another
		// session's write wait.
		{1, "BEGIN", "tag:BEGIN"},
		{1, "INSERT INTO k VALUES ('2026-02-01', 50, 'x', 0)", "tag:INSERT 0 1"},
		{1, "INSERT INTO k VALUES ('2026-02-02', 50, 'y', 0)", "err:23505"},
		{1, "ROLLBACK", "tag:ROLLBACK"},
		{1, "BEGIN", "tag:BEGIN"},
		{1, "INSERT INTO k VALUES ('2026-02-01', 50, 'x', 0)", "tag:INSERT 0 1"},
		{0, "SET statement_timeout = '300ms'", "tag:SET"},
		{0, "INSERT INTO k VALUES ('2026-02-01', 50, 'x', 0)", "err:57014"},
		{1, "COMMIT", "tag:COMMIT"},
		{0, "INSERT INTO k VALUES ('2026-02-01', 50, 'x', 0)", "err:23505"},
		{0, "RESET statement_timeout", "tag:RESET"},
		{1, "BEGIN ISOLATION LEVEL REPEATABLE READ", "tag:BEGIN"},
		{1, "SELECT count(*) FROM k", "9"},
		{0, "INSERT INTO k VALUES ('2026-03-01', 60, 'z', 0)", "tag:INSERT 0 1"},
		{1, "INSERT INTO k VALUES ('2026-03-01', 60, 'z', 0)", "err:40001"},
		{1, "ROLLBACK", "tag:ROLLBACK"},
		// The catalogs show the keys.
		{0, "SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = 'k'::regclass ORDER BY 1", "k_host_time_key|u|[3 1];k_pkey|p|[2]"},
		{0, "SELECT constraint_name, column_name, ordinal_position FROM information_schema.key_column_usage WHERE table_name = 'k' ORDER BY 1, 3",
			"k_host_time_key|host|1;k_host_time_key|time|2;k_pkey|id|1"},
		{0, "SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'k'::regclass AND attnum = 2", "id|true"},
	})
}

// CREATE TABLE reads keys as PostgreSQL does, names them as it does, and
// refuses what tsdb does not keep.
func TestKeyDefinitions(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE a (time TIMESTAMPTZ, x INT UNIQUE, y INT UNIQUE, CONSTRAINT mine UNIQUE (x, y), UNIQUE (x))", "tag:CREATE TABLE"},
		{0, "SELECT conname FROM pg_constraint ORDER BY 1", "a_x_key;a_x_key1;a_y_key;mine"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT PRIMARY KEY, PRIMARY KEY (time))", "err:42P16"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT, PRIMARY KEY (z))", "err:42703"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT, CONSTRAINT a PRIMARY KEY (x))", "err:42P07"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT, UNIQUE NULLS NOT DISTINCT (x))", "err:0A000"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT, CHECK (x > 0))", "err:0A000"},
		{0, "CREATE TABLE b (time TIMESTAMPTZ, x INT PRIMARY KEY DEFERRABLE)", "err:0A000"},
		{0, "ALTER TABLE a ADD COLUMN z INT UNIQUE", "err:0A000"},
	})
}

// COPY into a table with keys checks its rows against each other and the
// table; a refused COPY writes nothing.
func TestCopyKeys(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE c (time TIMESTAMPTZ, id INT PRIMARY KEY)")
	e.must("INSERT INTO c VALUES ('2026-01-01', 1)")
	for _, tc := range []struct {
		data string
		code string
	}{
		{"2026-01-01\t2\n2026-01-01\t3\n", ""},
		{"2026-01-01\t4\n2026-01-01\t4\n", sqlerr.UniqueViolation},
		{"2026-01-01\t5\n2026-01-01\t1\n", sqlerr.UniqueViolation},
	} {
		err := copyChunks(t, e, "COPY c FROM STDIN", []byte(tc.data), 7)
		var se *sqlerr.Error
		switch {
		case tc.code == "" && err != nil:
			t.Fatalf("COPY %q: %v", tc.data, err)
		case tc.code != "" && (!errors.As(err, &se) || se.Code != tc.code):
			t.Fatalf("COPY %q: got %v, want %s", tc.data, err, tc.code)
		}
	}
	if got := e.rows("SELECT string_agg(CAST(id AS TEXT), ',' ORDER BY id) FROM c"); got != "1,2,3" {
		t.Fatalf("rows: %s", got)
	}
}

// INSERT … ON CONFLICT DO NOTHING leaves out, as PostgreSQL does row
// after row, each row whose key the table or an earlier row of the
// statement has; its target must name a key. DO UPDATE is refused.
func TestOnConflictDoNothing(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE oc (time TIMESTAMPTZ, id INT PRIMARY KEY, v TEXT, UNIQUE (v, time))", "tag:CREATE TABLE"},
		{0, "INSERT INTO oc VALUES ('2026-01-01', 1, 'a'), ('2026-01-01', 2, 'b')", "tag:INSERT 0 2"},
		{0, "CHECKPOINT", "tag:CHECKPOINT"},
		{0, "INSERT INTO oc VALUES ('2026-01-02', 2, 'x'), ('2026-01-02', 3, 'c'), ('2026-01-02', 3, 'd'), ('2026-01-02', 4, 'e') ON CONFLICT (id) DO NOTHING", "tag:INSERT 0 2"},
		{0, "INSERT INTO oc VALUES ('2026-01-03', 1, 'y') ON CONFLICT ON CONSTRAINT oc_pkey DO NOTHING", "tag:INSERT 0 0"},
		// A row left out for one key; another key still refuses.
		{0, "INSERT INTO oc VALUES ('2026-01-02', 9, 'c') ON CONFLICT (id) DO NOTHING", "err:23505"},
		{0, "INSERT INTO oc VALUES ('2026-01-02', 9, 'c') ON CONFLICT (time, v) DO NOTHING", "tag:INSERT 0 0"},
		{0, "INSERT INTO oc VALUES ('2026-01-05', 5, 'f') ON CONFLICT DO NOTHING", "err:0A000"},
		{0, "INSERT INTO oc VALUES ('2026-01-05', 5, 'f') ON CONFLICT (v) DO NOTHING", "err:42P10"},
		{0, "INSERT INTO oc VALUES ('2026-01-05', 5, 'f') ON CONFLICT ON CONSTRAINT nope DO NOTHING", "err:42704"},
		// The transaction's own rows count.
		{0, "BEGIN", "tag:BEGIN"},
		{0, "INSERT INTO oc VALUES ('2026-01-06', 6, 'g')", "tag:INSERT 0 1"},
		{0, "INSERT INTO oc SELECT time + interval '1 day', id + 3, v || '2' FROM oc ON CONFLICT (id) DO NOTHING", "tag:INSERT 0 3"},
		{0, "COMMIT", "tag:COMMIT"},
		{0, "SELECT string_agg(id || v, ',' ORDER BY id) FROM oc", "1a,2b,3c,4e,5b2,6g,7e2,9g2"},
	})
}

// INSERT … ON CONFLICT (key) DO UPDATE updates the rows whose key a new
// row has, by its SET list and WHERE (the row as it is, and excluded, the
// new row), and inserts the others: together, at once or at COMMIT.
func TestOnConflictDoUpdate(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE up (time TIMESTAMPTZ, id INT PRIMARY KEY, v TEXT, n INT)", "tag:CREATE TABLE"},
		{0, "INSERT INTO up VALUES ('2026-01-01', 1, 'a', 1), ('2026-01-01', 2, 'b', 1)", "tag:INSERT 0 2"},
		{0, "CHECKPOINT", "tag:CHECKPOINT"},
		{0, "INSERT INTO up AS u VALUES ('2026-01-02', 2, 'x', 5), ('2026-01-02', 3, 'c', 1) ON CONFLICT (id) DO UPDATE SET v = excluded.v, n = u.n + excluded.n", "tag:INSERT 0 2"},
		{0, "SELECT string_agg(id || v || n || date_part('day', time), ',' ORDER BY id) FROM up", "1a11,2x61,3c12"},
		{0, "INSERT INTO up VALUES ('2026-01-02', 1, 'y', 7) ON CONFLICT (id) DO UPDATE SET v = excluded.v WHERE up.n > 5", "tag:INSERT 0 0"},
		{0, "INSERT INTO up VALUES ('2026-01-02', 2, 'z', 7) ON CONFLICT (id) DO UPDATE SET v = excluded.v WHERE up.n > 5", "tag:INSERT 0 1"},
		{0, "INSERT INTO up VALUES ('2026-01-02', 4, 'q', 7), ('2026-01-02', 4, 'r', 7) ON CONFLICT (id) DO UPDATE SET v = excluded.v", "err:21000"},
		{0, "INSERT INTO up VALUES ('2026-01-02', 4, 'q', 7) ON CONFLICT DO UPDATE SET v = excluded.v", "err:42601"},
		{0, "INSERT INTO up VALUES ('2026-01-02', 4, 'q', 7) ON CONFLICT (id) DO UPDATE SET id = 9", "err:0A000"},
		{0, "SELECT string_agg(id || v || n, ',' ORDER BY id) FROM up", "1a1,2z6,3c1"},
		// Another session waits for the transaction's table, and sees its
		// changes only after COMMIT.
		{1, "BEGIN", "tag:BEGIN"},
		{1, "INSERT INTO up VALUES ('2026-01-03', 5, 'p', 1), ('2026-01-03', 1, 'aa', 2) ON CONFLICT ON CONSTRAINT up_pkey DO UPDATE SET v = excluded.v, n = excluded.n", "tag:INSERT 0 2"},
		{1, "SELECT string_agg(id || v || n, ',' ORDER BY id) FROM up", "1aa2,2z6,3c1,5p1"},
		{0, "SELECT string_agg(id || v || n, ',' ORDER BY id) FROM up", "1a1,2z6,3c1"},
		{1, "COMMIT", "tag:COMMIT"},
		{0, "SELECT string_agg(id || v || n, ',' ORDER BY id) FROM up", "1aa2,2z6,3c1,5p1"},
		{0, "INSERT INTO up SELECT time, id, v || '!', n FROM up ON CONFLICT (id) DO UPDATE SET v = excluded.v", "tag:INSERT 0 4"},
		{0, "SELECT string_agg(id || v, ',' ORDER BY id), count(*) FROM up", "1aa!,2z!,3c!,5p!|4"},
	})
}

// Writers racing to insert the same keys: each key lands once, every
// other attempt gets 23505, and nothing else goes wrong — in autocommit
// and in transaction blocks alike.
func TestKeysUnderConcurrentInserts(t *testing.T) {
	e := newEnv(t)
	e.must("CREATE TABLE kc (time TIMESTAMPTZ, id INT PRIMARY KEY, who TEXT)")
	const writers, keys = 4, 30
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers*keys)
	landed := make([]int, writers)
	for w := range writers {
		s, err := e.p.NewSession(ctx, "tsdb")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for k := range keys {
				q := fmt.Sprintf("INSERT INTO kc VALUES ('2026-01-01', %d, 'w%d')", k, w)
				if w%2 == 1 {
					// Odd writers insert inside a block, which holds the
					// table's lock until COMMIT.
					q = "BEGIN; " + q + "; COMMIT"
				}
				err := s.Execute(ctx, q, func(*Result) error { return nil })
				switch {
				case err == nil:
					landed[w]++
				case sqlerr.Code(err) == sqlerr.UniqueViolation:
					if w%2 == 1 {
						_ = s.Execute(ctx, "ROLLBACK", func(*Result) error { return nil })
					}
				default:
					errs <- fmt.Errorf("writer %d key %d: %w", w, k, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, n := range landed {
		total += n
	}
	if total != keys {
		t.Errorf("%d inserts succeeded, want %d (one per key)", total, keys)
	}
	if got := e.rows("SELECT count(*), count(DISTINCT id) FROM kc"); got != fmt.Sprintf("%d|%d", keys, keys) {
		t.Errorf("table holds %s rows|keys, want %d of each", got, keys)
	}
}
