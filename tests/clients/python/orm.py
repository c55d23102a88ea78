"""SQLAlchemy (Debian's 1.4, over psycopg2) against tsdb, run by
tests/clients_test.go with the port as argument: the dialect's connection
setup, an ORM session that adds, flushes and rolls back, a nested
transaction (SAVEPOINT) rolled back inside a committed one, and an
INSERT … RETURNING of values the server computes. Exits non-zero on the
first wrong answer."""
import datetime
import sys

import sqlalchemy as sa
from sqlalchemy import orm

port = int(sys.argv[1])
url = "postgresql+psycopg2://tsdb@127.0.0.1:%d/tsdb" % port
engine = sa.create_engine(url, future=True)
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

# DDL runs outside a transaction block (tsdb refuses it inside one):
# an AUTOCOMMIT connection, as for CREATE DATABASE in PostgreSQL.
with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
    conn.execute(sa.text("CREATE TABLE readings (time TIMESTAMPTZ NOT NULL, sensor TEXT NOT NULL, value DOUBLE PRECISION)"))

metadata = sa.MetaData()
# tsdb tables have no keys; the mapping names (time, sensor) as the ORM's.
readings = sa.Table(
    "readings", metadata,
    sa.Column("time", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("sensor", sa.Text, primary_key=True),
    sa.Column("value", sa.Float),
)


class Reading:
    def __init__(self, time, sensor, value):
        self.time, self.sensor, self.value = time, sensor, value


orm.registry().map_imperatively(Reading, readings)


def total(session):
    return session.execute(sa.select(sa.func.count()).select_from(readings)).scalar_one()


# add, flush (the INSERT runs, inside the transaction), rollback.
with orm.Session(engine) as session:
    session.add_all([Reading(t0 + datetime.timedelta(seconds=i), "s%d" % (i % 3), float(i)) for i in range(6)])
    session.flush()
    assert total(session) == 6
    with engine.connect() as other:
        assert other.execute(sa.select(sa.func.count()).select_from(readings)).scalar_one() == 0
    session.rollback()
    assert total(session) == 0, "rolled-back rows are visible"

# commit; a nested transaction rolled back; an ORM update and delete.
with orm.Session(engine) as session:
    session.add_all([Reading(t0 + datetime.timedelta(seconds=i), "s%d" % (i % 3), float(i)) for i in range(6)])
    session.commit()
    with session.begin():
        nested = session.begin_nested()
        session.add(Reading(t0 + datetime.timedelta(minutes=1), "nested", 1.0))
        session.flush()
        assert total(session) == 7
        nested.rollback()
        assert total(session) == 6
        r = session.get(Reading, (t0 + datetime.timedelta(seconds=4), "s1"))
        assert r is not None and r.value == 4.0
        r.value = 40.0
        session.delete(session.get(Reading, (t0, "s0")))
    got = session.execute(sa.select(readings.c.value).where(readings.c.sensor == "s1").order_by(readings.c.time)).scalars().all()
    assert got == [1.0, 40.0], got
    assert total(session) == 5

# INSERT … RETURNING of what the server computes.
with engine.begin() as conn:
    row = conn.execute(
        sa.insert(readings).values(time=sa.func.now(), sensor="computed", value=sa.literal(21.0) * 2).returning(readings.c.time, readings.c.value)
    ).one()
    assert row.value == 42.0, row
    assert abs((row.time - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) < 60, row.time
with engine.connect() as conn:
    assert conn.execute(sa.select(readings.c.value).where(readings.c.sensor == "computed")).scalar_one() == 42.0

print("sqlalchemy session ok")
