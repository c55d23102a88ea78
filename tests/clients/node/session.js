// A node-postgres session against tsdb: run by tests/clients_test.go with
// the port as argument. Exits non-zero on the first wrong answer.
'use strict';
const { Client } = require('pg');
const assert = require('assert');

async function main() {
  const client = new Client({ host: '127.0.0.1', port: Number(process.argv[2]), user: 'tsdb', database: 'tsdb' });
  await client.connect();
  await client.query('CREATE TABLE nodejs (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT, ok BOOLEAN)');
  const t0 = new Date(Date.UTC(2026, 0, 1));
  for (let i = 0; i < 5; i++) {
    const r = await client.query('INSERT INTO nodejs VALUES ($1, $2, $3, $4, $5)', [new Date(t0.getTime() + i * 1000), 'h' + (i % 2), i / 2, i * 10, i % 2 === 0]);
    assert.strictEqual(r.rowCount, 1);
  }
  // A named prepared statement, executed several times.
  for (let i = 5; i < 10; i++) {
    await client.query({ name: 'ins', text: 'INSERT INTO nodejs VALUES ($1, $2, $3, $4, $5)', values: [new Date(t0.getTime() + i * 1000), 'named', i, i, true] });
  }
  await client.query('INSERT INTO nodejs VALUES ($1, $2, $3, $4, $5)', [new Date(t0.getTime() + 60000), null, null, null, null]);
  let r = await client.query('SELECT count(*) AS c, sum(v) AS s FROM nodejs WHERE time >= $1 AND time < $2 AND host = $3', [t0, new Date(t0.getTime() + 5000), 'h0']);
  assert.strictEqual(r.rows[0].c, '3');
  assert.strictEqual(r.rows[0].s, 3);
  r = await client.query('SELECT time, host, v, n, ok FROM nodejs WHERE n = $1', [20]);
  assert.strictEqual(r.rows.length, 1);
  assert.strictEqual(r.rows[0].time.getTime(), t0.getTime() + 2000);
  assert.strictEqual(r.rows[0].host, 'h0');
  assert.strictEqual(r.rows[0].v, 1);
  assert.strictEqual(r.rows[0].ok, true);
  r = await client.query('SELECT host, v FROM nodejs WHERE n IS NULL');
  assert.strictEqual(r.rows[0].host, null);
  r = await client.query('UPDATE nodejs SET v = v * $1 WHERE host = $2', [10, 'named']);
  assert.strictEqual(r.rowCount, 5);
  assert.strictEqual(r.command, 'UPDATE');
  r = await client.query('DELETE FROM nodejs WHERE ok = $1 AND host = $2', [true, 'named']);
  assert.strictEqual(r.rowCount, 5);
  await assert.rejects(client.query('SELECT nope FROM nodejs WHERE n = $1', [1]), (e) => e.code === '42703');
  r = await client.query('SELECT count(*)::int AS c FROM nodejs');
  assert.strictEqual(r.rows[0].c, 6);
  await client.end();
  console.log('node-postgres session ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
