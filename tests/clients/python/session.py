"""A psycopg2 session against tsdb, run by tests/clients_test.go with the
port as argument. psycopg2 interpolates parameters on the client and sends
simple queries. Exits non-zero on the first wrong answer."""
import datetime
import sys

import psycopg2

conn = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[1]), user="tsdb", dbname="tsdb")
conn.autocommit = True
cur = conn.cursor()
cur.execute("CREATE TABLE py (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT, ok BOOLEAN)")
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
for i in range(5):
    cur.execute("INSERT INTO py VALUES (%s, %s, %s, %s, %s)", (t0 + datetime.timedelta(seconds=i), "h%d" % (i % 2), i / 2, i * 10, i % 2 == 0))
    assert cur.rowcount == 1, cur.rowcount
cur.executemany("INSERT INTO py VALUES (%s, %s, %s, %s, %s)",
                [(t0 + datetime.timedelta(minutes=1, seconds=i), "many", float(i), i, True) for i in range(20)])
cur.execute("INSERT INTO py VALUES (%s, %s, %s, %s, %s)", (t0 + datetime.timedelta(hours=1), None, None, None, None))
cur.execute("SELECT count(*), sum(v) FROM py WHERE time >= %s AND time < %s AND host = %s", (t0, t0 + datetime.timedelta(seconds=5), "h0"))
assert cur.fetchone() == (3, 3.0)
cur.execute("SELECT time, host, v, n, ok FROM py WHERE n = %s", (20,))
row = cur.fetchone()
assert row == (t0 + datetime.timedelta(seconds=2), "h0", 1.0, 20, True), row
cur.execute("SELECT host, v FROM py WHERE n IS NULL")
assert cur.fetchone() == (None, None)
cur.execute("UPDATE py SET v = v + %s WHERE host = %s", (100, "many"))
assert cur.rowcount == 20 and cur.statusmessage == "UPDATE 20", cur.statusmessage
cur.execute("DELETE FROM py WHERE host = %s AND n >= %s", ("many", 10))
assert cur.rowcount == 10
try:
    cur.execute("SELECT nope FROM py")
    raise SystemExit("error not raised")
except psycopg2.Error as e:
    assert e.pgcode == "42703", e.pgcode
cur.execute("SELECT count(*) FROM py")
assert cur.fetchone() == (16,)
conn.close()
print("psycopg2 session ok")
