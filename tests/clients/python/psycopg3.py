"""A psycopg 3 session against tsdb, run by tests/clients_test.go with the
port as argument: psycopg 3 sends every query over the extended protocol,
prepares a query on the server once it ran prepare_threshold (5) times,
and sends DEALLOCATE ALL after DDL; transactions with nested savepoints;
a named (server-side) cursor read in batches. Exits non-zero on the first
wrong answer."""
import datetime
import sys

import psycopg
from psycopg import errors

port = int(sys.argv[1])
dsn = "host=127.0.0.1 port=%d user=tsdb dbname=tsdb" % port
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def count(conn, where="true"):
    return conn.execute("SELECT count(*) FROM pg3 WHERE " + where).fetchone()[0]


# A migration in autocommit mode: queries auto-prepared, then DDL (psycopg
# answers it with DEALLOCATE ALL), then the prepared queries again.
with psycopg.connect(dsn, autocommit=True) as conn:
    assert conn.prepare_threshold == 5
    conn.execute("CREATE TABLE pg3 (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)")
    for i in range(8):
        conn.execute("INSERT INTO pg3 VALUES (%s, %s, %s)", (t0 + datetime.timedelta(seconds=i), "h%d" % (i % 2), i))
        assert conn.execute("SELECT count(*) FROM pg3 WHERE v <= %s", (i,)).fetchone() == (i + 1,)
    assert conn._prepared._names, "nothing was prepared on the server"
    conn.execute("ALTER TABLE pg3 ADD COLUMN note TEXT")
    conn.execute("CREATE TABLE IF NOT EXISTS pg3_audit (time TIMESTAMPTZ NOT NULL, what TEXT)")
    for i in range(8, 12):
        conn.execute("INSERT INTO pg3 VALUES (%s, %s, %s, %s)", (t0 + datetime.timedelta(seconds=i), "h%d" % (i % 2), i, "after"))
        assert conn.execute("SELECT count(*) FROM pg3 WHERE v <= %s", (i,)).fetchone() == (i + 1,)
    assert count(conn, "note = 'after'") == 4
    # SQL-level prepared statements.
    conn.execute("PREPARE twice(bigint) AS SELECT $1 * 2")
    assert conn.execute("EXECUTE twice(21)").fetchone() == (42,)
    conn.execute("DEALLOCATE twice")
    try:
        conn.execute("EXECUTE twice(1)")
        raise SystemExit("EXECUTE after DEALLOCATE did not fail")
    except errors.InvalidSqlStatementName:
        pass

# Transactions (psycopg's default: a block opened before the first
# statement).
with psycopg.connect(dsn) as conn:
    conn.execute("INSERT INTO pg3 VALUES (%s, 'tx', 100, NULL)", (t0 + datetime.timedelta(minutes=1),))
    assert count(conn, "host = 'tx'") == 1
    with psycopg.connect(dsn, autocommit=True) as other:
        assert count(other, "host = 'tx'") == 0, "another session sees an uncommitted row"
    conn.rollback()
    assert count(conn, "host = 'tx'") == 0, "ROLLBACK kept the row"

    # Nested blocks: the inner one fails and is rolled back to its
    # savepoint, the outer one commits.
    with conn.transaction():
        conn.execute("INSERT INTO pg3 VALUES (%s, 'outer', 1, NULL)", (t0 + datetime.timedelta(minutes=2),))
        try:
            with conn.transaction():
                conn.execute("UPDATE pg3 SET v = -1 WHERE host = 'outer'")
                conn.execute("SELECT nope FROM pg3")
        except errors.UndefinedColumn:
            pass
        assert conn.execute("SELECT v FROM pg3 WHERE host = 'outer'").fetchall() == [(1,)]
        with conn.transaction():
            conn.execute("DELETE FROM pg3 WHERE host = 'h0'")
    assert count(conn, "host = 'outer'") == 1
    assert count(conn, "host = 'h0'") == 0
    conn.commit()

    # RETURNING.
    row = conn.execute("INSERT INTO pg3 VALUES (%s, 'ret', 7, 'x') RETURNING host, v * 2", (t0 + datetime.timedelta(minutes=3),)).fetchone()
    assert row == ("ret", 14), row
    rows = conn.execute("UPDATE pg3 SET v = v + 1 WHERE host = %s RETURNING v", ("ret",)).fetchall()
    assert rows == [(8,)], rows
    conn.commit()

    # DDL inside a block is refused, and the block can be rolled back.
    try:
        conn.execute("CREATE TABLE pg3_more (time TIMESTAMPTZ NOT NULL)")
        raise SystemExit("DDL in a block did not fail")
    except errors.ActiveSqlTransaction:
        conn.rollback()

# A named cursor: DECLARE through the extended protocol, FETCH FORWARD in
# batches of itersize.
with psycopg.connect(dsn) as conn:
    with conn.cursor(name="big") as cur:
        cur.itersize = 3
        cur.execute("SELECT v FROM pg3 WHERE host = %s ORDER BY v", ("h1",))
        assert [d.name for d in cur.description] == ["v"], cur.description
        got = [r[0] for r in cur]
        assert got == [1, 3, 5, 7, 9, 11], got
    with conn.cursor(name="few") as cur:
        cur.execute("SELECT host, v FROM pg3 WHERE host = 'h1' ORDER BY v")
        assert cur.fetchmany(2) == [("h1", 1), ("h1", 3)]
        rest = cur.fetchall()
        assert [r[1] for r in rest] == [5, 7, 9, 11], rest
    conn.commit()

# DISCARD ALL, as a pooler sends it between clients.
with psycopg.connect(dsn, autocommit=True) as conn:
    conn.execute("SET TimeZone = 'Europe/Paris'")
    conn.execute("PREPARE p AS SELECT 1")
    conn.execute("DISCARD ALL")
    assert conn.execute("SHOW TimeZone").fetchone() == ("UTC",)
    try:
        conn.execute("EXECUTE p")
        raise SystemExit("a statement survived DISCARD ALL")
    except errors.InvalidSqlStatementName:
        pass

print("psycopg 3 session ok")
