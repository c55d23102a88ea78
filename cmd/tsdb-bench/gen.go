package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// The DevOps "cpu-only" data set as the Time Series Benchmark Suite defines
// it: per host ten tags and ten usage metrics, one reading every 10 s. The
// generator is tsdb's own and deterministic (a fixed seed), so every engine
// and every run sees the same rows.

var regions = []struct {
	name string
	dcs  []string
}{
	{"us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"}},
	{"us-west-1", []string{"us-west-1a", "us-west-1b"}},
	{"us-west-2", []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
	{"eu-west-1", []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
	{"eu-central-1", []string{"eu-central-1a", "eu-central-1b"}},
	{"ap-southeast-1", []string{"ap-southeast-1a", "ap-southeast-1b"}},
	{"ap-southeast-2", []string{"ap-southeast-2a", "ap-southeast-2b"}},
	{"ap-northeast-1", []string{"ap-northeast-1a", "ap-northeast-1c"}},
	{"sa-east-1", []string{"sa-east-1a", "sa-east-1b", "sa-east-1c"}},
}

var (
	oses     = []string{"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"}
	arches   = []string{"x64", "x86"}
	teams    = []string{"SF", "NYC", "LON", "CHI"}
	services = []string{"production", "staging", "test"}
)

// tagNames and metricNames are the columns in table order after time.
var (
	tagNames    = []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"}
	metricNames = []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
)

// start is where the data set begins (the suite's default start).
var start = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

const interval = 10 * time.Second

// host is one simulated machine: fixed tags and ten clamped random walks.
type host struct {
	tags    []string
	metrics [10]float64
}

// dataset generates rows in time order: for each 10 s step, one row per host.
type dataset struct {
	hosts []host
	steps int
	rng   *rand.Rand
}

func newDataset(nHosts int, duration time.Duration) *dataset {
	rng := rand.New(rand.NewPCG(1, 2))
	d := &dataset{steps: int(duration / interval), rng: rng}
	for i := range nHosts {
		r := regions[rng.IntN(len(regions))]
		h := host{tags: []string{
			"host_" + strconv.Itoa(i),
			r.name,
			r.dcs[rng.IntN(len(r.dcs))],
			strconv.Itoa(rng.IntN(100)),
			oses[rng.IntN(len(oses))],
			arches[rng.IntN(len(arches))],
			teams[rng.IntN(len(teams))],
			strconv.Itoa(rng.IntN(20)),
			strconv.Itoa(rng.IntN(2)),
			services[rng.IntN(len(services))],
		}}
		for m := range h.metrics {
			h.metrics[m] = rng.Float64() * 100
		}
		d.hosts = append(d.hosts, h)
	}
	return d
}

// rows is the number of rows the data set holds.
func (d *dataset) rows() int { return d.steps * len(d.hosts) }

// each calls fn for every row in time order. The metric slice is reused.
func (d *dataset) each(fn func(t time.Time, h *host) error) error {
	for s := range d.steps {
		t := start.Add(time.Duration(s) * interval)
		for i := range d.hosts {
			h := &d.hosts[i]
			for m := range h.metrics {
				// A clamped random walk with normally distributed steps.
				h.metrics[m] = math.Min(100, math.Max(0, h.metrics[m]+d.rng.NormFloat64()))
			}
			if err := fn(t, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendCSV appends one row as CSV: time, the tags, the metrics.
func appendCSV(b []byte, t time.Time, h *host) []byte {
	b = t.AppendFormat(b, "2006-01-02 15:04:05+00")
	for _, v := range h.tags {
		b = append(b, ',')
		b = append(b, v...)
	}
	for _, v := range h.metrics {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return append(b, '\n')
}

// appendValues appends one row as an SQL VALUES tuple.
func appendValues(b []byte, t time.Time, h *host) []byte {
	b = append(b, "('"...)
	b = t.AppendFormat(b, "2006-01-02 15:04:05+00")
	b = append(b, '\'')
	for _, v := range h.tags {
		b = append(b, ",'"...)
		b = append(b, v...)
		b = append(b, '\'')
	}
	for _, v := range h.metrics {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return append(b, ')')
}

// createTable is the DDL both tsdb and PostgreSQL accept.
func createTable(name string) string {
	s := "CREATE TABLE " + name + " (time TIMESTAMPTZ NOT NULL"
	for _, t := range tagNames {
		s += ", " + t + " TEXT"
	}
	for _, m := range metricNames {
		s += ", " + m + " DOUBLE PRECISION"
	}
	return s + ")"
}

func (d *dataset) String() string {
	return fmt.Sprintf("%d hosts × %d steps = %d rows", len(d.hosts), d.steps, d.rows())
}
