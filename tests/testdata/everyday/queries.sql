-- Everyday statements, each on one line, answered by PostgreSQL 15 and by
-- tsdb side by side (TestEverydaySideBySide): every one must get the same
-- columns, rows and tag, or the same SQLSTATE. The table cpu is made by
-- the test on both servers. Lines starting with -- are comments; a line
-- "refused CODE: statement" is one tsdb refuses on purpose (with CODE)
-- where it cannot answer as PostgreSQL does.
SELECT count(*), sum(usage_user), avg(usage_user), min(time), max(time) FROM cpu
SELECT host, count(*), round(avg(usage_user)::numeric, 2), max(usage_system) FROM cpu GROUP BY host ORDER BY host
SELECT date_trunc('hour', time) AS t, avg(usage_user) FROM cpu WHERE time >= '2024-03-09 00:00:00+00' AND time < '2024-03-09 06:00:00+00' GROUP BY 1 ORDER BY 1
SELECT floor(extract(epoch FROM time)/300)*300 AS t, avg(usage_user) FROM cpu GROUP BY 1 ORDER BY 1 LIMIT 3
SELECT DISTINCT ON (host) host, time, usage_user FROM cpu ORDER BY host, time DESC
SELECT region, sum(price), avg(price), max(price), sum(cnt), avg(cnt) FROM cpu GROUP BY region ORDER BY region
SELECT count(*) FILTER (WHERE ok), count(*) FILTER (WHERE NOT ok), bool_and(usage_user > 0) FROM cpu
SELECT time, usage_user - lag(usage_user) OVER (PARTITION BY host ORDER BY time) AS delta FROM cpu WHERE host = 'host_1' ORDER BY time LIMIT 5
SELECT count(*) FROM cpu WHERE time > '2024-03-10 00:00:00.000000 +0000'
SELECT count(*) FROM cpu WHERE '2024-03-10 00:00:00 +0000' < time
SELECT count(*) FROM cpu WHERE time BETWEEN '2024-03-09 00:10:00 +0000' AND '2024-03-10 00:00:00 +0000'
SELECT count(*) FROM cpu WHERE time >= '2024-03-09 12:00 PST' AND time < 'Mar 10 2024 00:00 UTC'
SELECT count(*) FROM cpu c JOIN (SELECT 1 x) s ON c.time > '2024-03-10 00:00:00 +0000'
SELECT date_bin('15 minutes', time, '2024-01-01') AS b, count(*) FROM cpu GROUP BY 1 ORDER BY 1 LIMIT 3
SELECT sum(cnt) / 7, sum(cnt) / count(*), max(cnt) / 7, sum(cnt::int) / 7 FROM cpu
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY price), percentile_disc(0.5) WITHIN GROUP (ORDER BY time), mode() WITHIN GROUP (ORDER BY region) FROM cpu
SELECT cnt / 7, cnt % 7, cnt * 1.5, cnt / 2.0, price * 2, price / 3 FROM cpu ORDER BY time LIMIT 3
SELECT string_agg(DISTINCT host, ';' ORDER BY host), array_to_string(array_agg(DISTINCT region ORDER BY region), ',') FROM cpu
SELECT ARRAY[1, NULL]::text, ARRAY['a b', '', 'NULL', 'x"y']::text, ARRAY[[1, 2], [3, 4]]::text, 'x' || ARRAY[0.1::float8]::text, ARRAY[[1,2],[3,4]]
SELECT ARRAY[[date '2024-01-01']]::text, ARRAY[[1.5::float8, NULL]]::text, array_to_string(ARRAY[[date '2024-01-01']], ',')
SELECT ROW(1, 'a', NULL)::text, ROW(1, 'a b', ROW(2, 'x'))::text, 'r=' || ROW(1, 2)::text
SELECT array_to_string(ARRAY[1.5::float8, 2], ','), array_to_string(ARRAY[1, NULL, 3], ',', '*'), array_to_string(ARRAY[1, NULL], ',', NULL), array_to_string(ARRAY[[1, 2], [3, 4]], '-')
SELECT array_remove(ARRAY[1, 2, 1], 1), array_remove(ARRAY[1, NULL, 2], NULL), array_replace(ARRAY[1, 2, 1], 1, 9), btrim('xxaxx', 'x'), btrim('  a  ')
SELECT x FROM (VALUES (1.5::numeric), (2.25)) v(x)
SELECT sum(x), max(x) FROM (VALUES (1.5::numeric), (2.25)) v(x)
SELECT x FROM (VALUES (1::numeric), (2.25)) v(x)
SELECT 1.5::numeric UNION ALL SELECT 2.25
SELECT round(2.5::float8), round(3.5::float8), round(-2.5::float8), round(2.5::float4), round(0.5::float8), round(-0.5::float8), round(-0.4::float8)
SELECT round(2.5), round(-2.5), round(2.345, 2), round(7), round(123.456::numeric(10,3))
SELECT 0.1::float4 > 0.1, 0.1::float4 = 0.1, 0.1::float4 = 0.1::float8, 1::float4 / 3, 0.1::float4 * 3, 0.1::float4 + 1
SELECT generate_series(date '2024-01-01', date '2024-01-03', interval '1 day')
SELECT generate_series(1, 5) / 2 AS g, abs(generate_series(-1, 0))
SELECT sum(generate_series(1, 3))
SELECT CASE WHEN true THEN generate_series(1, 3) END
SELECT coalesce(generate_series(1, 3), 0)
SELECT x, last_value(x) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND 4 FOLLOWING) FROM generate_series(9223372036854775804, 9223372036854775806) x
SELECT regexp_matches('foo' || chr(10) || 'bar' || chr(10) || 'baz', '^', 'mg')
SELECT regexp_matches('ab', 'a*', 'g'), regexp_matches('foobarbequebazilbarfbonk', '(b[^b]+)(b[^b]+)', 'g')
SELECT regexp_matches(chr(10) || '1' || chr(10) || '2' || chr(10), '.?$', 'mg')
SELECT regexp_split_to_array('the quick brown fox', '\s*'), regexp_split_to_array('hello', ''), regexp_split_to_array('', 'x')
SELECT regexp_split_to_table('a,b,,c', ',')
SELECT to_date('05 Dec 2026', 'DD Mon YYYY'), to_timestamp('2026-12-05 14:30', 'YYYY-MM-DD HH24:MI')
SELECT to_timestamp('20261205143005', 'YYYYMMDDHH24MISS'), to_date('20260102', 'YYYYMMDD'), to_date('2026-1-2', 'YYYY-MM-DD')
SELECT to_timestamp('05/12/2026 02:30:00 PM', 'DD/MM/YYYY HH:MI:SS AM'), to_timestamp('12:00 am', 'HH12:MI am')
SELECT to_timestamp('2026-12-05T14:30:05.123456Z', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_timestamp('2026-12-05 14:30 +05:30', 'YYYY-MM-DD HH24:MI TZH:TZM'), to_timestamp('2026-12-05 14:30 -03', 'YYYY-MM-DD HH24:MI TZH')
SELECT to_date('December 5, 2026', 'Month DD, YYYY'), to_date('Sat, 05 Dec 26', 'Dy, DD Mon YY'), to_date('99-01-08', 'YY-MM-DD'), to_date('2026 339', 'YYYY DDD')
SELECT to_date('26-12-5', 'YY-MM-DD'), to_date('126-12-5', 'YYY-MM-DD'), to_date('6-12-5', 'Y-MM-DD'), to_date('2026', 'YYYY-MM-DD'), to_date('  2026  -  03 - 04', 'YYYY-MM-DD')
SELECT to_date('2026-02-30', 'YYYY-MM-DD')
SELECT to_date('xx', 'YYYY')
SELECT to_timestamp('2026-12-05 13:00 PM', 'YYYY-MM-DD HH24:MI PM')
refused 0A000: SELECT count(*) FROM cpu TABLESAMPLE SYSTEM (100)
SELECT 2147483647 + 1
SELECT 5 / 2, 5.0 / 2, 5 / 2.0, -5 / 2, 5 % -3, -5 % 3, 1.0 / 3, 0.1 + 0.2, 12345678901234567890 + 1
SELECT 'NaN'::float8 = 'NaN'::float8, 'NaN'::float8 > 1, 0.0::float8 = -0.0::float8, '-0'::float8
SELECT timestamptz '2024-03-10 01:30:00-08' + interval '1 hour', date_trunc('day', timestamptz '2024-03-10 12:00:00-07'), date '2024-01-31' + interval '1 month'
SELECT x, y FROM (VALUES (1, NULL), (2, 'b'), (3, 'a')) t(x, y) ORDER BY y DESC
SELECT host || '|' || coalesce(region, '-') || '|' || usage_user || '|' || coalesce(cnt::text, '-') || '|' || coalesce(ok::text, '-') || '|' || price || '|' || to_char(time, 'HH24:MI:SS') FROM cpu ORDER BY time LIMIT 2
SELECT upper(host), length(host), substr(host, 6), split_part(host, '_', 2), lpad(region, 5, '*'), format('%s-%s', host, cnt) FROM cpu ORDER BY time LIMIT 2
SELECT to_char(time, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char(usage_user, 'FM990.00'), to_char(cnt, '9,999') FROM cpu ORDER BY time LIMIT 2
SELECT cnt * '2', usage_user * '1e2', price * '1.5', '10' - cnt, '1.50'::numeric, ' 2.0 '::numeric, numeric '-.5' FROM cpu ORDER BY time LIMIT 2
SELECT split_part(host, '_', 2)::int, ' 12 '::int4, '-0'::int2, '+5'::int8, (cnt::text)::bigint FROM cpu ORDER BY time LIMIT 2
SELECT '1.5'::int4
SELECT (cnt::text || '.5')::int FROM cpu ORDER BY time LIMIT 1
SELECT '1e3'::bigint
SELECT '0x1F'::int8
SELECT '99999'::int2
SELECT (cnt::text || 'e500')::float8 FROM cpu ORDER BY time LIMIT 1
SELECT (cnt::text || '_000')::float8 FROM cpu ORDER BY time LIMIT 1
SELECT (cnt::text || '_000')::numeric FROM cpu ORDER BY time LIMIT 1
SELECT (cnt::text || '.25')::float8, (cnt::text || '.25')::numeric(6,1), (' ' || cnt::text || ' ')::int2, last_value(cnt) OVER (ORDER BY cnt::text::int) FROM cpu ORDER BY time LIMIT 2
SELECT '11:00 BST'::timetz, '11:00 pm'::time, time '1100', '04:05:06 PST'::timetz, '23:30:00-05'::timetz + interval '2 hours', '11:00:00.5+05:45'::timetz, time '10:00' + interval '1 hour', '2024-07-01 11:00 America/New_York'::timetz
SELECT '25:00'::time
SELECT '11:00 America/New_York'::timetz
-- Text into number columns, by INSERT … SELECT (the referee's tables are
-- made by the test; these read no table): casts of text at run time.
SELECT CAST(s AS float8) FROM (VALUES ('1_000')) v(s)
SELECT CAST(s AS float8) FROM (VALUES ('1e500')) v(s)
SELECT CAST(s AS numeric(10,2)) FROM (VALUES ('1_000')) v(s)
SELECT CAST(s AS float4), CAST(s AS numeric(6,2)), CAST(s AS float8) FROM (VALUES (' 1.5 '), ('-.25')) v(s)
-- Multidimensional arrays of dates and times print their elements as
-- their type (they printed as timestamptz).
SELECT ARRAY[[date '2020-01-01', date '2020-01-02']] AS a, ARRAY[[time '10:00']] AS b, ARRAY[[timestamp '2020-01-01 10:00']] AS c
SELECT ARRAY[[1,2],[3,4]] AS d, ARRAY[['a','b']] AS e
-- A share of a total: count is a bigint and the window's sum of it a
-- numeric, so the quotient is numeric division (33.3333333333333333).
SELECT region, count(*) * 100.0 / sum(count(*)) OVER () AS pct, count(*) OVER () / 2 FROM cpu GROUP BY region ORDER BY region
SELECT host, sum(cnt) OVER (PARTITION BY host ORDER BY time) / 3 FROM cpu ORDER BY time, host LIMIT 4
-- Histograms: width_bucket over doubles and numerics.
SELECT width_bucket(usage_user, 0, 100, 10) AS b, count(*) FROM cpu GROUP BY b ORDER BY b
SELECT width_bucket(price, 0, 100, 7) AS b, count(*), div(sum(cnt), 3) FROM cpu GROUP BY b ORDER BY b
-- Float arithmetic that overflows fails as in PostgreSQL.
SELECT usage_user * 1e308 FROM cpu WHERE usage_user > 1 LIMIT 1
SELECT count(*) FROM cpu WHERE cnt = '01' OR cnt IN ('2', '3')
SELECT count(*) FROM cpu WHERE cnt = 'x'
-- ORDER BY a bare name is the output column of that name first (n::text
-- is named n, upper(x) upper): PostgreSQL sorts the text.
SELECT cnt::text FROM cpu WHERE cnt IN (2, 9, 10, 100) ORDER BY cnt
SELECT upper(host), count(*) FROM cpu GROUP BY 1 ORDER BY upper
SELECT cnt::text, cnt FROM cpu ORDER BY cnt
-- A DISTINCT aggregate's values come sorted, as PostgreSQL sorts them to
-- drop the repeats.
SELECT string_agg(DISTINCT host, ','), array_agg(DISTINCT cnt % 3), string_agg(DISTINCT region, '|') FROM cpu
SELECT region, string_agg(DISTINCT host, ',') FROM cpu GROUP BY region ORDER BY region
-- A constant's input error is the statement's, as PostgreSQL's parse
-- analysis raises it, where no row reaches it too.
SELECT CASE WHEN false THEN 'y'::int END
SELECT count(*) FROM cpu WHERE false AND cnt = '2024-13-45'::date - date '2024-01-01'
-- sum of reals is a real; a number literal -0.0 is 0.
SELECT sum(usage_user::real), sum(cnt::int), sum(cnt::smallint) FROM cpu WHERE cnt < 100
