#!/usr/bin/python3
"""Records PostgreSQL 15's pg_get_viewdef texts of views.sql's queries
into views.json, for TestAgainstPostgres. Run against a PostgreSQL 15 at
$PGHOST:$PGPORT (psycopg 3, Debian's python3-psycopg)."""
import json, os, sys
import psycopg

here = os.path.dirname(os.path.abspath(__file__))
conn = psycopg.connect(host=os.environ.get("PGHOST", "127.0.0.1"), port=os.environ.get("PGPORT", "5432"),
                       user=os.environ.get("PGUSER", "postgres"), dbname="postgres", autocommit=True)
cur = conn.cursor()
cur.execute("SET TimeZone = 'PST8PDT'")
cur.execute("SET DateStyle = 'ISO, MDY'")
cur.execute("""CREATE TEMP TABLE m ("time" timestamptz NOT NULL, host text, v float8, n int, b bigint, s smallint,
    d numeric(10,2), f real, ok bool, dt date, ts timestamp, iv interval, "Host Name" text)""")
out = []
for line in open(os.path.join(here, "views.sql")):
    q = line.strip()
    if not q or q.startswith("--"):
        continue
    cur.execute("DROP VIEW IF EXISTS v")
    cur.execute("CREATE TEMP VIEW v AS " + q)
    cur.execute("SELECT attname FROM pg_attribute WHERE attrelid = 'v'::regclass AND attnum > 0 ORDER BY attnum")
    names = [r[0] for r in cur.fetchall()]
    cur.execute("SELECT pg_get_viewdef('v'), pg_get_viewdef('v', true)")
    d, pretty = cur.fetchone()
    out.append({"query": q, "names": names, "def": d, "pretty": pretty})
json.dump(out, open(os.path.join(here, "views.json"), "w"), indent=1)
print(len(out), "views recorded", file=sys.stderr)
