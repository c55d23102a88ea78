package tests

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string, auth ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Telegraf-style line-protocol writes: tables are created on first write,
// values land durably and are queryable with SQL; bad lines are left out
// and named, as InfluxDB does (partial writes).
func TestLineProtocolWrites(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr})
	url := "http://" + httpAddr + "/write?db=tsdb&precision=s"
	code, body := post(t, url, "cpu,host=a,region=eu usage_user=12.5,usage_system=3i 1767225600\ncpu,host=b usage_user=7 1767225610\nmem,host=a free=1024i,ok=true 1767225600\n")
	if code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, body)
	}
	ctx := context.Background()
	c := s.connect(ctx)
	var rows []string
	r, err := c.Query(ctx, "SELECT host, region, usage_user, usage_system, time FROM cpu ORDER BY time")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		vals, _ := r.Values()
		rows = append(rows, fmt.Sprint(vals))
	}
	if want := "[a eu 12.5 3 2026-01-01 00:00:00 +0000 UTC] [b <nil> 7 <nil> 2026-01-01 00:00:10 +0000 UTC]"; strings.Join(rows, " ") != want {
		t.Fatalf("cpu rows: %v", rows)
	}
	var free int64
	var ok bool
	if err := c.QueryRow(ctx, "SELECT free, ok FROM mem").Scan(&free, &ok); err != nil || free != 1024 || !ok {
		t.Fatalf("mem: %v %v %v", free, ok, err)
	}
	// A new measurement's files are clustered by its host tag, though
	// another tag sorts first.
	if code, body := post(t, url, "disk,device=sda,host=a used=1 1767225600\n"); code != http.StatusNoContent {
		t.Fatalf("disk write: %d %s", code, body)
	}
	var options string
	if err := c.QueryRow(ctx, "SELECT reloptions[1] FROM pg_class WHERE relname = 'disk'").Scan(&options); err != nil || options != "cluster_by=host" {
		t.Fatalf("disk's reloptions: %q, %v", options, err)
	}
	// What InfluxDB clients ask before they write: /ping, and Telegraf's
	// CREATE DATABASE.
	resp, err := http.Get("http://" + httpAddr + "/ping")
	if err != nil || resp.StatusCode != http.StatusNoContent || resp.Header.Get("X-Influxdb-Version") == "" {
		t.Fatalf("/ping: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, body := post(t, "http://"+httpAddr+"/query?q=CREATE+DATABASE+%22telegraf%22", ""); code != http.StatusOK || !strings.Contains(body, `"statement_id":0`) {
		t.Fatalf("CREATE DATABASE: %d %s", code, body)
	}
	if code, body := post(t, "http://"+httpAddr+"/query?q=SELECT+*+FROM+cpu", ""); code != http.StatusBadRequest || !strings.Contains(body, "SQL") {
		t.Fatalf("InfluxQL SELECT: %d %s", code, body)
	}
	// A bad second line: as InfluxDB, the good lines are written and the
	// answer is 400 naming the bad one, in 1.x's shape.
	code, body = post(t, url, "cpu,host=c usage_user=1 1767225620\ncpu,host=c usage_user=oops 1767225621\n")
	if code != http.StatusBadRequest || !strings.Contains(body, `"error":"partial write: unable to parse 'cpu,host=c usage_user=oops 1767225621'`) ||
		!strings.Contains(body, "line 2") || !strings.Contains(body, "dropped=1") {
		t.Fatalf("bad line: %d %s", code, body)
	}
	// A value of another type than its column: that point is left out;
	// the others land, with the table and columns they bring.
	code, body = post(t, url, "cpu,host=c,zone=z usage_user=1,fresh=2 1767225630\ncpu,host=c usage_system=\"text\" 1767225631\nnewtable v=1 1767225631\n")
	if code != http.StatusBadRequest || !strings.Contains(body, "usage_system") || !strings.Contains(body, "line 2") || !strings.Contains(body, "partial write") {
		t.Fatalf("type conflict: %d %s", code, body)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM information_schema.columns WHERE column_name IN ('zone', 'fresh') OR table_name = 'newtable'"); n != 4 {
		t.Fatalf("the written points' columns and table: %d of 4 (zone, fresh, newtable's time and v)", n)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM cpu").Scan(&n); err != nil || n != 4 {
		t.Fatalf("cpu has %d rows, want 4 (the good lines of both requests): %v", n, err)
	}
	if _, err := c.Exec(ctx, "DELETE FROM cpu WHERE host = 'c'"); err != nil {
		t.Fatal(err)
	}
	// Every line bad: nothing written, 400 with the reasons, no "partial".
	code, body = post(t, url, "cpu usage_user=\n")
	if code != http.StatusBadRequest || strings.Contains(body, "partial") || !strings.Contains(body, "unable to parse") {
		t.Fatalf("all lines bad: %d %s", code, body)
	}
	// The 2.x endpoint answers in 2.x's shape.
	code, body = post(t, "http://"+httpAddr+"/api/v2/write?bucket=tsdb&precision=s", "cpu,host=e usage_user=1 1767225660\ncpu,host=e usage_user=oops\n")
	if code != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid"`) || !strings.Contains(body, "partial write error (1 written)") {
		t.Fatalf("v2 partial write: %d %s", code, body)
	}
	// time is the time column: a tag or field of that name is refused as
	// InfluxDB refuses it (it made a request fail with 500 on a new
	// table, and read as a row of NULLs on an existing one).
	code, body = post(t, url, "newm,host=a time=5,v=1 1767225600\nnewm,host=a v=2 1767225600\ncpu,time=x usage_user=1 1767225600\n")
	if code != http.StatusBadRequest || !strings.Contains(body, `invalid field name: input field \"time\" on measurement \"newm\" is invalid`) ||
		!strings.Contains(body, `invalid tag key: input tag \"time\"`) || !strings.Contains(body, "dropped=2") {
		t.Fatalf("keys named time: %d %s", code, body)
	}
	if n := queryInt(t, c, "SELECT count(*) FROM newm WHERE v = 2"); n != 1 {
		t.Fatalf("newm's good point: %d rows", n)
	}
	// A newline inside a string field belongs to it (Telegraf writes log
	// lines unescaped); a quote in a tag value is a character.
	if code, body := post(t, url, "logs,host=a\"b msg=\"first\nsecond\" 1767225600\nlogs,host=c msg=\"x\" 1767225601\n"); code != http.StatusNoContent {
		t.Fatalf("newline in a string field: %d %s", code, body)
	}
	var msgs string
	if err := c.QueryRow(ctx, "SELECT string_agg(host || '=' || msg, '|' ORDER BY time) FROM logs").Scan(&msgs); err != nil || msgs != "a\"b=first\nsecond|c=x" {
		t.Fatalf("logs: %q %v", msgs, err)
	}
	// Precision in minutes and hours (/write), InfluxDB 3's endpoint and
	// its precision names.
	if code, body := post(t, "http://"+httpAddr+"/write?db=tsdb&precision=m", "cpu,host=m usage_user=1 29453761\n"); code != http.StatusNoContent {
		t.Fatalf("precision m: %d %s", code, body)
	}
	if code, body := post(t, "http://"+httpAddr+"/api/v3/write_lp?db=tsdb&precision=second", "cpu,host=v3 usage_user=1 1767225720\n"); code != http.StatusNoContent {
		t.Fatalf("v3 write_lp: %d %s", code, body)
	}
	var times string
	if err := c.QueryRow(ctx, "SELECT string_agg(host || '@' || to_char(time, 'HH24:MI:SS'), ' ' ORDER BY host) FROM cpu WHERE host IN ('e', 'm', 'v3')").Scan(&times); err != nil ||
		times != "e@00:01:00 m@00:01:00 v3@00:02:00" {
		t.Fatalf("rows by precision: %q %v", times, err)
	}
	if _, err := c.Exec(ctx, "DELETE FROM cpu WHERE host IN ('e', 'm', 'v3')"); err != nil {
		t.Fatal(err)
	}
	// New tags and fields become new nullable columns (schema evolution):
	// the old rows read NULL there, also after a flush and a restart.
	code, body = post(t, url, "cpu,host=c,dc=west usage_user=1,temp=40.5,note=\"hot\" 1767225630\n")
	if code != http.StatusNoContent {
		t.Fatalf("new tag and fields: %d %s", code, body)
	}
	check := func() {
		t.Helper()
		var got string
		q := "SELECT string_agg(host || ':' || coalesce(dc, '-') || ':' || coalesce(temp::text, '-') || ':' || coalesce(note, '-'), ' ' ORDER BY time) FROM cpu"
		if err := c.QueryRow(ctx, q).Scan(&got); err != nil || got != "a:-:-:- b:-:-:- c:west:40.5:hot" {
			t.Fatalf("after schema evolution: %q %v", got, err)
		}
	}
	check()
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	s.stop()
	s = startServer(t, s.dataDir, []string{"--http-addr", httpAddr})
	c = s.connect(ctx)
	defer c.Close(ctx)
	check()
	// A gzip body, as Telegraf sends it; the size limit applies after
	// decompression.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("cpu,host=z usage_user=2 1767225650\n"))
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, url, &gz)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("gzip write: %d", resp.StatusCode)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM cpu WHERE host = 'z'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("gzip write landed %d rows, %v", n, err)
	}
	// A body cut short, then whole ones: the gzip readers the handler
	// keeps between requests start each body afresh.
	gzPost := func(body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var whole bytes.Buffer
	zw = gzip.NewWriter(&whole)
	zw.Write([]byte("cpu,host=y usage_user=3 1767225660\ncpu,host=y usage_user=4 1767225670\n"))
	zw.Close()
	if code := gzPost(whole.Bytes()[:whole.Len()-6]); code != http.StatusBadRequest {
		t.Fatalf("truncated gzip body: %d", code)
	}
	for range 3 {
		if code := gzPost(whole.Bytes()); code != http.StatusNoContent {
			t.Fatalf("gzip write after a bad one: %d", code)
		}
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM cpu WHERE host = 'y'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("gzip writes landed %d rows of host y, want its 2 points, %v", n, err)
	}
	// v2 endpoint, nanosecond precision by default.
	if code, body := post(t, "http://"+httpAddr+"/api/v2/write?bucket=tsdb", "cpu,host=d usage_user=1 1767225640000000000\n"); code != http.StatusNoContent {
		t.Fatalf("v2 write: %d %s", code, body)
	}
}

// With passwords configured, writes authenticate as a role that may write.
func TestLineProtocolAuth(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr}, "TSDB_ADMIN_PASSWORD=adminpw")
	ctx := context.Background()
	admin := s.connectAs(ctx, "tsdb", "adminpw")
	for _, q := range []string{"CREATE ROLE agent LOGIN PASSWORD 'a'", "GRANT pg_write_all_data TO agent", "CREATE ROLE viewer LOGIN PASSWORD 'v'", "GRANT pg_read_all_data TO viewer"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	url := "http://" + httpAddr + "/write?precision=s"
	line := "cpu,host=a v=1 1767225600\n"
	if code, _ := post(t, url, line); code != http.StatusUnauthorized {
		t.Fatalf("anonymous write: %d", code)
	}
	if code, _ := post(t, url, line, "agent", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", code)
	}
	if code, _ := post(t, url, line, "viewer", "v"); code != http.StatusForbidden {
		t.Fatalf("reader writing: %d", code)
	}
	// One policy for SQL and the line protocol: writing rows needs
	// pg_write_all_data, making tables and columns CREATE on schema
	// public (before, the line protocol let a writer create tables that
	// SQL let only the admin create).
	if code, body := post(t, url, line, "agent", "a"); code != http.StatusForbidden || !strings.Contains(body, "GRANT CREATE ON SCHEMA public") {
		t.Fatalf("writer creating a table: %d %s, want 403", code, body)
	}
	agent := s.connectAs(ctx, "agent", "a")
	if _, err := agent.Exec(ctx, "CREATE TABLE mine (time TIMESTAMPTZ NOT NULL)"); pgCode(err) != "42501" {
		t.Fatalf("writer CREATE TABLE: %v, want 42501", err)
	}
	if _, err := admin.Exec(ctx, "GRANT CREATE ON SCHEMA public TO agent"); err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, url, line, "agent", "a"); code != http.StatusNoContent {
		t.Fatalf("writer with CREATE: %d %s", code, body)
	}
	execAll(t, agent, "CREATE TABLE mine (time TIMESTAMPTZ NOT NULL)", "ALTER TABLE mine ADD COLUMN v BIGINT")
	if _, err := agent.Exec(ctx, "DROP TABLE mine"); pgCode(err) != "42501" {
		t.Fatalf("writer DROP TABLE: %v, want 42501", err)
	}
	if _, err := admin.Exec(ctx, "REVOKE CREATE ON SCHEMA public FROM agent"); err != nil {
		t.Fatal(err)
	}
	// Rows of existing tables and columns need no CREATE.
	if code, body := post(t, url, "cpu,host=b v=2 1767225601\n", "agent", "a"); code != http.StatusNoContent {
		t.Fatalf("writer into an existing table: %d %s", code, body)
	}
	if code, body := post(t, url, "cpu,host=b v=2,new=3 1767225602\n", "agent", "a"); code != http.StatusForbidden {
		t.Fatalf("writer adding a field after REVOKE: %d %s, want 403", code, body)
	}
	// Profiles are the admin's once passwords exist.
	get := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+"/debug/pprof/", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("", "") != http.StatusUnauthorized || get("agent", "a") != http.StatusUnauthorized || get("tsdb", "adminpw") != http.StatusOK {
		t.Fatal("/debug/pprof is not the admin's only")
	}
}

// A batch whose rows take more than --memory-limit once decoded (short
// lines of 8-byte times and floats), though its body is under the limit,
// gets 413 like a body over it: a 503 would make Telegraf retry a write
// that can never fit.
func TestLineProtocolBatchOverMemoryLimit(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr, "--memory-limit", "1MiB"})
	var body bytes.Buffer
	for i := 0; body.Len() < 1000<<10; i++ {
		fmt.Fprintf(&body, "big v=1 %d\n", 100000+i)
	}
	// Microseconds: points a nanosecond apart would be one point to tsdb
	// (its times are microseconds), and fold into far fewer rows.
	resp, err := http.Post("http://"+httpAddr+"/write?db=tsdb&precision=us", "text/plain", &body)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("batch over the memory limit: %d (Retry-After %q) %s, want 413", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'big'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 1 {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil || n != 0 {
			t.Fatalf("the refused batch left %d rows, %v", n, err)
		}
	}
}

// The body limit (--memory-limit) applies after gzip decompression: a
// small compressed body that inflates past it gets 413 and writes nothing.
func TestLineProtocolGzipBomb(t *testing.T) {
	httpAddr := freeAddr(t)
	s := startServer(t, t.TempDir(), []string{"--http-addr", httpAddr, "--memory-limit", "16MiB"})
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	line := []byte("bomb,host=a v=1 1767225600\n")
	for written := 0; written < 20<<20; written += len(line) {
		zw.Write(line)
	}
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/write?db=tsdb&precision=s", &gz)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip bomb: %d, want 413", resp.StatusCode)
	}
	ctx := context.Background()
	c := s.connect(ctx)
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'bomb'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused write created its table: %d, %v", n, err)
	}
}
