// Package dialect is tsdb's PostgreSQL: what PostgreSQL's SQL means that
// the engine (DuckDB) reads otherwise or not at all, translated here —
// date, time and interval constants, array text, to_char and format,
// regular expression functions, PostgreSQL's refusals of input it does
// not take — and the engine's errors mapped to PostgreSQL's SQLSTATEs and
// wording. It works on parse trees and values; it knows no session, no
// table and no storage (the planner owns those).
package dialect
