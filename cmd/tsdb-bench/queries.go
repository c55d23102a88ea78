package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// benchQuery is one of the suite's query types with its parameters drawn
// once per run, as TSBS draws them per query: SQL[0] is the warm-up,
// whose rows the engines' answers are compared by, and the timed runs
// take SQL[1:] in turn.
type benchQuery struct {
	Name string
	SQL  []string
}

// timed is the statement of timed run i.
func (q benchQuery) timed(i int) string {
	if len(q.SQL) == 1 {
		return q.SQL[0]
	}
	return q.SQL[1+i%(len(q.SQL)-1)]
}

// queries returns the suite's cpu-only queries in a SQL form that tsdb,
// PostgreSQL and DuckDB all accept (date_trunc instead of time_bucket,
// DISTINCT ON for lastpoint), each with variants statements (a warm-up
// and the timed runs'). Hosts and time windows are drawn from a fixed
// seed, so every engine gets the same statements in the same order;
// a cache of one statement's answer helps no run but its own.
func queries(d *dataset, table string, variants int) []benchQuery {
	rng := rand.New(rand.NewPCG(7, 11))
	end := start.Add(time.Duration(d.steps) * interval)
	window := func(span time.Duration) (string, string) {
		room := end.Sub(start) - span
		off := time.Duration(0)
		if room > 0 {
			off = time.Duration(rng.Int64N(int64(room/time.Minute))) * time.Minute
		}
		from := start.Add(off)
		return ts(from), ts(from.Add(span))
	}
	hosts := func(n int) string {
		n = min(n, len(d.hosts))
		picked := rng.Perm(len(d.hosts))[:n]
		var q []string
		for _, i := range picked {
			q = append(q, "'"+d.hosts[i].tags[0]+"'")
		}
		return strings.Join(q, ", ")
	}
	aggs := func(fn string, n int) string {
		var s []string
		for _, m := range metricNames[:n] {
			s = append(s, fmt.Sprintf("%s(%s) AS %s_%s", fn, m, fn, m))
		}
		return strings.Join(s, ", ")
	}
	single := func(metrics, nHosts int, span time.Duration) string {
		from, to := window(span)
		return fmt.Sprintf("SELECT date_trunc('minute', time) AS minute, %s FROM %s WHERE hostname IN (%s) AND time >= '%s' AND time < '%s' GROUP BY minute ORDER BY minute",
			aggs("max", metrics), table, hosts(nHosts), from, to)
	}
	cpuMaxAll := func(nHosts int) string {
		from, to := window(8 * time.Hour)
		return fmt.Sprintf("SELECT date_trunc('hour', time) AS hour, %s FROM %s WHERE hostname IN (%s) AND time >= '%s' AND time < '%s' GROUP BY hour ORDER BY hour",
			aggs("max", 10), table, hosts(nHosts), from, to)
	}
	double := func(metrics int) string {
		from, to := window(12 * time.Hour)
		return fmt.Sprintf("SELECT date_trunc('hour', time) AS hour, hostname, %s FROM %s WHERE time >= '%s' AND time < '%s' GROUP BY hour, hostname ORDER BY hour, hostname",
			aggs("avg", metrics), table, from, to)
	}
	highCPU := func(nHosts int) string {
		from, to := window(12 * time.Hour)
		hostFilter := ""
		if nHosts > 0 {
			hostFilter = fmt.Sprintf(" AND hostname IN (%s)", hosts(nHosts))
		}
		return fmt.Sprintf("SELECT * FROM %s WHERE usage_user > 90.0 AND time >= '%s' AND time < '%s'%s", table, from, to, hostFilter)
	}
	gens := []struct {
		name string
		gen  func() string
	}{
		{"single-groupby-1-1-1", func() string { return single(1, 1, time.Hour) }},
		{"single-groupby-1-1-12", func() string { return single(1, 1, 12*time.Hour) }},
		{"single-groupby-1-8-1", func() string { return single(1, 8, time.Hour) }},
		{"single-groupby-5-1-1", func() string { return single(5, 1, time.Hour) }},
		{"single-groupby-5-1-12", func() string { return single(5, 1, 12*time.Hour) }},
		{"single-groupby-5-8-1", func() string { return single(5, 8, time.Hour) }},
		{"cpu-max-all-1", func() string { return cpuMaxAll(1) }},
		{"cpu-max-all-8", func() string { return cpuMaxAll(8) }},
		{"double-groupby-1", func() string { return double(1) }},
		{"double-groupby-5", func() string { return double(5) }},
		{"double-groupby-all", func() string { return double(10) }},
		{"high-cpu-1", func() string { return highCPU(1) }},
		{"high-cpu-all", func() string { return highCPU(0) }},
		{"lastpoint", func() string {
			return fmt.Sprintf("SELECT DISTINCT ON (hostname) * FROM %s ORDER BY hostname, time DESC", table)
		}},
		// A dashboard variable's query: the series of the table.
		{"distinct-hosts", func() string { return fmt.Sprintf("SELECT DISTINCT hostname FROM %s ORDER BY 1", table) }},
		{"groupby-orderby-limit", func() string {
			_, lastEnd := window(time.Hour)
			return fmt.Sprintf("SELECT date_trunc('minute', time) AS minute, max(usage_user) FROM %s WHERE time < '%s' GROUP BY minute ORDER BY minute DESC LIMIT 5", table, lastEnd)
		}},
	}
	out := make([]benchQuery, len(gens))
	for i, g := range gens {
		out[i].Name = g.name
		for range max(variants, 1) {
			out[i].SQL = append(out[i].SQL, g.gen())
		}
	}
	return out
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05+00") }

// prepared is q as one statement prepared once and executed per run with
// its parameters, as an application in the engine's own process would
// run it: the single-quoted literals that differ between q's variants
// (hosts, time bounds) become parameters; the others (date_trunc's unit)
// stay. args[i] are variant i's values.
func (q benchQuery) prepared() (template string, args [][]any) {
	lits := make([][]string, len(q.SQL))
	var skeleton []string // the text between literals, from SQL[0]
	for i, s := range q.SQL {
		parts := strings.Split(s, "'")
		if i == 0 {
			for j := 0; j < len(parts); j += 2 {
				skeleton = append(skeleton, parts[j])
			}
		}
		for j := 1; j < len(parts); j += 2 {
			lits[i] = append(lits[i], parts[j])
		}
	}
	varies := make([]bool, len(lits[0]))
	for i := range lits {
		if len(lits[i]) != len(lits[0]) {
			return q.SQL[0], make([][]any, len(q.SQL)) // another shape: no parameters
		}
		for j := range lits[i] {
			varies[j] = varies[j] || lits[i][j] != lits[0][j]
		}
	}
	var b strings.Builder
	for j, text := range skeleton {
		b.WriteString(text)
		if j >= len(varies) {
			continue
		}
		if varies[j] {
			b.WriteString("?")
		} else {
			b.WriteString("'" + lits[0][j] + "'")
		}
	}
	args = make([][]any, len(q.SQL))
	for i := range lits {
		for j, v := range lits[i] {
			if varies[j] {
				args[i] = append(args[i], v)
			}
		}
	}
	return b.String(), args
}
