"""Debian's python3-influxdb (the InfluxDB 1.x client) against tsdb's
line-protocol endpoint, run by tests/clients_test.go with the HTTP port as
argument: ping, CREATE DATABASE, JSON points and line-protocol strings,
a partial write surfacing as the client's error. The Go test checks the
rows over SQL afterwards. Exits non-zero on the first wrong answer."""
import sys

from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError

client = InfluxDBClient(host="127.0.0.1", port=int(sys.argv[1]), database="telegraf")
version = client.ping()
assert version, version
client.create_database("telegraf")

ok = client.write_points([
    {"measurement": "weather", "tags": {"host": "a", "city": "Paris"}, "time": "2026-01-01T00:00:00Z",
     "fields": {"temp": 20.5, "hum": 40, "ok": True, "note": "line one\nline two"}},
    {"measurement": "weather", "tags": {"host": "b", "city": "Lyon"}, "time": "2026-01-01T00:00:10Z",
     "fields": {"temp": -3.25, "hum": 90, "ok": False, "note": 'say "hi"'}},
], time_precision="s")
assert ok is True, ok

# Two lines, the second bad: the first is written, the client reports the
# other as InfluxDB's partial write (400).
try:
    client.write_points(["weather,host=c,city=Nice temp=21.5 1767225660", "weather,host=c temp=oops 1767225670"],
                        protocol="line", time_precision="s")
    raise SystemExit("the bad line was not reported")
except InfluxDBClientError as e:
    assert e.code == 400 and "partial write" in str(e) and "dropped=1" in str(e), (e.code, str(e))

print("influxdb-python session ok")
