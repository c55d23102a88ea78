// node-postgres transactions against tsdb: run by tests/clients_test.go
// with the port as argument. BEGIN/ROLLBACK/COMMIT as node-postgres
// applications write them, a SAVEPOINT, and RETURNING. Exits non-zero on
// the first wrong answer.
'use strict';
const { Client } = require('pg');
const assert = require('assert');

async function main() {
  const port = Number(process.argv[2]);
  const client = new Client({ host: '127.0.0.1', port, user: 'tsdb', database: 'tsdb' });
  const other = new Client({ host: '127.0.0.1', port, user: 'tsdb', database: 'tsdb' });
  await client.connect();
  await other.connect();
  const count = async (c, where) => Number((await c.query(`SELECT count(*) AS n FROM ntx WHERE ${where}`)).rows[0].n);
  await client.query('CREATE TABLE ntx (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)');
  const t0 = Date.UTC(2026, 0, 1);

  await client.query('BEGIN');
  for (let i = 0; i < 5; i++) {
    await client.query('INSERT INTO ntx VALUES ($1, $2, $3)', [new Date(t0 + i * 1000), 'h' + (i % 2), i]);
  }
  assert.strictEqual(await count(client, 'true'), 5);
  assert.strictEqual(await count(other, 'true'), 0);
  await client.query('ROLLBACK');
  assert.strictEqual(await count(client, 'true'), 0);

  await client.query('BEGIN');
  let r = await client.query('INSERT INTO ntx VALUES ($1, $2, $3), ($4, $5, $6) RETURNING host, v + 1 AS next',
    [new Date(t0), 'a', 1, new Date(t0 + 1000), 'b', 2]);
  assert.deepStrictEqual(r.rows, [{ host: 'a', next: '2' }, { host: 'b', next: '3' }]);
  assert.strictEqual(r.rowCount, 2);
  await client.query('SAVEPOINT s');
  r = await client.query('DELETE FROM ntx WHERE host = $1 RETURNING v', ['a']);
  assert.deepStrictEqual(r.rows, [{ v: '1' }]);
  await client.query('ROLLBACK TO SAVEPOINT s');
  r = await client.query('UPDATE ntx SET v = v * 10 WHERE host = $1 RETURNING v', ['b']);
  assert.deepStrictEqual(r.rows, [{ v: '20' }]);
  await client.query('COMMIT');
  r = await other.query('SELECT host, v FROM ntx ORDER BY host');
  assert.deepStrictEqual(r.rows, [{ host: 'a', v: '1' }, { host: 'b', v: '20' }]);

  // An error in a block: every statement fails until ROLLBACK.
  await client.query('BEGIN');
  await client.query('DELETE FROM ntx');
  await assert.rejects(client.query('SELECT nope FROM ntx'), (e) => e.code === '42703');
  await assert.rejects(client.query('SELECT 1'), (e) => e.code === '25P02');
  await client.query('ROLLBACK');
  assert.strictEqual(await count(other, 'true'), 2);

  await client.end();
  await other.end();
  console.log('node-postgres transactions ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
