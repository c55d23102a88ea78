package main

import (
	"fmt"
	"testing"
)

func TestPreparedQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    benchQuery
		tmpl string
		args string
	}{
		{"literals that vary become parameters, the others stay",
			benchQuery{SQL: []string{
				"SELECT date_trunc('minute', time) FROM cpu WHERE hostname IN ('h1', 'h2') AND time >= '2026-01-01 00:00:00+00'",
				"SELECT date_trunc('minute', time) FROM cpu WHERE hostname IN ('h3', 'h2') AND time >= '2026-01-01 01:00:00+00'",
			}},
			"SELECT date_trunc('minute', time) FROM cpu WHERE hostname IN (?, 'h2') AND time >= ?",
			"[[h1 2026-01-01 00:00:00+00] [h3 2026-01-01 01:00:00+00]]"},
		{"one text repeated has none",
			benchQuery{SQL: []string{"SELECT DISTINCT hostname FROM cpu", "SELECT DISTINCT hostname FROM cpu"}},
			"SELECT DISTINCT hostname FROM cpu", "[[] []]"},
		{"variants of another shape are not parameterized",
			benchQuery{SQL: []string{"SELECT 'a'", "SELECT 'a', 'b'"}},
			"SELECT 'a'", "[[] []]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, args := tc.q.prepared()
			if tmpl != tc.tmpl || fmt.Sprint(args) != tc.args {
				t.Fatalf("got %q %v\nwant %q %s", tmpl, args, tc.tmpl, tc.args)
			}
		})
	}
}
