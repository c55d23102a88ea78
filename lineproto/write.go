package lineproto

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"tsdb/internal/auth"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// The write path of one request: its points grouped by measurement, left
// out where they cannot be rows (names, key conflicts), the tables and
// columns they need planned and made, and the rows inserted.

// maxNewTables bounds the tables one request may create: each is a Delta
// log and a directory, and a request of a million measurement names must
// not make a million of them. Telegraf's batches name a handful.
const maxNewTables = 100

// write groups points by measurement, creates missing tables (time, then
// tags as text, then fields) and adds missing columns to known ones,
// checks every point against its table and writes each table's rows in
// one durable insert. A point that cannot be written (a name tsdb does not
// take, a value of another type than its column) is left out and named in
// rejected, as InfluxDB leaves out points of a field type conflict; the
// tables and columns made are those the written points need. err is a
// failure of the whole request: nothing of it that err concerns is written.
func (h *handler) write(ctx context.Context, user string, points []Point) (written int, rejected []string, err error) {
	byTable := map[string][]Point{}
	var order []string
	if one := oneMeasurement(points); one != "" && schema.ValidName(one) {
		// What an agent's batch mostly is: the points need no grouping.
		byTable[one], order, points = points, []string{one}, nil
	}
	for _, p := range points {
		name := p.Measurement
		if !schema.ValidName(name) {
			rejected = append(rejected, fmt.Sprintf("measurement %q: names are 1 to %d bytes (line %d)", name, schema.MaxNameLen, p.Line))
			continue
		}
		if _, ok := byTable[name]; !ok {
			order = append(order, name)
		}
		byTable[name] = append(byTable[name], p)
	}
	// First every table's rows are built against the schema they need, in
	// memory, the points that do not fit it left out. Then the schema
	// changes, then the inserts.
	plans := make([]tablePlan, 0, len(order))
	names := make([]string, 0, len(order))
	var existing []schema.Table
	for _, name := range order {
		tbl, ok := h.store.Table(name)
		if !ok {
			if existing == nil {
				existing = h.store.Tables()
			}
			other, clash := caseClash(name, existing)
			for _, n := range names {
				if !clash && n != name && schema.SameName(n, name) {
					other, clash = n, true // a new table of this request
				}
			}
			if clash {
				for _, pt := range byTable[name] {
					rejected = append(rejected, fmt.Sprintf("measurement %q differs only in case from table %q, which tsdb cannot tell apart from it (line %d)", name, other, pt.Line))
				}
				continue
			}
		}
		pts, out := keyConflicts(name, tbl, byTable[name])
		rejected = append(rejected, out...)
		// Twice: the columns the first schema adds for points then left
		// out are not made.
		// Twice at most: the columns the first schema adds for points
		// then left out are not made.
		var p tablePlan
		for attempt := 0; ; attempt++ {
			if p, err = planTable(name, tbl, ok, pts); err != nil {
				// The table these points need cannot be made (too many
				// columns, say): they are left out, not the request.
				for _, pt := range pts {
					rejected = append(rejected, fmt.Sprintf("measurement %s: %v (line %d)", name, err, pt.Line))
				}
				pts = nil
				break
			}
			rec, kept, left := build(p.want, pts)
			rejected = append(rejected, left...)
			pts = kept
			if len(left) == 0 || attempt == 1 {
				// The store keeps the record Insert is given.
				p.rec = rec
				break
			}
			rec.Release()
		}
		if len(pts) == 0 {
			if p.rec != nil {
				p.rec.Release()
			}
			continue
		}
		byTable[name] = pts
		plans = append(plans, p)
		names = append(names, name)
	}
	newTables := 0
	for _, p := range plans {
		if p.create != nil {
			newTables++
		}
	}
	if newTables > maxNewTables {
		return 0, rejected, sqlerr.New(sqlerr.ProgramLimitExceeded, "the request would create %d tables; one request creates at most %d (send the points of new measurements in smaller batches)", newTables, maxNewTables)
	}
	// One policy for every way in: making tables and columns needs
	// CREATE on schema public, as CREATE TABLE and ADD COLUMN do.
	for i, name := range names {
		if p := plans[i]; (p.create != nil || len(p.add) > 0) && h.roles != nil && !h.roles.Allowed(user, auth.Create) {
			what := "table " + name
			if p.create == nil {
				what = fmt.Sprintf("columns of table %s (%s…)", name, p.add[0].Name)
			}
			return 0, rejected, sqlerr.New(sqlerr.InsufficientPrivilege, "role %q may not create %s: GRANT CREATE ON SCHEMA public TO %s, or create it as the admin", user, what, user)
		}
	}
	for i, name := range names {
		p := plans[i]
		switch {
		case p.create != nil:
			if _, err := h.store.CreateTable(ctx, *p.create, true); err != nil {
				return written, rejected, err
			}
		case len(p.add) > 0 || len(p.tags) > 0:
			if err := h.store.AddTagColumns(ctx, name, p.add, p.tags); err != nil {
				return written, rejected, err
			}
		}
		rec := p.rec
		tbl, _ := h.store.Table(name)
		if !sameColumns(tbl, p.want) {
			// Another request changed the table first: build again for
			// the columns it has now.
			p.rec.Release()
			var left []string
			rec, _, left = build(tbl, byTable[name])
			rejected = append(rejected, left...)
		}
		if len(tbl.Dedup) > 0 && h.merged != nil {
			// Like Insert, the write keeps rec.
			_, err = h.merged(ctx, user, name, rec)
		} else {
			_, err = h.store.Insert(ctx, name, rec)
		}
		if err != nil {
			return written, rejected, err
		}
		written += int(rec.NumRows())
	}
	return written, rejected, nil
}

// oneMeasurement is the measurement of every point, or "" if they have
// more than one (or none).
func oneMeasurement(points []Point) string {
	if len(points) == 0 {
		return ""
	}
	m := points[0].Measurement
	for i := range points {
		if points[i].Measurement != m {
			return ""
		}
	}
	return m
}

// tablePlan is what writing one measurement's points takes.
type tablePlan struct {
	create *schema.Table   // a new table
	add    []schema.Column // columns a known table gains
	want   schema.Table    // the schema rec was built for
	tags   []string        // the tags among add
	rec    arrow.RecordBatch
}

// planTable is the schema the points of one measurement need: a new
// table, or the columns a known one lacks.
func planTable(name string, tbl schema.Table, exists bool, pts []Point) (p tablePlan, err error) {
	cols, tags := missingColumns(tbl, pts)
	switch {
	case !exists:
		t, err := schema.New(name, append([]schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}}, cols...))
		if err != nil {
			return p, err
		}
		t.Cluster = clusterTag(t)
		// A point is its measurement, tag set and time, as in InfluxDB:
		// a second write of one replaces it (merging fields).
		t.Dedup, t.DedupTags = append([]string{"time"}, tags...), true
		p.create, p.want = &t, t
	case len(cols) > 0 || len(tags) > 0:
		wide, err := schema.New(tbl.Name, append(append([]schema.Column(nil), tbl.Columns...), cols...))
		if err != nil {
			return p, err
		}
		wide.ID, wide.TimeIndex, wide.Cluster = tbl.ID, tbl.TimeIndex, tbl.Cluster
		wide.Dedup, wide.DedupTags = tbl.Dedup, tbl.DedupTags
		p.add, p.want, p.tags = cols, wide, tags
	default:
		p.want = tbl
	}
	return p, nil
}

// clusterTag picks the cluster column of a new measurement's table: the
// tag agents name the machine by (Telegraf adds host to every point), which
// dashboards filter by most; without one, the default (the first tag by
// name).
func clusterTag(t schema.Table) string {
	for _, name := range []string{"host", "hostname"} {
		if i := t.ColumnIndex(name); i >= 0 && t.Columns[i].Type == schema.Text {
			return name
		}
	}
	return ""
}

// keyConflicts leaves out the points of a measurement that name a column
// tsdb cannot make (a name it does not take, a key that is both a tag and
// a field in the request), each with its reason.
func keyConflicts(name string, tbl schema.Table, pts []Point) (kept []Point, rejected []string) {
	tags := map[string]bool{}
	for j := range pts {
		if j > 0 && sameKeys(&pts[j], &pts[j-1]) {
			continue // its tag keys are in
		}
		for _, t := range pts[j].Tags {
			tags[t.Key] = true
		}
	}
	// Each distinct key is judged once, in the order keys first appear: a
	// key the engine would take for another column (the time column, a
	// column of the table or a key seen earlier, in another case; the
	// first spelling is the column's) or no column may have.
	spelling := map[string]string{}
	for _, c := range tbl.Columns {
		spelling[strings.ToLower(c.Name)] = c.Name
	}
	judged := map[string]string{} // key → why it is refused, "" if it is not
	judge := func(k string, field bool) string {
		switch {
		case k == "time" && field:
			return fmt.Sprintf("invalid field name: input field \"time\" on measurement %q is invalid", name)
		case k == "time":
			// The time column: InfluxDB refuses the key too.
			return fmt.Sprintf("invalid tag key: input tag \"time\" on measurement %q is invalid", name)
		}
		if why, ok := judged[k]; ok {
			return why
		}
		why := ""
		folded := strings.ToLower(k)
		switch {
		case schema.CheckColumnName(k) != nil:
			why = fmt.Sprintf("measurement %s: %v", name, schema.CheckColumnName(k))
		case folded == "time":
			why = fmt.Sprintf("measurement %s: %q differs only in case from the time column", name, k)
		case spelling[folded] != "" && spelling[folded] != k:
			why = fmt.Sprintf("measurement %s: %q differs only in case from column %q, which tsdb cannot tell apart from it", name, k, spelling[folded])
		default:
			spelling[folded] = k
		}
		judged[k] = why
		return why
	}
	var prev *Point // the last point kept
	all := true     // every point so far is kept: kept is pts[:j]
	for j := range pts {
		p := &pts[j]
		if prev != nil && sameKeys(p, prev) {
			if !all {
				kept = append(kept, *p) // keys already judged fine
			}
			continue
		}
		reason := ""
		for _, t := range p.Tags {
			if why := judge(t.Key, false); why != "" {
				reason = why
			}
		}
		for _, f := range p.Fields {
			if tags[f.Key] {
				reason = fmt.Sprintf("measurement %s: %q is both a tag and a field", name, f.Key)
			} else if why := judge(f.Key, true); why != "" {
				reason = why
			}
		}
		if reason != "" {
			if all {
				kept, all = append(make([]Point, 0, len(pts)), pts[:j]...), false
			}
			rejected = append(rejected, fmt.Sprintf("%s (line %d)", reason, p.Line))
			continue
		}
		if !all {
			kept = append(kept, *p)
		}
		prev = p
	}
	if all {
		return pts, nil
	}
	return kept, rejected
}

// sameKeys reports whether two points have the same tag keys and the same
// field keys and kinds, in the same order: the points of one batch mostly
// do, and what was found about one holds for the other. (Keys are
// interned by Parse, so equal keys are mostly the same string.)
func sameKeys(a, b *Point) bool {
	if a.keys != nil && a.keys == b.keys {
		return true
	}
	if len(a.Tags) != len(b.Tags) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i].Key != b.Tags[i].Key {
			return false
		}
	}
	for i := range a.Fields {
		if a.Fields[i].Key != b.Fields[i].Key || a.Fields[i].Kind != b.Fields[i].Kind {
			return false
		}
	}
	return true
}

// caseClash finds a table whose name the engine would take for name.
func caseClash(name string, tables []schema.Table) (string, bool) {
	for _, t := range tables {
		if t.Name != name && schema.SameName(t.Name, name) {
			return t.Name, true
		}
	}
	return "", false
}

// missingColumns are the tags and fields of pts that tbl lacks: tags (TEXT)
// first, then fields by the type of their first value, each group sorted;
// and the names of the tags of pts that are not (yet) in tbl's point
// identity, when that is its tag set (schema.Table.DedupTags) or the table
// is new.
func missingColumns(tbl schema.Table, pts []Point) (cols []schema.Column, tagNames []string) {
	tags, fields := map[string]bool{}, map[string]byte{}
	for j := range pts {
		p := &pts[j]
		if j > 0 && sameKeys(p, &pts[j-1]) {
			continue
		}
		for _, t := range p.Tags {
			tags[t.Key] = true
		}
		for _, f := range p.Fields {
			if _, seen := fields[f.Key]; !seen {
				fields[f.Key] = f.Kind
			}
		}
	}
	for _, k := range sortedKeys(tags) {
		if tbl.ColumnIndex(k) < 0 {
			cols = append(cols, schema.Column{Name: k, Type: schema.Text})
			tagNames = append(tagNames, k)
		} else if tbl.DedupTags && !tbl.DedupColumn(k) {
			tagNames = append(tagNames, k)
		}
	}
	for _, k := range sortedKeys(fields) {
		if tbl.ColumnIndex(k) < 0 {
			cols = append(cols, schema.Column{Name: k, Type: columnType(fields[k])})
		}
	}
	return cols, tagNames
}

func sameColumns(a, b schema.Table) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		if a.Columns[i].Name != b.Columns[i].Name || a.Columns[i].Type != b.Columns[i].Type {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
