package lineproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"

	"tsdb/ingest"
	"tsdb/internal/auth"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
)

// Handler serves InfluxDB-compatible writes: POST /write (v1, db and
// precision parameters) and /api/v2/write (v2, bucket and precision). A
// request is acknowledged with 204 only when its rows are durable in the
// WAL. When passwords are configured the request must authenticate (HTTP
// basic auth, or "Authorization: Token user:password") as a role that may
// write rows.
func Handler(store *ingest.Store, roles *auth.Store, maxBody int64) http.Handler {
	return &handler{store: store, roles: roles, maxBody: maxBody}
}

type handler struct {
	store   *ingest.Store
	roles   *auth.Store
	maxBody int64
	// bodies holds request body buffers between requests: a body is read
	// whole (and points copy what they keep), so its buffer can serve the
	// next request instead of growing a new one from nothing.
	bodies sync.Pool
}

// maxPooledBody is the largest body buffer kept for the next request.
const maxPooledBody = 64 << 20

// api is the InfluxDB API a request came by, which decides the shape of
// its error answers: 1.x and 3.x clients (Telegraf's influxdb output,
// python3-influxdb) read {"error": …}, 2.x clients {"code", "message"}.
type api int

const (
	apiV1 api = iota
	apiV2
	apiV3
)

func apiOf(path string) api {
	switch {
	case strings.HasPrefix(path, "/api/v2/"):
		return apiV2
	case strings.HasPrefix(path, "/api/v3/"):
		return apiV3
	}
	return apiV1
}

func (a api) writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Influxdb-Error", msg)
	w.WriteHeader(status)
	if a == apiV2 {
		json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
		return
	}
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// maxReasons bounds the rejected lines an answer names.
const maxReasons = 20

// partialAnswer is the message of a request some of whose lines were not
// written, as InfluxDB words it: the reasons, and how many were dropped.
func partialAnswer(a api, written int, reasons []string) string {
	shown := reasons
	if len(shown) > maxReasons {
		shown = append(shown[:maxReasons:maxReasons], fmt.Sprintf("… and %d more", len(reasons)-maxReasons))
	}
	text := strings.Join(shown, "\n")
	switch {
	case written == 0:
		return text
	case a == apiV2:
		return fmt.Sprintf("partial write error (%d written): %s", written, text)
	}
	return fmt.Sprintf("partial write: %s dropped=%d", text, len(reasons))
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := apiOf(r.URL.Path)
	writeError := a.writeError
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed", "use POST")
		return
	}
	user := ""
	if h.roles != nil && h.roles.PasswordsRequired() {
		var pass string
		var ok bool
		user, pass, ok = r.BasicAuth()
		if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Token "); found {
			user, pass, ok = strings.Cut(tok, ":")
		}
		if !ok || !h.roles.CheckPassword(user, pass) {
			time.Sleep(500 * time.Millisecond) // slow down guessing
			w.Header().Set("WWW-Authenticate", `Basic realm="tsdb"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "authenticate as a tsdb role (basic auth or Token user:password)")
			return
		}
		if !h.roles.Allowed(user, auth.Write) {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("role %q may not write rows (grant pg_write_all_data)", user))
			return
		}
	}
	// Telegraf and the InfluxDB clients gzip their bodies by default. The
	// limit applies to the decompressed body: a small bomb is still too
	// large.
	var src io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "gzip body: "+err.Error())
			return
		}
		defer zr.Close()
		src = zr
	default:
		writeError(w, http.StatusUnsupportedMediaType, "invalid", fmt.Sprintf("Content-Encoding %q is not supported (gzip or none)", enc))
		return
	}
	buf, _ := h.bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBody {
			h.bodies.Put(buf)
		}
	}()
	if r.ContentLength > 0 && r.ContentLength <= h.maxBody && src == r.Body {
		buf.Grow(int(r.ContentLength) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(src, h.maxBody+1)); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "reading the body: "+err.Error())
		return
	}
	body := buf.Bytes()
	if int64(len(body)) > h.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too large", fmt.Sprintf("request body over %d bytes", h.maxBody))
		return
	}
	points, bad, err := Parse(body, r.URL.Query().Get("precision"), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	written, rejected, err := h.write(r.Context(), user, points)
	if err != nil {
		status := writeStatus(err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, status, "write failed", err.Error())
		return
	}
	// As InfluxDB: the lines that could be written are (durably), and the
	// answer is 400 naming the others.
	var reasons []string
	for _, b := range bad {
		reasons = append(reasons, b.Error())
	}
	reasons = append(reasons, rejected...)
	if len(reasons) > 0 {
		writeError(w, http.StatusBadRequest, "invalid", partialAnswer(a, written, reasons))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeStatus is the HTTP status of a failed write: storage errors by
// their kind, the handler's own by their SQLSTATE.
func writeStatus(err error) int {
	switch ingest.KindOf(err) {
	case ingest.KindOutOfMemory, ingest.KindDiskFull:
		return http.StatusServiceUnavailable
	case ingest.KindTooLarge:
		// More than --memory-limit in one batch: retrying the same
		// request cannot succeed.
		return http.StatusRequestEntityTooLarge
	case ingest.KindIO:
		return http.StatusInternalServerError
	case ingest.KindNone:
	default:
		return http.StatusBadRequest
	}
	switch sqlerr.Code(err) {
	case sqlerr.InsufficientPrivilege:
		return http.StatusForbidden
	case sqlerr.OutOfMemory, sqlerr.DiskFull:
		return http.StatusServiceUnavailable
	case sqlerr.ProgramLimitExceeded:
		return http.StatusRequestEntityTooLarge
	case sqlerr.IOError, sqlerr.InternalError:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// maxNewTables bounds the tables one request may create: each is a Delta
// log and a directory, and a request of a million measurement names must
// not make a million of them. Telegraf's batches name a handful.
const maxNewTables = 100

// columnType maps a field kind to a column type.
func columnType(kind byte) schema.Type {
	switch kind {
	case 'i':
		return schema.Int64
	case 'b':
		return schema.Bool
	case 's':
		return schema.Text
	}
	return schema.Float64
}

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
		case len(p.add) > 0:
			if err := h.store.AddColumns(ctx, name, p.add); err != nil {
				return written, rejected, err
			}
		}
		rec := p.rec
		if tbl, _ := h.store.Table(name); !sameColumns(tbl, p.want) {
			// Another request changed the table first: build again for
			// the columns it has now.
			p.rec.Release()
			var left []string
			rec, _, left = build(tbl, byTable[name])
			rejected = append(rejected, left...)
		}
		if _, err := h.store.Insert(ctx, name, rec); err != nil {
			return written, rejected, err
		}
		written += int(rec.NumRows())
	}
	return written, rejected, nil
}

// tablePlan is what writing one measurement's points takes.
type tablePlan struct {
	create *schema.Table   // a new table
	add    []schema.Column // columns a known table gains
	want   schema.Table    // the schema rec was built for
	rec    arrow.RecordBatch
}

// planTable is the schema the points of one measurement need: a new
// table, or the columns a known one lacks.
func planTable(name string, tbl schema.Table, exists bool, pts []Point) (p tablePlan, err error) {
	cols := missingColumns(tbl, pts)
	switch {
	case !exists:
		t, err := schema.New(name, append([]schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}}, cols...))
		if err != nil {
			return p, err
		}
		t.Cluster = clusterTag(t)
		p.create, p.want = &t, t
	case len(cols) > 0:
		wide, err := schema.New(tbl.Name, append(append([]schema.Column(nil), tbl.Columns...), cols...))
		if err != nil {
			return p, err
		}
		wide.ID, wide.TimeIndex, wide.Cluster = tbl.ID, tbl.TimeIndex, tbl.Cluster
		p.add, p.want = cols, wide
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
	for _, p := range pts {
		for _, t := range p.Tags {
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
	for j := range pts {
		p := &pts[j]
		if prev != nil && sameKeys(p, prev) {
			kept = append(kept, *p) // keys already judged fine
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
			rejected = append(rejected, fmt.Sprintf("%s (line %d)", reason, p.Line))
			continue
		}
		kept = append(kept, *p)
		prev = p
	}
	return kept, rejected
}

// sameKeys reports whether two points have the same tag keys and the same
// field keys and kinds, in the same order: the points of one batch mostly
// do, and what was found about one holds for the other. (Keys are
// interned by Parse, so equal keys are mostly the same string.)
func sameKeys(a, b *Point) bool {
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
// first, then fields by the type of their first value, each group sorted.
func missingColumns(tbl schema.Table, pts []Point) []schema.Column {
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
	var cols []schema.Column
	for _, k := range sortedKeys(tags) {
		if tbl.ColumnIndex(k) < 0 {
			cols = append(cols, schema.Column{Name: k, Type: schema.Text})
		}
	}
	for _, k := range sortedKeys(fields) {
		if tbl.ColumnIndex(k) < 0 {
			cols = append(cols, schema.Column{Name: k, Type: columnType(fields[k])})
		}
	}
	return cols
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

// rowBuilder turns points into rows of one table: the columns are found
// by name once per table, and one point's values are slotted by column
// without allocating.
type rowBuilder struct {
	tbl   schema.Table
	index map[string]int // column name → position
	tag   []string       // a point's tag value by column
	field []*Field       // a point's field by column
	set   []bool         // which columns the point has
	// The last point slotted and where its tags and fields went: a
	// point with the same keys goes to the same columns.
	last             *Point
	tagCol, fieldCol []int
}

func newRowBuilder(tbl schema.Table) *rowBuilder {
	rb := &rowBuilder{tbl: tbl, index: make(map[string]int, len(tbl.Columns)),
		tag: make([]string, len(tbl.Columns)), field: make([]*Field, len(tbl.Columns)), set: make([]bool, len(tbl.Columns))}
	for i, c := range tbl.Columns {
		rb.index[c.Name] = i
	}
	return rb
}

// slot places p's values by column, or says why p cannot be a row of the
// table.
func (rb *rowBuilder) slot(p *Point) error {
	tbl := rb.tbl
	clear(rb.set)
	clear(rb.field)
	rb.set[tbl.TimeIndex] = true
	same := rb.last != nil && sameKeys(p, rb.last)
	if !same {
		rb.last = nil
		rb.tagCol, rb.fieldCol = rb.tagCol[:0], rb.fieldCol[:0]
	}
	for j, t := range p.Tags {
		var i int
		if same {
			i = rb.tagCol[j]
		} else {
			var ok bool
			if i, ok = rb.index[t.Key]; !ok || tbl.Columns[i].Type != schema.Text {
				return unknownColumn(p.Line, tbl, t.Key, "text")
			}
			rb.tagCol = append(rb.tagCol, i)
		}
		rb.tag[i], rb.set[i] = t.Value, true
	}
	for j := range p.Fields {
		f := &p.Fields[j]
		var i int
		if same {
			i = rb.fieldCol[j]
		} else {
			var ok bool
			if i, ok = rb.index[f.Key]; !ok {
				return unknownColumn(p.Line, tbl, f.Key, columnType(f.Kind).String())
			}
			rb.fieldCol = append(rb.fieldCol, i)
		}
		if err := fits(tbl.Columns[i], *f); err != nil {
			// The client's fault: InfluxDB answers a field type
			// conflict with 400.
			return sqlerr.Wrap(sqlerr.DatatypeMismatch, fmt.Errorf("line %d: %s.%s: %w", p.Line, tbl.Name, tbl.Columns[i].Name, err))
		}
		rb.field[i], rb.set[i] = f, true
	}
	for i, c := range tbl.Columns {
		if c.NotNull && !rb.set[i] {
			return sqlerr.New(sqlerr.NotNullViolation, "line %d: %s: column %q is NOT NULL and the line has no value for it", p.Line, tbl.Name, c.Name)
		}
	}
	rb.last = p
	return nil
}

// build converts points into a record with the table's columns; the
// points that do not fit are left out, each with its reason.
func build(tbl schema.Table, pts []Point) (rec arrow.RecordBatch, kept []Point, rejected []string) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	bld.Reserve(len(pts))
	rb := newRowBuilder(tbl)
	for j := range pts {
		p := &pts[j]
		if err := rb.slot(p); err != nil {
			rejected = append(rejected, err.Error())
			continue
		}
		kept = append(kept, *p)
		for i := range tbl.Columns {
			b := bld.Field(i)
			switch {
			case i == tbl.TimeIndex:
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(p.Micros))
			case !rb.set[i]:
				b.AppendNull()
			case rb.field[i] == nil:
				b.(*array.StringBuilder).Append(rb.tag[i])
			default:
				appendField(b, rb.field[i])
			}
		}
	}
	return bld.NewRecordBatch(), kept, rejected
}

func unknownColumn(line int, tbl schema.Table, name, ty string) error {
	return sqlerr.New(sqlerr.DatatypeMismatch, "line %d: table %s has a column %q, but not of type %s", line, tbl.Name, name, ty)
}

// fits reports why a field's value cannot go into column c, if it cannot.
func fits(c schema.Column, f Field) error {
	switch c.Type {
	case schema.Float64, schema.Float32:
		if f.Kind != 'f' && f.Kind != 'i' {
			return errors.New("expects a number")
		}
	case schema.Int64:
		if f.Kind != 'i' {
			return errors.New("expects an integer (write 3i)")
		}
	case schema.Int32:
		if f.Kind != 'i' || f.I != int64(int32(f.I)) {
			return errors.New("expects an integer within int4")
		}
	case schema.Int16:
		if f.Kind != 'i' || f.I != int64(int16(f.I)) {
			return errors.New("expects an integer within int2")
		}
	case schema.Bool:
		if f.Kind != 'b' {
			return errors.New("expects a boolean")
		}
	case schema.Text:
		if f.Kind != 's' {
			return errors.New("expects a string")
		}
	default:
		return fmt.Errorf("cannot take line-protocol values (type %s)", c.Type)
	}
	return nil
}

// appendField appends a field's value that fits the builder's column.
func appendField(b array.Builder, f *Field) {
	switch bb := b.(type) {
	case *array.Float64Builder:
		bb.Append(f.F + float64(f.I))
	case *array.Float32Builder:
		bb.Append(float32(f.F + float64(f.I)))
	case *array.Int64Builder:
		bb.Append(f.I)
	case *array.Int32Builder:
		bb.Append(int32(f.I))
	case *array.Int16Builder:
		bb.Append(int16(f.I))
	case *array.BooleanBuilder:
		bb.Append(f.B)
	case *array.StringBuilder:
		bb.Append(f.S)
	}
}
