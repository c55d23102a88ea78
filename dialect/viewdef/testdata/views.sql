-- Views whose pg_get_viewdef texts TestAgainstPostgres compares with
-- PostgreSQL 15's, recorded by record.py. One query per line; the
-- relations are m (below) and generate_series.
-- m: time timestamptz, host text, v float8, n int, b bigint, s smallint, d numeric(10,2), f real, ok bool, dt date, ts timestamp, iv interval, "Host Name" text
SELECT i, sum(i) over (order by i rows between 1 preceding and 1 following) as sum_rows FROM generate_series(1, 10) i
SELECT i, sum(i) over (order by i rows between 1 preceding and 1 following exclude current row) as sum_rows FROM generate_series(1, 10) i
SELECT i, sum(i) over (order by i rows between 1 preceding and 1 following exclude group) as sum_rows FROM generate_series(1, 10) i
SELECT i, sum(i) over (order by i rows between 1 preceding and 1 following exclude ties) as sum_rows FROM generate_series(1, 10) i
SELECT i, sum(i) over (order by i rows between 1 preceding and 1 following exclude no others) as sum_rows FROM generate_series(1, 10) i
SELECT i, sum(i) over (order by i groups between 1 preceding and 1 following) as sum_rows FROM generate_series(1, 10) i
SELECT i, min(i) over (order by i range between '1 day' preceding and '10 days' following) as min_i FROM generate_series(now(), now()+'100 days'::interval, '1 hour') i
select * from m
select m.* from m
select x.host as h, -x.n as neg, -5 as c, 5000000000 as big, 1.5 as num, -1.5 as nnum, 1::bigint as cb, x.v::int as vi, '7'::int as lit, null::text as nl, true as t from m x where x.n in (1,2) and x.b in (1,2) and x.host not in ('a') and x.host not like 'a%' and x.host ilike 'b' and x.v is null and x.n is not null and x.v between 1 and 2 and not x.ok and (x.ok or x.n = 1)
select host, n + b * 2 as a1, (n + b) * 2 as a2, n - (b - 1) as a3, n % 3 as a4, v * n as a5, n * 1.5 as a6, d + 1 as a7, d * v as a8, host || 'x' as a9, case when n > 1 then 'big' else 'small' end as c1, case n when 1 then 'one' end as c2, coalesce(host, 'none') as co, lag(v) over (partition by host order by time) as lg, row_number() over w as rn, sum(v) over (w rows between unbounded preceding and current row) as cs from m window w as (partition by host order by time)
select m.host, s.n from m, m s where m.n = s.n
select host from m where dt = '2020-01-01' and v = 1.5 and f > 1 and s = 1 and b = 1 and d > 1 and host = 'x' and time >= '2020-01-01'
select 1 as one
select host, avg(v) as a, count(*), 1 as one, 'x' as s from m where v > 1 and host in ('a','b') and n > 2 and b = 3 and time >= '2020-01-01' and host like 'x%' group by host order by 2 desc limit 5
select distinct date_trunc('hour', time) as hr, count(host) as c1, count(distinct host) as c2, sum(n) as s1, sum(b) as s2, avg(n) as a1, avg(v) as a2, min(time) as t1, max(d) as d1, sum(s) as s3, sum(d) as s4, avg(d) as a3, sum(f) as s5, avg(f) as a4 from m where time > now() - interval '1 hour' and time < '2020-01-01 10:00' group by 1 having count(*) > 1 order by hr desc nulls last limit 10 offset 5
select host, max(v) from m group by host having max(v) > 10 and count(*) filter (where ok) > 2
select host, count(*) filter (where v > 1) as big from m group by host order by host nulls first
select date_trunc('day', time) as day, host, avg(v) from m group by 1, 2 order by 1, 2
select date_trunc('day', time) as day, avg(v) from m group by date_trunc('day', time) order by day
select time, v, lag(v, 2) over (order by time) as l2, lead(v) over (order by time desc) as ld, first_value(v) over (partition by host order by time range between interval '1 hour' preceding and current row) as fv, nth_value(v, 2) over (order by time) as nv, ntile(4) over (order by v) as nt, rank() over (order by v desc nulls last) as r from m
select host, v from m where (v > 1 or v < -1) and not (n = 1 or n = 2) and ok
select host from m where n between 1 and 10 or n not between 20 and 30
select host from m where v * 2 > n + 1 and n / 2 = b - 1 and -v > 0
select n + b - s as x, n * b / s as y, n - (b + s) as z, n * (b + s) as w, (n * b) + s as u from m
select greatest(n, 1) as g, least(v, 2) as l, coalesce(v, n::float8, 0) as c from m
select "Host Name", time from m where "Host Name" = 'a' order by time desc offset 10
select host, upper(host) as u, lower(host), length(host) as len, abs(v) as av, round(d) as rd, round(d, 1) as rd1, round(v) as rv from m
select time, iv from m where time - interval '1 day' > ts::timestamptz
select time + interval '1 day' as t1, time - time as t2, iv + iv as t3, dt - dt as t4 from m
select ts from m where ts > '2020-01-01 10:00' and ts - interval '1 hour' < now()::timestamp
select case when v > 1 then n when v < 0 then -n else 0 end as c, case host when 'a' then 1 when 'b' then 2 else 3 end as k from m
select host from m where case when ok then v > 1 else v < 1 end
select host, count(*) as c from m group by host order by c desc, host limit all
select * from m where time > '2020-06-01 12:30:00+02' and dt <> '2021-02-03' and iv > '1 day 02:00:00'
select n::numeric(10,2) as nn, v::real as r, s::bigint as sb, d::float8 as df, 2.50 as two, 1e3 as thousand, 0.001 as small from m
select sum(v) over () as total, count(*) over (partition by host) as per_host from m
select bool_and(ok) as a, bool_or(ok) as o from m
select v from m where n = 1.5::float4
select case when ok then 1 else 1.5 end as c, case when ok then v else n end as c2 from m
select dt::timestamp as a, ts::date as b, time::date as c from m
select host from m where v in (1, 2.5) and d in (1.5, 2)
select host, percentile_disc(0.5) within group (order by n) as p50, percentile_disc(0.5) within group (order by n) filter (where s = 1) as px, rank(5, 'AZZZZ', 50) within group (order by n, host desc, n) as r, percentile_cont(0.9) within group (order by v desc) as p90, mode() within group (order by host) as mo from m group by host order by host
select host, 5 as k from m order by 2, host
select n::bigint, v from m order by n
select host, 'x' as t from m group by host, 2 order by t
