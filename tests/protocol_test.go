package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawSession speaks the protocol message by message, for what drivers do
// not expose: Execute row limits and error recovery inside a pipeline.
func rawSession(t *testing.T, s *server) (*pgproto3.Frontend, func(...pgproto3.BackendMessage) []pgproto3.BackendMessage) {
	t.Helper()
	nc, err := net.Dial("tcp", s.pgAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb", "database": "tsdb"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	// readUntilReady collects messages up to ReadyForQuery.
	read := func(...pgproto3.BackendMessage) []pgproto3.BackendMessage {
		var out []pgproto3.BackendMessage
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				return out
			}
			// Receive reuses message structs: keep a description.
			out = append(out, m)
			switch x := m.(type) {
			case *pgproto3.DataRow:
				vals := make([][]byte, len(x.Values))
				for i, v := range x.Values {
					vals[i] = append([]byte(nil), v...)
				}
				out[len(out)-1] = &pgproto3.DataRow{Values: vals}
			case *pgproto3.CommandComplete:
				out[len(out)-1] = &pgproto3.CommandComplete{CommandTag: append([]byte(nil), x.CommandTag...)}
			case *pgproto3.ErrorResponse:
				e := *x
				out[len(out)-1] = &e
			}
		}
	}
	read()
	return fe, read
}

func kinds(msgs []pgproto3.BackendMessage) string {
	s := ""
	for _, m := range msgs {
		switch x := m.(type) {
		case *pgproto3.DataRow:
			s += fmt.Sprintf("D(%s) ", x.Values[0])
		case *pgproto3.CommandComplete:
			s += fmt.Sprintf("C(%s) ", x.CommandTag)
		case *pgproto3.ErrorResponse:
			s += fmt.Sprintf("E(%s) ", x.Code)
		default:
			s += fmt.Sprintf("%T ", m)[len("*pgproto3."):]
		}
	}
	return s
}

func TestExtendedProtocolRowLimitsAndErrors(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	fe, read := rawSession(t, s)
	// Portal suspension: Execute with a row limit, twice, then the rest.
	fe.Send(&pgproto3.Parse{Name: "q", Query: "SELECT i FROM range(0, 5) t(i) WHERE i >= $1 ORDER BY i", ParameterOIDs: []uint32{20}})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "q", Parameters: [][]byte{[]byte("0")}})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Execute{Portal: "p"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	want := "ParseComplete BindComplete D(0) D(1) PortalSuspended D(2) D(3) PortalSuspended D(4) C(SELECT 5) "
	if got := kinds(read()); got != want {
		t.Fatalf("row limits:\n got  %s\n want %s", got, want)
	}
	// An error inside a pipeline skips everything up to Sync.
	fe.Send(&pgproto3.Parse{Query: "SELECT * FROM nope"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Parse{Query: "SELECT 42"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := kinds(read()); got != "E(42P01) " {
		t.Fatalf("error pipeline: %s", got)
	}
	if got := kinds(read()); got != "ParseComplete BindComplete D(42) C(SELECT 1) " {
		t.Fatalf("after the error: %s", got)
	}
	// Describe of a statement reports inferred parameter types.
	fe.Send(&pgproto3.Parse{Name: "ins", Query: "SELECT $1::text, $2 + 1 FROM range(1) t WHERE now() > $3"})
	fe.Send(&pgproto3.Describe{ObjectType: 'S', Name: "ins"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	msgs := read()
	if len(msgs) < 2 {
		t.Fatalf("describe: %s", kinds(msgs))
	}
	pd, ok := msgs[1].(*pgproto3.ParameterDescription)
	// $1::text is text; the others have no typed context and default to
	// text (PostgreSQL would infer int4 for $2 + 1; tsdb lets the engine
	// cast the text value instead).
	if !ok || fmt.Sprint(pd.ParameterOIDs) != "[25 25 25]" {
		t.Fatalf("parameter description: %s", kinds(msgs))
	}
}

// COPY through the extended protocol runs its sub-protocol within
// Execute, as in PostgreSQL, and the session goes on afterwards.
func TestExtendedProtocolCopy(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	s.psql("CREATE TABLE m (time TIMESTAMPTZ NOT NULL, v BIGINT);")
	fe, read := rawSession(t, s)
	fe.Send(&pgproto3.Parse{Query: "COPY m FROM STDIN"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Flush{}) // ignored in copy-in mode, as in PostgreSQL
	fe.Send(&pgproto3.CopyData{Data: []byte("2026-01-01 00:00:00+00\t1\n2026-01-01 00:00:01+00\t2\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := kinds(read()); got != "ParseComplete BindComplete CopyInResponse C(COPY 2) " {
		t.Fatalf("COPY FROM STDIN: %s", got)
	}
	fe.Send(&pgproto3.Parse{Query: "COPY (SELECT v FROM m ORDER BY v) TO STDOUT"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := kinds(read()); got != "ParseComplete BindComplete CopyOutResponse CopyData CopyData CopyDone C(COPY 2) " {
		t.Fatalf("COPY TO STDOUT: %s", got)
	}
	fe.Send(&pgproto3.Parse{Query: "SELECT sum(v) FROM m"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	if got := kinds(read()); got != "ParseComplete BindComplete D(3) C(SELECT 1) " {
		t.Fatalf("after COPY: %s", got)
	}
}

// A portal executed with a row limit streams: the server holds one batch
// of the result, not all of it (JDBC's fetch size), so an endless result
// can be read a few rows at a time. Another statement in between reads
// the rest into memory first, and the portal then goes on where it was.
func TestPortalRowLimitStreams(t *testing.T) {
	s := startServer(t, t.TempDir(), nil)
	fe, read := rawSession(t, s)
	endless := "SELECT i FROM range(0, 1000000000000) t(i)"

	fe.Send(&pgproto3.Parse{Name: "endless", Query: endless})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "endless"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 3})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Close{ObjectType: 'P', Name: "p"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	want := "ParseComplete BindComplete D(0) D(1) D(2) PortalSuspended D(3) D(4) PortalSuspended CloseComplete "
	if got := kinds(read()); got != want {
		t.Fatalf("endless result:\n got  %s\n want %s", got, want)
	}

	// JDBC's pattern: in a transaction, a batch per Execute and Sync, with
	// other statements between the batches; for rows read as DuckDB's
	// chunks and for rows read as Go values (numeric).
	for _, query := range []string{
		"SELECT i FROM range(0, 10) t(i) ORDER BY i",
		"SELECT i::numeric(12, 0) FROM range(0, 10) t(i) ORDER BY i",
	} {
		fe.Send(&pgproto3.Query{String: "BEGIN"})
		fe.Flush()
		read()
		fe.Send(&pgproto3.Parse{Name: "ten", Query: query})
		fe.Send(&pgproto3.Bind{DestinationPortal: "a", PreparedStatement: "ten"})
		fe.Send(&pgproto3.Execute{Portal: "a", MaxRows: 3})
		fe.Send(&pgproto3.Sync{})
		fe.Flush()
		if got, want := kinds(read()), "ParseComplete BindComplete D(0) D(1) D(2) PortalSuspended "; got != want {
			t.Fatalf("%s: first batch:\n got  %s\n want %s", query, got, want)
		}
		fe.Send(&pgproto3.Query{String: "SELECT 42"})
		fe.Flush()
		if got, want := kinds(read()), "RowDescription D(42) C(SELECT 1) "; got != want {
			t.Fatalf("%s: simple query between batches:\n got  %s\n want %s", query, got, want)
		}
		fe.Send(&pgproto3.Parse{Query: "SELECT 7"})
		fe.Send(&pgproto3.Bind{})
		fe.Send(&pgproto3.Execute{})
		fe.Send(&pgproto3.Execute{Portal: "a", MaxRows: 4})
		fe.Send(&pgproto3.Sync{})
		fe.Send(&pgproto3.Execute{Portal: "a"})
		fe.Send(&pgproto3.Sync{})
		fe.Flush()
		if got, want := kinds(read()), "ParseComplete BindComplete D(7) C(SELECT 1) D(3) D(4) D(5) D(6) PortalSuspended "; got != want {
			t.Fatalf("%s: extended query between batches:\n got  %s\n want %s", query, got, want)
		}
		if got, want := kinds(read()), "D(7) D(8) D(9) C(SELECT 10) "; got != want {
			t.Fatalf("%s: last batch:\n got  %s\n want %s", query, got, want)
		}
		fe.Send(&pgproto3.Query{String: "COMMIT"})
		fe.Send(&pgproto3.Close{ObjectType: 'S', Name: "ten"})
		fe.Send(&pgproto3.Execute{Portal: "a"}) // the transaction's end closed it
		fe.Send(&pgproto3.Sync{})
		fe.Flush()
		read()
		if got, want := kinds(read()), "CloseComplete E(34000) "; got != want {
			t.Fatalf("%s: portal after COMMIT:\n got  %s\n want %s", query, got, want)
		}
	}

	// Binding the unnamed portal again closes the suspended one: its
	// endless result is not read into memory when the next statement
	// runs, and does not use up what the connection may hold for a cursor.
	// (Parse may run DuckDB, so "fortytwo" is parsed before.)
	fe.Send(&pgproto3.Query{String: "SET statement_timeout = 0; BEGIN"})
	fe.Send(&pgproto3.Parse{Name: "fortytwo", Query: "SELECT 42"})
	fe.Send(&pgproto3.Bind{PreparedStatement: "endless"})
	fe.Send(&pgproto3.Execute{MaxRows: 2})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Bind{PreparedStatement: "fortytwo"})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	read()
	if got, want := kinds(read()), "ParseComplete BindComplete D(0) D(1) PortalSuspended "; got != want {
		t.Fatalf("unnamed portal:\n got  %s\n want %s", got, want)
	}
	if got, want := kinds(read()), "BindComplete D(42) C(SELECT 1) "; got != want {
		t.Fatalf("unnamed portal bound again:\n got  %s\n want %s", got, want)
	}
	fe.Send(&pgproto3.Query{String: "DECLARE c CURSOR FOR SELECT i FROM range(0, 5) t(i); FETCH 2 FROM c; SELECT 7; FETCH ALL FROM c; COMMIT"})
	fe.Flush()
	if got, want := kinds(read()), "C(DECLARE CURSOR) RowDescription D(0) D(1) C(FETCH 2) RowDescription D(7) C(SELECT 1) RowDescription D(2) D(3) D(4) C(FETCH 3) C(COMMIT) "; got != want {
		t.Fatalf("a cursor held after the unnamed portal:\n got  %s\n want %s", got, want)
	}

	// statement_timeout bounds each Execute of a suspended portal: reading
	// the rest of the endless result ends with the timeout.
	fe.Send(&pgproto3.Query{String: "SET statement_timeout = '300ms'"})
	fe.Flush()
	read()
	fe.Send(&pgproto3.Bind{DestinationPortal: "e", PreparedStatement: "endless"})
	fe.Send(&pgproto3.Execute{Portal: "e", MaxRows: 1})
	fe.Send(&pgproto3.Execute{Portal: "e"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	var rows int
	var last pgproto3.BackendMessage
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
		if _, ok := m.(*pgproto3.DataRow); ok {
			rows++
		}
		last = m
	}
	if e, ok := last.(*pgproto3.ErrorResponse); !ok || e.Code != "57014" || rows < 2 {
		t.Fatalf("timeout of a later Execute: %d rows, then %#v", rows, last)
	}
	fe.Send(&pgproto3.Query{String: "SELECT 1"})
	fe.Flush()
	if got, want := kinds(read()), "RowDescription D(1) C(SELECT 1) "; got != want {
		t.Fatalf("after the timeout:\n got  %s\n want %s", got, want)
	}
}

// A statement answered by the direct newest-row path may build the files'
// kept rows through the engine (the first after a flush): a portal
// suspended on the same connection is read into memory first, as before
// any engine statement, and goes on with every row.
func TestPortalBesideNewestRowPath(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr})
	fe, read := rawSession(t, s)
	fe.Send(&pgproto3.Query{String: `CREATE TABLE lp (time timestamptz NOT NULL, host text, v bigint);
		INSERT INTO lp SELECT timestamptz '2026-01-01' + i * interval '1 minute', 'h' || (i % 3), i FROM generate_series(0, 99) i;
		CHECKPOINT`})
	fe.Flush()
	read()
	fe.Send(&pgproto3.Parse{Name: "many", Query: "SELECT i FROM range(0, 5000) t(i) ORDER BY i"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "many"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
	fe.Send(&pgproto3.Parse{Query: "SELECT DISTINCT ON (host) host, v FROM lp ORDER BY host, time DESC"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Execute{Portal: "p"})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	got := kinds(read())
	want := "ParseComplete BindComplete D(0) D(1) PortalSuspended ParseComplete BindComplete D(h0) D(h1) D(h2) C(SELECT 3) D(2) D(3) "
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "D(4998) D(4999) C(SELECT 5000) ") || strings.Count(got, "D(") != 5003 {
		t.Fatalf("a portal beside the newest-row path:\n got  %.300s … %s\n want %s…D(4999) C(SELECT 5000)", got, got[max(0, len(got)-100):], want)
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(metrics), "\ntsdb_planner_direct_newest_rows_total 1\n") {
		t.Fatal("the statement was not answered by the newest-row path")
	}
}
