package tests

import (
	"os"
	"strings"
	"testing"
)

// knownDifferences are probes where tsdb knowingly answers unlike
// PostgreSQL (line of the recorded output → tsdb's answer and why). The
// README lists them.
var knownDifferences = map[int]struct{ tsdb, why string }{}

// Probes of PostgreSQL semantics run through psql against tsdb and compared
// with the answers recorded from a real PostgreSQL 15 (psql -A -t, TimeZone
// UTC) in testdata/pg_probes.pg15.out.
func TestPostgresSemanticsProbes(t *testing.T) {
	want, err := os.ReadFile("testdata/pg_probes.pg15.out")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, t.TempDir(), nil)
	got := s.psql("\\i testdata/pg_probes.sql\n", "-A", "-t")
	wantLines := strings.Split(strings.TrimRight(string(want), "\n"), "\n")
	gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%d output lines, PostgreSQL gave %d:\n%s", len(gotLines), len(wantLines), got)
	}
	for i := range wantLines {
		line := i + 1
		if d, ok := knownDifferences[line]; ok {
			if gotLines[i] != d.tsdb {
				t.Errorf("line %d: %q; the documented difference (%s) says %q", line, gotLines[i], d.why, d.tsdb)
			}
			continue
		}
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d: tsdb %q, PostgreSQL 15 %q", line, gotLines[i], wantLines[i])
		}
	}
}
