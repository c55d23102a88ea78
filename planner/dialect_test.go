package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"tsdb/internal/schema"
)

// Date and time constants are read by PostgreSQL's rules in SELECT, in
// DML and in INSERT … SELECT, in the session's DateStyle order; what
// PostgreSQL refuses fails with its SQLSTATE.
func TestDateTimeInput(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT date 'January 8, 1999', date '01/02/03', '08-Jan-99'::date", "1999-01-08 00:00:00|2003-01-02 00:00:00|1999-01-08 00:00:00"},
		{0, "SELECT timestamptz 'Wed Feb 10 17:32:01 1997 PST', timestamptz '2026-01-01 00:00:10 +0000'", "1997-02-11 01:32:01|2026-01-01 00:00:10"},
		{0, "SELECT date '99-01-08'", "err:22008"},
		{0, "SELECT date 'garbage'", "err:22007"},
		{0, "SET DateStyle = 'ISO, DMY'", "tag:SET"},
		{0, "SHOW DateStyle", "ISO, DMY"},
		{0, "SELECT date '01/02/03'", "2003-02-01 00:00:00"},
		{0, "SET datestyle TO ymd", "tag:SET"},
		{0, "SELECT date '01/02/03'", "2001-02-03 00:00:00"},
		{0, "SET DateStyle = 'ISO, SQL'", "err:22023"},
		{0, "SET DateStyle = 'Postgres'", "tag:SET"},
		{0, "SHOW DateStyle", "Postgres, YMD"},
		{0, "SET DateStyle = 'German'", "tag:SET"},
		{0, "SHOW DateStyle", "German, DMY"},
		{0, "SET DateStyle = 'Postgres, MDY'", "tag:SET"},
		// Values the engine writes as text follow the style too (the wire
		// layer writes the others).
		{0, "SET TimeZone = 'PST8PDT'", "tag:SET"},
		{0, "SELECT '2001-02-03 04:05:06.5+00'::timestamptz::text, 'x' || date '1999-12-31', 'infinity'::timestamp::text",
			"Fri Feb 02 20:05:06.5 2001 PST|x12-31-1999|infinity"},
		{0, "SET DateStyle = 'SQL, DMY'", "tag:SET"},
		{0, "SELECT '1999-12-31 16:00:00'::timestamp::text", "31/12/1999 16:00:00"},
		{0, "SET TIME ZONE INTERVAL '-04:30' HOUR TO MINUTE", "tag:SET"},
		{0, "SHOW TimeZone", "<-04:30>+04:30"},
		{0, "SELECT '2001-07-03 04:05:06+00'::timestamptz::text", "02/07/2001 23:35:06 -04:30"},
		{0, "SET TIME ZONE INTERVAL '-04:30' HOUR", "tag:SET"},
		{0, "SHOW TimeZone", "<-04>+04"},
		{0, "SET TIME ZONE INTERVAL '1 day'", "err:22023"},
		{0, "RESET TimeZone", "tag:RESET"},
		{0, "RESET DateStyle", "tag:RESET"},
		{0, "SELECT host FROM m WHERE time >= timestamptz 'January 1 2026 00:00:20 UTC' ORDER BY host", "c;d"},
		{0, "DELETE FROM m WHERE time < timestamptz 'Jan 1 2026 00:00:10 UTC'", "tag:DELETE 1"},
		{0, "DELETE FROM m WHERE time < date '2026-13-01'", "err:22008"},
		{0, "SELECT host FROM m ORDER BY host", "b;c;d"},
		{0, "SELECT interval '1' year, interval '3' day", "{0 12 0}|{3 0 0}"},
		{0, "SELECT interval '1 day 2:03' hour to minute", "{1 0 7380000000}"},
		{0, "SELECT date_bin('1 month', time, timestamptz '2026-01-01') FROM m", "err:0A000"},
		{0, "SELECT date_bin('200000000 days'::interval, time, timestamptz '2026-01-01') FROM m", "err:22008"},
		{0, "SELECT extract(year FROM date '0044-03-15 BC'), date_trunc('century', date '1970-03-20')", "-44|1901-01-01 00:00:00"},
	})
}

// The difference of two timestamptz values is the microseconds between
// them as 24-hour days and a time, whatever the session's zone (the
// engine's own subtraction counts calendar days in the zone, an hour off
// across a daylight saving change); a BC timestamptz's year is negative.
func TestTimestamptzDifference(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SET TimeZone = 'PST8PDT'", "tag:SET"},
		{0, "SELECT timestamptz '1997-06-10 17:32:01-07' - timestamptz '1997-01-02'", "{159 0 59521000000}"},
		{0, "SELECT timestamptz '1997-01-02' - timestamptz '1997-06-10 17:32:01-07'", "{-159 0 -59521000000}"},
		{0, "SET TimeZone = 'Europe/Berlin'", "tag:SET"},
		{0, "SELECT time - timestamptz '2025-07-01 00:00:00+00' FROM m WHERE host = 'b'", "{184 0 10000000}"},
		{0, "SELECT max(time) - timestamptz '2025-07-01 00:00:00+00' FROM m", "{184 0 30000000}"},
		{0, "SELECT now() - timestamptz 'infinity'", "err:22008"},
		{0, "SELECT extract(year FROM timestamptz '0097-02-16 17:32:01+00 BC'), date_part('decade', timestamptz '0097-02-16 17:32:01+00 BC')", "-97|-10"},
		{0, "SELECT extract(epoch FROM interval '34 years 3 mons -2 days 05:06:07.123456')", "1080579967.123456"},
	})
}

// Functions written in SQL are called where a statement names them: a
// scalar one as its expression (arguments cast to the parameters' types,
// the result to the declared type; STRICT gives NULL for a NULL
// argument), a set-returning one in FROM as its rows and in a select list
// as a row per value; a parameter's name that is also a column of a table
// the body reads is the column, as in PostgreSQL.
func TestSQLFunctions(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE FUNCTION twice(x int) RETURNS bigint LANGUAGE sql STRICT AS 'SELECT x * 2'", "tag:CREATE FUNCTION"},
		{0, "SELECT twice(21), twice(NULL), twice('4')", "42|NULL|8"},
		{0, "SELECT host, twice(v::int) FROM m WHERE twice(v::int) > 4 ORDER BY host", "c|6;d|8"},
		{0, "CREATE FUNCTION hosts_over(v bigint) RETURNS TABLE (h text, n bigint) LANGUAGE sql AS $$ SELECT host, v FROM m WHERE v > $1 $$", "tag:CREATE FUNCTION"},
		{0, "SELECT h, n FROM hosts_over(2) ORDER BY h", "c|3;d|4"},
		{0, "SELECT host, val FROM hosts_over(3) AS x(host, val)", "d|4"},
		{0, "CREATE FUNCTION three(n int) RETURNS SETOF int LANGUAGE sql RETURN n", "tag:CREATE FUNCTION"},
		{0, "CREATE FUNCTION series(n int) RETURNS SETOF int LANGUAGE sql AS 'VALUES (1), ($1)'", "tag:CREATE FUNCTION"},
		{0, "SELECT series(5) ORDER BY 1", "1;5"},
		{0, "CREATE VIEW doubled AS SELECT host, twice(v::int) AS d FROM m", "tag:CREATE VIEW"},
		{0, "SELECT d FROM doubled WHERE host = 'd'", "8"},
		{0, "CREATE FUNCTION ret(a int DEFAULT 7) RETURNS int LANGUAGE plpgsql AS 'begin return a + 1; end'", "tag:CREATE FUNCTION"},
		{0, "SELECT ret(), ret(a := 1)", "8|2"},
		{0, "CREATE FUNCTION twice(x int) RETURNS bigint LANGUAGE sql AS 'SELECT x * 3'", "err:42723"},
		{0, "CREATE OR REPLACE FUNCTION twice(x int) RETURNS bigint LANGUAGE sql AS 'SELECT x * 3'", "tag:CREATE FUNCTION"},
		{0, "SELECT twice(2)", "6"},
		{0, "CREATE OR REPLACE FUNCTION twice(x int) RETURNS text LANGUAGE sql AS 'SELECT x'", "err:42P13"},
		{0, "CREATE FUNCTION bad(x int) RETURNS int LANGUAGE sql AS 'SELECT nosuch FROM m'", "err:42703"},
		{0, "CREATE FUNCTION loop(x int) RETURNS int LANGUAGE plpgsql AS 'declare y int; begin y := x; return y; end'", "err:0A000"},
		{0, "CREATE FUNCTION lower(text) RETURNS text LANGUAGE sql AS 'SELECT upper($1)'", "err:0A000"},
		{0, "CREATE FUNCTION to_char(text) RETURNS text LANGUAGE sql AS 'SELECT $1'", "err:0A000"},
		{0, "SELECT lower('AbC')", "abc"},
		{0, "CREATE FUNCTION selfcall(x int) RETURNS int LANGUAGE sql AS 'SELECT selfcall(x)'", "err:54001"},
		{0, "BEGIN", "tag:BEGIN"},
		{0, "CREATE FUNCTION intx() RETURNS int LANGUAGE sql AS 'SELECT 1'", "tag:CREATE FUNCTION"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
		{0, "SELECT intx()", "err:42883"},
		{0, "DROP FUNCTION twice(text)", "err:42883"},
		{0, "DROP FUNCTION twice(int), IF EXISTS nosuch", "err:42601"},
		{0, "DROP FUNCTION IF EXISTS twice(int), nosuch", "tag:DROP FUNCTION"},
		{0, "SELECT twice(1)", "err:42883"},
	})
}

// CREATE INDEX is checked and recorded, not built: its name is taken
// among the relations, DROP INDEX and DROP TABLE remove it, a UNIQUE one
// is refused, and queries answer as before.
func TestIndexesRecorded(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE INDEX m_host ON m (host, time DESC)", "tag:CREATE INDEX"},
		{0, "CREATE INDEX ON m ((v + 1)) WHERE v > 1", "tag:CREATE INDEX"},
		{0, "CREATE INDEX ON m ((v + 1))", "tag:CREATE INDEX"},
		{0, "CREATE INDEX m_host ON m (v)", "err:42P07"},
		{0, "CREATE INDEX IF NOT EXISTS m_host ON m (v)", "tag:CREATE INDEX"},
		{0, "CREATE INDEX m ON m (v)", "err:42P07"},
		{0, "CREATE INDEX bad ON m (nosuch)", "err:42703"},
		{0, "CREATE INDEX bad ON nosuch (v)", "err:42P01"},
		{0, "CREATE UNIQUE INDEX u ON m (v)", "err:0A000"},
		{0, "CREATE TABLE m_expr_idx (time timestamptz NOT NULL)", "err:42P07"},
		{0, "SELECT host FROM m WHERE host = 'c'", "c"},
		{0, "DROP INDEX m_host", "tag:DROP INDEX"},
		{0, "DROP INDEX m_host", "err:42P01"},
		{0, "DROP INDEX IF EXISTS m_host", "tag:DROP INDEX"},
		{0, "DROP INDEX m", "err:42809"},
		{0, "BEGIN", "tag:BEGIN"},
		{0, "CREATE INDEX inblock ON m (v)", "err:25001"},
		{0, "ROLLBACK", "tag:ROLLBACK"},
		{0, "CREATE TEMP TABLE tt (a int)", "tag:CREATE TABLE"},
		{0, "CREATE INDEX tti ON tt (a DESC)", "tag:CREATE INDEX"},
		{0, "CREATE INDEX tti ON m (v)", "err:42P07"},
		{0, "DROP INDEX tti", "tag:DROP INDEX"},
		{0, "DROP TABLE m", "tag:DROP TABLE"},
		{0, "CREATE TABLE m (time timestamptz NOT NULL, v bigint)", "tag:CREATE TABLE"},
		{0, "CREATE INDEX m_expr_idx ON m (v)", "tag:CREATE INDEX"},
	})
}

// Aggregates and windows as PostgreSQL analyses them: an aggregate's
// FILTER keeps its argument from being computed for the rows it drops; an
// aggregate with DISTINCT is ordered by its arguments only; a GROUPS frame
// needs an ORDER BY; ORDER BY may call a window of the WINDOW clause.
func TestAggregateAndWindowAnalysis(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT sum(10 / (v - 1)) FILTER (WHERE v > 1), count(*) FILTER (WHERE v > 1) FROM m", "18|3"},
		{0, "SELECT string_agg(DISTINCT host, ',' ORDER BY host) FROM m", "a,b,c,d"},
		{0, "SELECT string_agg(DISTINCT host, ',' ORDER BY v) FROM m", "err:42P10"},
		{0, "SELECT sum(v) OVER (PARTITION BY host GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM m", "err:42P20"},
		{0, "SELECT sum(v) OVER w FROM m WINDOW w AS (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW)", "err:42P20"},
		{0, "SELECT sum(v) OVER (w GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM m WINDOW w AS (ORDER BY v) ORDER BY 1", "1;3;5;7"},
		{0, "SELECT host FROM m WINDOW w AS (ORDER BY v DESC) ORDER BY rank() OVER w", "d;c;b;a"},
		{0, "SELECT lag(v, 1, 0.5) OVER (ORDER BY v) FROM m ORDER BY v", "0.5;1;2;3"},
		{0, "SELECT sum(v) OVER (ORDER BY v ROWS BETWEEN v PRECEDING AND CURRENT ROW) FROM m", "err:42P10"},
		{0, "SELECT sum(v) OVER (ORDER BY host RANGE BETWEEN '1 year'::interval PRECEDING AND CURRENT ROW) FROM m", "err:0A000"},
		{0, "SELECT sum(v) OVER (ORDER BY v RANGE BETWEEN '1 year'::interval PRECEDING AND CURRENT ROW) FROM m", "err:0A000"},
		{0, "SELECT sum(v) OVER (ORDER BY time RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM m", "err:0A000"},
		{0, "SELECT sum(v) OVER (ORDER BY time RANGE BETWEEN '15 seconds' PRECEDING AND CURRENT ROW) FROM m ORDER BY 1", "1;3;5;7"},
		// A bound past the key type's range reaches its end, as in_range does.
		{0, "SELECT last_value(x) OVER (ORDER BY x::smallint RANGE BETWEEN CURRENT ROW AND 2147450884 FOLLOWING) FROM generate_series(32765, 32766) x", "32766;32766"},
		{0, "SELECT first_value(x) OVER w FROM generate_series(9223372036854775805, 9223372036854775806) x WINDOW w AS (ORDER BY x::int8 DESC RANGE BETWEEN 5 PRECEDING AND CURRENT ROW)", "9223372036854775806;9223372036854775806"},
		// Widened keys still give the result the windows' order, as
		// PostgreSQL's output has it without an ORDER BY; a cast offset is
		// an integer offset too.
		{0, "SELECT x, sum(x) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), row_number() OVER (ORDER BY x) FROM (VALUES (3), (1), (2)) v(x)", "1|1|1;2|3|2;3|5|3"},
		{0, "SELECT sum(x) OVER (ORDER BY x RANGE BETWEEN 2::int8 PRECEDING AND 1::int2 PRECEDING) FROM (VALUES (1), (2), (3)) v(x) ORDER BY x", "NULL;1;3"},
		{0, "SELECT CASE WHEN v > 100 THEN 1/0 ELSE 0 END FROM m", "err:22012"},
		{0, "SELECT CASE WHEN 1=0 THEN 1/0 WHEN 1=1 THEN 1 ELSE 2/0 END, CASE 1 WHEN 0 THEN 1/0 WHEN 1 THEN 2 ELSE 2/0 END", "1|2"},
		{0, "DELETE FROM m WHERE v = 1 RETURNING rank() OVER (ORDER BY v)", "err:42P20"},
		{0, "UPDATE m SET v = v RETURNING count(*)", "err:42803"},
		{0, "SELECT float8send(1.5::float8), float4send(-0.0::float4)", "[63 248 0 0 0 0 0 0]|[128 0 0 0]"},
	})
}

// In a block now(), CURRENT_TIMESTAMP and 'now' are the block's start,
// in every statement; outside one each statement has its own.
func TestTransactionTime(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "BEGIN", "tag:BEGIN"},
		{0, "INSERT INTO m VALUES ('now', 'n1', 10)", "tag:INSERT 0 1"},
		{0, "SELECT pg_sleep(0.01)", "tag:SELECT"},
		{0, "INSERT INTO m VALUES (now(), 'n2', 11)", "tag:INSERT 0 1"},
		{0, "SELECT count(DISTINCT time) FROM m WHERE host IN ('n1', 'n2')", "1"},
		{0, "SELECT count(*) FROM m WHERE time = CURRENT_TIMESTAMP AND time = timestamptz 'now'", "2"},
		{0, "COMMIT", "tag:COMMIT"},
		{0, "SELECT count(*) FROM m WHERE time = now()", "0"},
	})
}

// What PostgreSQL refuses, tsdb refuses with PostgreSQL's SQLSTATE, where
// the engine alone would answer Infinity, NaN or a shifted year.
func TestPostgresRefusals(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT ln(0)", "err:2201E"},
		{0, "SELECT log(-1)", "err:2201E"},
		{0, "SELECT sqrt(-1)", "err:2201F"},
		{0, "SELECT exp(1000)", "err:22003"},
		{0, "SELECT ln(1), log(100), sqrt(4)", "0|2|2"},
		// A bigint made an oid stays within an oid's range.
		{0, "SELECT CAST(v AS oid) FROM (VALUES (4567890123456789::int8)) t(v)", "err:22003"},
		{0, "SELECT CAST(v AS oid) FROM (VALUES (4294967295::int8), (NULL)) t(v)", "4294967295;NULL"},
		// The smallest integer modulo -1 is 0, no overflow.
		{0, "SELECT (-9223372036854775808)::int8 % (-1)::int8, (-32768)::int2 % (-1)::int2, NULL::int % -1", "0|0|NULL"},
		// << in two's complement, the bits shifted out dropped.
		{0, "SELECT (-1::int8 << 63)::text, 1::int8 << 63, (-1)::int4 << 31, 1::int2 << 15, (-3)::int4 << 2, 5 << 1, NULL::int8 << 2",
			"-9223372036854775808|-9223372036854775808|-2147483648|-32768|-12|10|NULL"},
		// VARIADIC ARRAY[…] is the array's elements as arguments.
		{0, "SELECT concat(VARIADIC ARRAY['a', 'b']), format('%s-%s', VARIADIC ARRAY['x', 'y']), concat_ws(',', VARIADIC ARRAY['p', 'q'])", "ab|x-y|p,q"},
		{0, "SELECT no_such_agg(VARIADIC ARRAY[1, 2])", "err:42883"},
		{0, "SELECT format('%s', VARIADIC a) FROM (VALUES (ARRAY['a'])) v(a)", "err:0A000"},
		// A hypothetical-set aggregate takes as many direct arguments as
		// ordering columns.
		{0, "SELECT rank(3) WITHIN GROUP (ORDER BY x, y) FROM (VALUES (1, 2)) v(x, y)", "err:42883"},
		// NaN divided by zero is NaN; a number divided by zero fails.
		{0, "SELECT 'nan'::float8 / 0::float8, 'nan'::float8 / NULL::float8, 4::float8 / 2", "NaN|NULL|2"},
		{0, "SELECT 1::float8 / 0", "err:22012"},
		{0, "SELECT count(*) FROM m TABLESAMPLE SYSTEM (100)", "err:0A000"},
		// A set-returning function in a select list is a row per value,
		// also inside an expression; inside CASE, COALESCE or an
		// aggregate PostgreSQL refuses it.
		{0, "SELECT generate_series(1, 5) / 2, abs(generate_series(-1, 0))", "0|1;1|0;1|NULL;2|NULL;2|NULL"},
		{0, "SELECT CASE WHEN true THEN generate_series(1, 3) END", "err:0A000"},
		{0, "SELECT coalesce(generate_series(1, 3), 0)", "err:0A000"},
		{0, "SELECT sum(generate_series(1, 3))", "err:0A000"},
		{0, "SELECT sum(unnest(ARRAY[1]))", "err:0A000"},
		// generate_series over bigint constants orders a RANGE window as
		// bigint, widened so that the frame's end does not overflow.
		{0, "SELECT last_value(x) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND 4 FOLLOWING) FROM generate_series(9223372036854775805, 9223372036854775806) x", "9223372036854775806;9223372036854775806"},
		{0, "SELECT '10e400'::float8", "err:22003"},
		{0, "SELECT '10e-400'::float8", "err:22003"},
		{0, "SELECT '-Infinity'::float8, 'nan'::float4", "-Inf|NaN"},
		{0, "CREATE TABLE f (time timestamptz NOT NULL, v float8)", "tag:CREATE TABLE"},
		{0, "INSERT INTO f VALUES (now(), '10e400')", "err:22003"},
		{0, "INSERT INTO f VALUES (now(), '-10e-400')", "err:22003"},
		{0, "SELECT count(*) FROM f", "0"},
		{0, "SELECT make_date(-44, 3, 15) = date '0044-03-15 BC'", "true"},
		{0, "SELECT make_date(0, 7, 15)", "err:22008"},
		{0, "SET IntervalStyle = 'iso'", "err:22023"},
		{0, "SET IntervalStyle = 'sql_standard'", "tag:SET"},
		// Under sql_standard a leading minus applies to every field.
		{0, "SELECT interval '-1 2:03:04' = interval '-1 days -2 hours -3 minutes -4 seconds'", "true"},
		{0, "SET IntervalStyle = 'postgres'", "tag:SET"},
		{0, "SELECT interval '-1 2:03:04' = interval '-1 days +2 hours 3 minutes 4 seconds'", "true"},
		{0, "SET bytea_output = 'octal'", "err:22023"},
		{0, "SET work_mem = '64kB'", "tag:SET"},
		{0, "SELECT count(*) FROM (SELECT DISTINCT x FROM generate_series(1, 20000) x) s", "20000"},
		{0, "SHOW work_mem", "64kB"},
		{0, "SET work_mem = '10kB'", "err:22023"},
		{0, "RESET work_mem", "tag:RESET"},
		// Rows of no columns, as PostgreSQL answers an empty select list.
		{0, "SELECT FROM generate_series(1,5) EXCEPT ALL SELECT FROM generate_series(1,3)", ";"},
		{0, "SELECT FROM generate_series(1,5) UNION SELECT FROM generate_series(1,3)", ""},
		{0, "SELECT 1 WHERE EXISTS (SELECT FROM generate_series(1,2))", "1"},
		{0, "SELECT x FROM generate_series(1,3) x ORDER BY x USING >", "3;2;1"},
		{0, "SELECT x FROM generate_series(1,3) x ORDER BY x USING ~<~", "err:0A000"},
		{0, "SELECT 5 # 3", "6"},
		{0, "SELECT interval '-9223372036854775808 microseconds' = -(interval '9223372036854775807 microseconds') - interval '1 microsecond'", "true"},
		{0, "SET extra_float_digits = 4", "err:22023"},
	})
}

// INSERT … VALUES reads a time as a SELECT does.
func TestInsertDateTimeInput(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "INSERT INTO m VALUES ('Mon Feb 10 17:32:01 1997 PST', 'p', 1), ('19970210 173201 -0800', 'q', 2)", "tag:INSERT 0 2"},
		{0, "SELECT count(*) FROM m WHERE time = timestamptz '1997-02-11 01:32:01+00'", "2"},
		{0, "INSERT INTO m VALUES ('Feb 30 1997', 'r', 3)", "err:22008"},
		{0, "INSERT INTO m VALUES ('2026-01-01 00:00:00+00'::timestamptz + interval '1 day', 's', 4)", "tag:INSERT 0 1"},
	})
}

// A subquery's and a WITH query's unnamed columns carry PostgreSQL's
// names through SELECT *.
func TestSubqueryColumnNames(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	for _, c := range []struct {
		q    string
		want string
	}{
		{"SELECT * FROM (SELECT count(*) FROM m) s", "count"},
		{"WITH c AS (SELECT count(*), max(v), ln(1) FROM m) SELECT * FROM c", "count,max,ln"},
		{"SELECT * FROM (SELECT v + 1, v::text, CASE WHEN v > 1 THEN 1 END FROM m) s", "?column?,v,case"},
		{"SELECT * FROM (SELECT 1 UNION SELECT 2) s", "?column?"},
		{"SELECT * FROM (SELECT count(*) FROM m) s(n)", "n"},
		// PostgreSQL's strengths: an outer cast names over an inner one, a
		// column in ELSE over CASE (names checked against PostgreSQL 15).
		{"SELECT '1'::int8::text, CASE WHEN v > 1 THEN 1 ELSE v END, CASE WHEN v > 1 THEN 1 ELSE 2 END FROM m", "text,v,case"},
		{"SELECT 'nan'::numeric::float8, 'x'::text COLLATE \"C\", (SELECT max(v) FROM m)", "float8,text,max"},
	} {
		res := e.must(c.q)
		if got := strings.Join(res[len(res)-1].cols, ","); got != c.want {
			t.Errorf("%s: columns %s, want %s", c.q, got, c.want)
		}
	}
}

// A date column stores dates: written as PostgreSQL reads them (in the
// session's order), compared, updated, flushed and read back.
func TestDateColumn(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE emp (time timestamptz NOT NULL, name text, enroll_date date)", "tag:CREATE TABLE"},
		{0, "INSERT INTO emp VALUES (now(), 'a', '2006-10-01'), (now(), 'b', 'January 8, 1999'), (now(), 'c', NULL)", "tag:INSERT 0 3"},
		{0, "SET DateStyle = 'ISO, DMY'", "tag:SET"},
		{0, "INSERT INTO emp VALUES (now(), 'd', '01/02/03')", "tag:INSERT 0 1"},
		{0, "RESET DateStyle", "tag:RESET"},
		{0, "SELECT name, enroll_date FROM emp ORDER BY name", "a|2006-10-01 00:00:00;b|1999-01-08 00:00:00;c|NULL;d|2003-02-01 00:00:00"},
		{0, "SELECT count(*) FROM emp WHERE enroll_date > date '2000-01-01'", "2"},
		{0, "UPDATE emp SET enroll_date = enroll_date + 1 WHERE name = 'a'", "tag:UPDATE 1"},
		{0, "CHECKPOINT", "tag:CHECKPOINT"},
		{0, "SELECT enroll_date FROM emp WHERE name = 'a'", "2006-10-02 00:00:00"},
		{0, "INSERT INTO emp VALUES (now(), 'e', '2006-02-30')", "err:22008"},
		{0, "ALTER TABLE emp ADD COLUMN left_date date", "tag:ALTER TABLE"},
		{0, "SELECT count(left_date) FROM emp", "0"},
	})
}

// Functions PostgreSQL has that the engine lacks or means differently.
func TestPostgresFunctions(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT regexp_matches('foobarbequebaz', '(bar)(beque)')", "[bar beque]"},
		{0, "SELECT regexp_matches('foobarbequebaz', 'bar')", "[bar]"},
		{0, "SELECT count(*) FROM (SELECT regexp_matches('foo', 'x')) s", "0"},
		{0, "SELECT host FROM m WHERE regexp_matches(host, 'a') IS NOT NULL", "err:0A000"},
		{0, "SELECT regexp_matches('ab', 'a', 'g')", "[a]"},
		{0, "SELECT regexp_matches('foobarbequebazilbarfbonk', '(b[^b]+)(b[^b]+)', 'g')", "[bar beque];[bazil barf]"},
		{0, "SELECT regexp_matches('foobarbequebaz', '(bar)(.*)(beque)')", "[bar  beque]"},
		{0, "SELECT regexp_matches('foObARbEqUEbAz', '(bar)(beque)', 'i')", "[bAR bEqUE]"},
		// Empty matches where PostgreSQL finds them: after another match,
		// at line starts, and not where a split would make empty parts.
		{0, "SELECT regexp_matches('ab', 'a*', 'g')", `[a];[];[]`},
		{0, "SELECT array_length(regexp_matches('ab', 'a*', 'g'), 1)", `1;1;1`},
		{0, "SELECT regexp_matches('1' || chr(10) || '2' || chr(10), '^.?', 'mg')", `[1];[2];[]`},
		{0, "SELECT regexp_matches(chr(10) || '1' || chr(10), '.?$', 'mg')", `[];[1];[];[]`},
		{0, "SELECT regexp_split_to_array('ab c', '\\s*'), regexp_split_to_array('hello', ''), array_length(regexp_split_to_array('', 'x'), 1)", `[a b c]|[h e l l o]|1`},
		{0, "SELECT regexp_split_to_table('a,b,,c', ',')", "a;b;;c"},
		// round(float8) rounds a half to even, as rint does.
		{0, "SELECT round(2.5::float8), round(3.5::float8), round(-2.5::float8), round(-0.5::float8)::text, round(2.5), round(-2.5::numeric)", "2|4|-2|-0|3|-3"},
		// A numeric literal's cast keeps room for the values beside it:
		// 2.25 was rounded to 1.5's scale in a UNION, VALUES or CASE.
		{0, "SELECT x FROM (VALUES (1.5::numeric), (2.25)) v(x)", "1.5;2.25"},
		{0, "SELECT sum(x) FROM (SELECT 1::numeric AS x UNION ALL SELECT 2.25) s", "3.25"},
		{0, "SELECT (CASE WHEN false THEN 1.5::numeric ELSE 2.25 END) = 2.25", "true"},
		// Dates by an interval are a series of timestamptz.
		{0, "SELECT pg_typeof(generate_series(date '2024-01-01', date '2024-01-02', interval '1 day'))", "timestamp with time zone;timestamp with time zone"},
		// A real meeting another number type is taken as float8.
		{0, "SELECT 0.1::float4 > 0.1, (1::float4 / 3)::text", "true|0.3333333333333333"},
		{0, "CREATE TABLE r4 (time timestamptz NOT NULL, v real)", "tag:CREATE TABLE"},
		{0, "INSERT INTO r4 VALUES ('2026-01-01 00:00:00+00', 0.1), ('2026-01-01 00:00:01+00', 1)", "tag:INSERT 0 2"},
		{0, "SELECT count(*) FROM r4 WHERE v > 0.1", "2"},
		// percentile_cont interpolates a float8, also over a numeric.
		{0, "CREATE TABLE n2 (time timestamptz NOT NULL, p numeric(10,2))", "tag:CREATE TABLE"},
		{0, "INSERT INTO n2 VALUES ('2026-01-01 00:00:00+00', 10), ('2026-01-01 00:00:01+00', 10)", "tag:INSERT 0 2"},
		{0, "SELECT (percentile_cont(0.5) WITHIN GROUP (ORDER BY p))::text, (percentile_cont(0.5) WITHIN GROUP (ORDER BY p * 2))::text FROM n2", "10|20"},
		// The sum of bigints is numeric: divided, it is numeric division.
		{0, "SELECT sum(v) / 7, sum(v::int) / 7, (sum(v) / 7 > 1.4)::text FROM m", "1.4285714285714286|1|true"},
		{0, "SELECT (v / 3)::text FROM r4 ORDER BY v", "0.033333333830038704;0.3333333333333333"},
		// A bare string compared with a time column is read as
		// PostgreSQL reads a timestamptz (TSBS's +0000), also in DML.
		{0, "SELECT count(*) FROM r4 WHERE time >= '2026-01-01 00:00:01.000000 +0000'", "1"},
		{0, "SELECT count(*) FROM r4 r JOIN (SELECT 1) s ON r.time < '2026-01-01 00:00:01 +0000'", "1"},
		{0, "UPDATE r4 SET v = 2 WHERE time = '2026-01-01 00:00:01 +0000'", "tag:UPDATE 1"},
		{0, "SET TimeZone = 'PST8PDT'", "tag:SET"},
		{0, "DELETE FROM r4 WHERE time < '2026-01-01 00:00:01 +0000'", "tag:DELETE 1"},
		{0, "RESET TimeZone", "tag:RESET"},
		// A bare string compared with a number column is of its type:
		// PostgreSQL's input rules (the engine compared 'x' as text and
		// found no row).
		{0, "SELECT count(*) FROM r4 WHERE v = '2' AND v > '0.5' AND v IN ('1', '2')", "1"},
		{0, "SELECT count(*) FROM r4 WHERE v = 'x'", "err:22P02"},
		{0, "SELECT count(*) FROM m WHERE v = '1.5'", "err:22P02"},
		// An ungrouped column: PostgreSQL's words, none of the SQL tsdb ran.
		{0, "SELECT v, count(*) FROM r4", "err:42803"},
		// Text read by a template.
		{0, "SELECT to_date('05 Dec 2026', 'DD Mon YYYY')::text, to_timestamp('2026-12-05 14:30 +05:30', 'YYYY-MM-DD HH24:MI TZH:TZM') = timestamptz '2026-12-05 09:00+00', to_timestamp('2026-12-05 14:30', 'YYYY-MM-DD HH24:MI') = timestamptz '2026-12-05 14:30+00'", "2026-12-05|true|true"},
		{0, "SELECT to_date('2026-02-30', 'YYYY-MM-DD')", "err:22008"},
		// An array made text is PostgreSQL's array text, not the
		// engine's list text.
		{0, "SELECT ARRAY[1, NULL]::text, ARRAY['a b', '', 'x\"y']::text, ARRAY[[1, 2], [3, 4]]::text, 'x' || ARRAY[0.1::float8]::text", `{1,NULL}|{"a b","","x\"y"}|{{1,2},{3,4}}|x{0.1}`},
		{0, "SELECT ROW(1, 'a b', NULL)::text, ROW(1, ROW(2, 'x'))::text, 'r=' || ROW(true, 0.5::float8)::text", `(1,"a b",)|(1,"(2,x)")|r=(t,0.5)`},
		{0, "SELECT ROW(1.5, 2)::text", "err:0A000"},
		// array_to_string writes elements as the session does (2, not
		// 2.0); array_remove, array_replace and btrim exist.
		{0, "SELECT array_to_string(ARRAY[1.5::float8, 2], ','), array_to_string(ARRAY[1, NULL, 3], ',', '*'), array_to_string(ARRAY[1, NULL], ',', NULL), array_to_string(ARRAY[[1, 2], [3, 4]], '-')", "1.5,2|1,*,3|1|1-2-3-4"},
		{0, "SELECT array_to_string(array_remove(ARRAY[1, NULL, 2, 1], 1), ','), array_to_string(array_replace(ARRAY[1, 2], 1, 9), ','), btrim('xxaxx', 'x'), btrim('  a  ')", "2|9,2|a|a"},
		{0, "SELECT initcap('hello wORLD-foo 3d')", "Hello World-Foo 3d"},
		{0, "SELECT lpad('hi', 5) || '|', rpad('hi', 5) || '|', lpad('hello', 3)", "   hi||hi   ||hel"},
		{0, "SELECT |/ 25.0, ||/ 27.0", "5|3.0000000000000004"},
		{0, "SELECT |/ -1.0", "err:2201F"},
		{0, "SELECT substring('foobar' from 'o.b'), substring('foobar' from 'o(.)b'), substring('foobar' from 'x')", "oob|o|NULL"},
		{0, "SELECT substring('foobar' from 2 for 3)", "oob"},
	})
}

// PostgreSQL's array text reads as an array of the cast's element type.
func TestArrayLiterals(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT '{1,2}'::int[], '{a,\"b c\",NULL,\"x\\\"y\"}'::text[]", "[1 2]|[a b c <nil> x\"y]"},
		{0, "SELECT 2 = ANY('{1,2}'::int[]), '{}'::int[]", "true|[]"},
		{0, "SELECT '{{1,2},{3,4}}'::int[][]", "[[1 2] [3 4]]"},
		{0, "SELECT count(*) FROM m WHERE host = ANY('{a,c}'::text[])", "2"},
		{0, "SELECT '{1,2'::int[]", "err:22P02"},
		{0, "SELECT '{1,x}'::int[]", "err:22P02"},
	})
}

// x op ANY('{…}') with the array as text, as clients inline parameters.
func TestAnyOfArrayText(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT count(*) FROM m WHERE host = ANY('{a,c}')", "2"},
		{0, "SELECT count(*) FROM m WHERE v = ANY('{\"1\",\"2\"}')", "2"},
		{0, "SELECT count(*) FROM m WHERE v > ANY('{2,3}')", "2"},
		{0, "SELECT count(*) FROM m WHERE v <> ALL('{1,2}')", "2"},
		{0, "SELECT count(*) FROM m WHERE v < ALL('{3,4}')", "2"},
		{0, "SELECT count(*) FROM m WHERE v = ANY('{}')", "0"},
		{0, "SELECT count(*) FROM m WHERE v = ANY('{1,')", "err:22P02"},
	})
}

// Float text that underflows is refused on every INSERT path (the fast
// path of plain literals included), not stored as zero.
func TestFloatUnderflowRefused(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE f (time timestamptz NOT NULL, v float8)", "tag:CREATE TABLE"},
		{0, "INSERT INTO f VALUES ('2026-01-01 00:00:00+00', '10e-400')", "err:22003"},
		{0, "INSERT INTO f VALUES ('2026-01-01 00:00:00+00', '0e-400'), ('2026-01-01 00:00:00+00', '1e-300')", "tag:INSERT 0 2"},
		{0, "SELECT count(*) FROM f", "2"},
	})
}

// character(n) columns keep their values without trailing spaces, in
// the buffer and in flushed files, through INSERT, COPY-like fast paths
// and UPDATE, and refuse a longer value; the result columns that show
// them are marked for padding (the wire layer pads, see
// tests/character_test.go). bpchar without a length and "char" are
// refused rather than stored as text that answers otherwise.
func TestCharColumns(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE c (time timestamptz NOT NULL, code char(4), name text)", "tag:CREATE TABLE"},
		{0, "INSERT INTO c VALUES ('2026-01-01', 'ab  ', 'x'), ('2026-01-02', 'abcd    ', 'y')", "tag:INSERT 0 2"},
		{0, "INSERT INTO c VALUES ('2026-01-03', 'abcde', 'z')", "err:22001"},
		{0, "CHECKPOINT", "tag:CHECKPOINT"},
		{0, "ALTER TABLE c ADD COLUMN flag character", "tag:ALTER TABLE"},
		{0, "INSERT INTO c VALUES ('2026-01-03', 'q', 'z', 'y ')", "tag:INSERT 0 1"},
		{0, "SELECT code || '|', length(code), flag || '|' FROM c ORDER BY time", "ab||2|NULL;abcd||4|NULL;q||1|y|"},
		{0, "UPDATE c SET code = 'zz   ' WHERE name = 'x'", "tag:UPDATE 1"},
		{0, "UPDATE c SET code = 'zzzzz' WHERE name = 'x'", "err:22001"},
		{0, "SELECT code || '|' FROM c WHERE code = 'zz ' AND code LIKE 'zz  '", "zz|"},
		{0, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'c'::regclass AND attnum IN (2, 4) ORDER BY attnum", "character(4);character(1)"},
		{0, "CREATE TABLE c2 (time timestamptz NOT NULL, code bpchar)", "err:0A000"},
		{0, "CREATE TABLE c2 (time timestamptz NOT NULL, code \"char\")", "err:0A000"},
		{0, "CREATE TABLE c2 (time timestamptz NOT NULL, code char(0))", "err:22023"},
	})
	var c []Column
	if err := e.s.Execute(context.Background(), "SELECT code, name, flag FROM c", func(r *Result) error {
		c = r.Columns
		if r.Rows != nil {
			r.Rows.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(c) != 3 || c[0].OID != 1042 || c[0].Pad != 4 || c[1].Pad != 0 || c[2].Pad != 1 {
		t.Errorf("result columns %+v: want code and flag as bpchar padded to 4 and 1", c)
	}
}

// A DELETE naming the day deletes by the statement's day, written into
// the statement as a constant.
func TestDMLTimeKeywords(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "DELETE FROM m WHERE time < CURRENT_DATE - 365 * 100", "tag:DELETE 0"},
		{0, "DELETE FROM m WHERE time::date < CURRENT_DATE AND host = 'a'", "tag:DELETE 1"},
		{0, "UPDATE m SET v = 7 WHERE time < LOCALTIMESTAMP AND host = 'b'", "tag:UPDATE 1"},
		{0, "DELETE FROM m WHERE time < today() AND host = 'c'", "tag:DELETE 1"},
		{0, "SELECT host, v FROM m ORDER BY host", "b|7;d|4"},
	})
}

// In a block, now() still names its column now.
func TestTransactionTimeColumnNames(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	e.must("BEGIN")
	res := e.must("SELECT now(), CURRENT_TIMESTAMP, now()::date AS d")
	if got := strings.Join(res[len(res)-1].cols, ","); got != "now,current_timestamp,d" {
		t.Errorf("columns %s, want now,current_timestamp,d", got)
	}
	e.must("COMMIT")
}

// The session's TimeZone governs what the engine computes (date_trunc,
// casts to date, extract) and how zone-less input is read (literals,
// INSERT, COPY's cousin the fast INSERT, pruning bounds, DELETE), while
// another session stays in UTC.
func TestSessionTimeZone(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SET TimeZone = 'Europe/Berlin'", "tag:SET"},
		{0, "SELECT date_trunc('day', timestamptz '2024-01-01 23:30:00+00') = timestamptz '2024-01-02 00:00:00+01'", "true"},
		{1, "SELECT date_trunc('day', timestamptz '2024-01-01 23:30:00+00') = timestamptz '2024-01-01 00:00:00+00'", "true"},
		{0, "SELECT extract(hour from timestamptz '2024-07-01 12:00:00+00'), (timestamptz '2024-01-01 23:30:00+00')::date = date '2024-01-02'", "14|true"},
		{0, "SELECT timestamptz '2024-01-01 01:00' = timestamptz '2024-01-01 00:00:00+00'", "true"},
		// A dynamic abbreviation truncates in the zone it refers to, for
		// values of a column too (MSK was +4 from 2011-03-27 to 2014-10-26).
		{0, "SELECT date_trunc('day', t, 'MSK') = timestamptz '2014-11-01 00:00+03' FROM (VALUES (timestamptz '2014-11-01 20:00+00')) v(t)", "true"},
		// Spring forward: 02:30 does not exist; PostgreSQL reads it in standard time.
		{0, "SELECT timestamptz '2024-03-31 02:30' = timestamptz '2024-03-31 01:30:00+00'", "true"},
		{0, "INSERT INTO m VALUES ('2026-01-01 01:00:40', 'e', 5)", "tag:INSERT 0 1"},
		{0, "INSERT INTO m SELECT '2026-01-01 01:00:50', 'f', 6", "tag:INSERT 0 1"},
		{1, "SELECT v FROM m WHERE time IN ('2026-01-01 00:00:40+00', '2026-01-01 00:00:50+00') ORDER BY v", "5;6"},
		// Bounds read in the session's zone prune as the engine filters.
		{0, "SELECT count(*) FROM m WHERE time >= '2026-01-01 01:00:20' AND time < '2026-01-01 01:00:45'", "3"},
		{1, "SELECT count(*) FROM m WHERE time >= '2026-01-01 01:00:20' AND time < '2026-01-01 01:00:45'", "0"},
		{0, "DELETE FROM m WHERE time < '2026-01-01 01:00:10'", "tag:DELETE 1"},
		{1, "SELECT count(*) FROM m", "5"},
		{0, "SET TimeZone = 'Nowhere/Land'", "err:22023"},
		{0, "SELECT extract(hour from timestamptz '2024-07-01 12:00:00+00')", "14"},
		{0, "RESET TimeZone", "tag:RESET"},
		{0, "SELECT extract(hour from timestamptz '2024-07-01 12:00:00+00')", "12"},
	})
}

// A timestamp without time zone is a wall clock: a session outside UTC
// reads, computes with and filters on the value written, in buffered rows
// and in flushed files alike (the view once cast the stored instant in the
// session's zone: 10:00 read as 11:00 in Berlin).
//
// Tables created since store timestamp columns as Delta timestamp_ntz;
// tables created before (legacy) store the wall clock as a UTC instant.
// Both read the same.
func TestTimestampColumnInSessionZone(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) { testTimestampColumnInSessionZone(t, legacy) })
	}
}

func testTimestampColumnInSessionZone(t *testing.T, legacy bool) {
	e := newEnv(t)
	if legacy {
		tbl, err := schema.New("tn", []schema.Column{{Name: "time", Type: schema.Timestamptz}, {Name: "t", Type: schema.Timestamp}, {Name: "v", Type: schema.Float64}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.CreateTable(context.Background(), tbl, false); err != nil {
			t.Fatal(err)
		}
	} else {
		e.must("CREATE TABLE tn (time timestamptz, t timestamp, v float8)")
	}
	if tbl, _ := e.store.Table("tn"); tbl.Columns[1].NTZ == legacy {
		t.Fatalf("column t: NTZ %v", tbl.Columns[1].NTZ)
	}
	e.must("INSERT INTO tn VALUES ('2026-01-01 10:00:00+00', '2026-01-01 10:00:00', 1)")
	e.must("SET TimeZone = 'Europe/Berlin'")
	e.must("INSERT INTO tn SELECT time, t + interval '1 hour', 2 FROM tn")
	for _, where := range []string{"buffered", "flushed"} {
		if where == "flushed" {
			if err := e.store.Checkpoint(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		e.expectRows(where, []queryRows{
			{"SELECT t, extract(hour from t), v FROM tn ORDER BY v", "2026-01-01 10:00:00|10|1;2026-01-01 11:00:00|11|2"},
			{"SELECT v FROM tn WHERE t = '2026-01-01 11:00:00'", "2"},
			{"SELECT extract(hour from time) FROM tn WHERE v = 1", "11"},
		})
	}
	e.must("UPDATE tn SET v = 3 WHERE t = '2026-01-01 11:00:00'")
	e.must("DELETE FROM tn WHERE t = '2026-01-01 10:00:00'")
	e.expectRows("after DML", []queryRows{{"SELECT t, v FROM tn", "2026-01-01 11:00:00|3"}})
}

// Hypothetical-set aggregates, answers recorded from PostgreSQL 15.
func TestHypotheticalSetAggregates(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "SELECT rank(3) WITHIN GROUP (ORDER BY x), dense_rank(3) WITHIN GROUP (ORDER BY x) FROM (VALUES (1),(1),(2),(2),(3),(3),(4)) v(x)", "5|3"},
		{0, "SELECT cume_dist(3) WITHIN GROUP (ORDER BY x) FROM (VALUES (1),(1),(2),(2),(3),(3),(4)) v(x)", "0.875"},
		{0, "SELECT percent_rank(3) WITHIN GROUP (ORDER BY x) FROM (VALUES (1),(1),(2),(2),(3),(3),(4),(5)) v(x)", "0.5"},
		{0, "SELECT percent_rank(0) WITHIN GROUP (ORDER BY x) FROM generate_series(1,0) x", "0"},
		{0, "SELECT rank(2) WITHIN GROUP (ORDER BY x DESC), dense_rank(2) WITHIN GROUP (ORDER BY x DESC NULLS LAST) FROM (VALUES (1),(NULL),(2),(3),(3)) v(x)", "4|2"},
		{0, "SELECT rank(2) WITHIN GROUP (ORDER BY x) FILTER (WHERE x > 1) FROM generate_series(1,5) x", "1"},
		{0, "SELECT rank(x) WITHIN GROUP (ORDER BY x) FROM generate_series(1,5) x", "err:42803"},
	})
}

// A numeric division in the select list is PostgreSQL's numeric_div (at
// least 16 significant digits, no fewer places than an operand), where the
// engine divides decimals as doubles; answers recorded from PostgreSQL 15.
func TestNumericDivision(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "SELECT 1::numeric / 3, 10::numeric / 4, 2.5 / 2, 7.0 / 7, 100000000::numeric / 3, 0.001 / 7, NULL::numeric / 2",
			"0.33333333333333333333|2.5000000000000000|1.25000000000000000000|1.00000000000000000000|33333333.333333333333|0.00014285714285714286|NULL"},
		// Integers stay integer division; a float operand makes a float.
		{0, "SELECT 1 / 3, 1.5::float8 / 3", "0|0.5"},
		{0, "SELECT v, v::numeric / 3 AS r FROM m ORDER BY r DESC LIMIT 2", "4|1.3333333333333333;3|1.00000000000000000000"},
		{0, "SELECT sum(v::numeric) / count(*) AS mean FROM m", "2.5000000000000000"},
		{0, "SELECT 1::numeric / 0", "err:22012"},
		// A GROUP BY naming the item keeps the engine's value, which
		// groups 1/2 with 2/4.
		{0, "SELECT v::numeric / 2 AS h, count(*) FROM m GROUP BY 1 ORDER BY 1 LIMIT 1", "0.5|1"},
	})
}

// Buffered rows come back, without ORDER BY, in the order they were
// written, as PostgreSQL's heap returns an append-only table, not grouped
// by the time bucket each row fell in.
func TestBufferedRowsInWriteOrder(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE wo (time TIMESTAMPTZ NOT NULL, k INT)", "tag:CREATE TABLE"},
		{0, "INSERT INTO wo VALUES ('2026-01-01 00:00:00+00', 1)", "tag:INSERT 0 1"},
		{0, "INSERT INTO wo VALUES ('2026-03-01 00:00:00+00', 2)", "tag:INSERT 0 1"},
		{0, "INSERT INTO wo VALUES ('2026-01-01 00:00:01+00', 3)", "tag:INSERT 0 1"},
		{0, "SELECT k FROM wo", "1;2;3"},
		{0, "INSERT INTO wo VALUES ('2026-03-01 00:00:01+00', 4)", "tag:INSERT 0 1"},
		{0, "INSERT INTO wo VALUES ('2026-01-01 00:00:02+00', 5)", "tag:INSERT 0 1"},
		{0, "SELECT k FROM wo", "1;2;3;4;5"},
	})
}

// CREATE TABLE … AS makes a table of the query's columns and fills it.
func TestCreateTableAs(t *testing.T) {
	e := newEnv(t)
	e.must(txSetup)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE per_host AS SELECT max(time) AS time, host, sum(v)::bigint AS total FROM m GROUP BY host", "tag:SELECT 4"},
		{0, "SELECT host, total FROM per_host ORDER BY host", "a|1;b|2;c|3;d|4"},
		{0, "CREATE TABLE IF NOT EXISTS per_host AS SELECT 1", "tag:CREATE TABLE AS"},
		{0, "CREATE TABLE empty (t, h) AS SELECT time, host FROM m WITH NO DATA", "tag:CREATE TABLE AS"},
		{0, "SELECT count(*) FROM empty", "0"},
		{0, "CREATE TABLE no_time AS SELECT 1 AS x", "err:42P16"},
		{0, "CREATE TABLE iv AS SELECT time, interval '1 day' AS i FROM m", "tag:SELECT 4"},
		{0, "SELECT DISTINCT i = interval '24 hours', i FROM iv", "true|{1 0 0}"},
		// A numeric result column is the engine's decimal of the query:
		// numeric without precision computed as (38, 10) and printed with
		// the digits a value has, a bigint sum as (38, 0), numeric(p, s)
		// as it is.
		{0, "CREATE TABLE nv AS SELECT max(time) AS time, host, sum(v::numeric) AS q, sum(v::int8) AS s, max(v::numeric(5,2)) AS f FROM m GROUP BY host", "tag:SELECT 4"},
		{0, "SELECT q::text, s::text, f::text, q + 0.5 FROM nv ORDER BY host LIMIT 2", "1|1|1.00|1.5;2|2|2.00|2.5"},
		{0, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'nv'::regclass AND attnum > 2 ORDER BY attnum", "numeric(38,10);numeric(38,0);numeric(5,2)"},
		{0, "CREATE TABLE tv AS SELECT time, TIME '12:00' AS t, '11:00+01'::timetz AS z FROM m LIMIT 1", "tag:SELECT 1"},
		{0, "SELECT t::text, z::text, format_type(atttypid, atttypmod) FROM tv, pg_attribute WHERE attrelid = 'tv'::regclass AND attname = 'z'", "12:00:00|11:00:00+01|time with time zone"},
		{0, "CREATE TABLE tu AS SELECT time, uuid '6ba7b810-9dad-11d1-80b4-00c04fd430c8' AS u FROM m", "err:0A000"},
		{0, "SELECT count(*) FROM tu", "err:42P01"},
		{0, "CREATE MATERIALIZED VIEW mv AS SELECT time FROM m", "err:0A000"},
	})
}

// varchar(n) and timestamp(p) apply to every write as PostgreSQL's input
// does (answers recorded from PostgreSQL 15).
func TestColumnTypeModifiers(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "CREATE TABLE vt (ts timestamp(2) with time zone NOT NULL, f1 varchar(4))", "tag:CREATE TABLE"},
		{0, "INSERT INTO vt VALUES ('2024-01-01 00:00:00.12345+00', 'abcd    ')", "tag:INSERT 0 1"},
		{0, "INSERT INTO vt VALUES ('2024-01-01 00:00:00.999+00', 'abcde')", "err:22001"},
		{0, "INSERT INTO vt SELECT '2024-01-01 00:00:01.005+00'::timestamptz, 'éé  '", "tag:INSERT 0 1"},
		{0, "SELECT extract(microseconds from ts), f1, length(f1) FROM vt ORDER BY ts", "120000|abcd|4;1010000|éé  |4"},
		{0, "UPDATE vt SET f1 = 'toolong'", "err:22001"},
		{0, "UPDATE vt SET f1 = 'xy   ', ts = ts + interval '0.333 seconds' WHERE f1 = 'abcd'", "tag:UPDATE 1"},
		{0, "SELECT extract(microseconds from ts), f1 FROM vt ORDER BY ts", "450000|xy  ;1010000|éé  "},
		{0, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'vt'::regclass ORDER BY attnum", "timestamp(2) with time zone;character varying(4)"},
		{0, "CREATE TABLE bad (ts timestamptz NOT NULL, v varchar(0))", "err:22023"},
		{0, "CREATE TABLE bad (ts timestamptz NOT NULL, v bigint(3))", "err:42601"},
	})
}

// LIKE over a bytea column of the FROM list compares bytes in WHERE as in
// the select list (the engine has no LIKE for blobs).
func TestByteaLikeInWhere(t *testing.T) {
	e := newEnv(t)
	e.must(`CREATE TABLE bt (time TIMESTAMPTZ, a BYTEA, b INT)`)
	e.must(`INSERT INTO bt VALUES ('2026-01-01', '\x31', 1), ('2026-01-01', '\x41', 2), ('2026-01-01', 'x1y', 3)`)
	e.expectRows("", []queryRows{
		{"SELECT b FROM bt WHERE a LIKE '%1%' ORDER BY b", "1;3"},
		{"SELECT b FROM bt WHERE a NOT LIKE '%1%' ORDER BY b", "2"},
		{"SELECT a LIKE 'A' FROM bt WHERE b = 2", "true"},
	})
}

// percentile_cont and percentile_disc of a fraction that is a grouping
// column (the engine's quantiles take constants only) compute what
// PostgreSQL computes: interpolated, NULLs left out, in the ORDER BY's
// direction, a fraction outside [0, 1] refused.
func TestPercentileFraction(t *testing.T) {
	e := newEnv(t)
	runScript(t, e, []txStep{
		{0, "SELECT p, percentile_cont(p) WITHIN GROUP (ORDER BY x::float8), percentile_disc(p) WITHIN GROUP (ORDER BY x) FROM generate_series(1, 5) x, (VALUES (0::float8), (0.1), (0.75), (1)) v(p) GROUP BY p ORDER BY p",
			"0|1|1;0.1|1.4|1;0.75|4|4;1|5|5"},
		{0, "SELECT percentile_cont(p) WITHIN GROUP (ORDER BY x DESC) FROM (VALUES (1, 0.3::float8), (3, 0.3), (NULL, 0.3), (10, 0.3)) t(x, p) GROUP BY p", "5.8"},
		{0, "SELECT percentile_cont(p) WITHIN GROUP (ORDER BY x) FROM (VALUES (NULL::int, 0.5::float8)) t(x, p) GROUP BY p", "NULL"},
		{0, "SELECT percentile_cont(p) WITHIN GROUP (ORDER BY x) FROM (VALUES (1, 1.5::float8)) t(x, p) GROUP BY p", "err:22003"},
	})
}
