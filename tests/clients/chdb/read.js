// Prints the result of one query through chDB as JSON lines. tsdb's tests
// use it as an independent Delta reader: deltaLakeLocal('/abs/table') reads
// a table through delta-kernel-rs.
const { query } = require("chdb");

const sql = process.argv[2];
if (!sql) {
  console.error("usage: node read.js 'SELECT ...'");
  process.exit(2);
}
try {
  process.stdout.write(query(sql, "JSONEachRow"));
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
