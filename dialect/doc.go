// Package dialect is tsdb's PostgreSQL: what PostgreSQL's SQL means that
// the engine (DuckDB) reads otherwise or not at all, translated here — the
// statement-level rewrite (RewriteTree) and the macros it calls,
// date, time and interval constants, array text, to_char and format,
// regular expression functions, PostgreSQL's refusals of input it does
// not take — the engine's errors mapped to PostgreSQL's SQLSTATEs and
// wording, and a session's settings as PostgreSQL names, checks and
// reports them (DateStyle, TimeZone, extra_float_digits, isolation
// levels, …). It works on parse trees and values; it knows no table and no
// storage (the planner owns those).
package dialect
