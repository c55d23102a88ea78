package lineproto

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	body, err := io.ReadAll(io.LimitReader(src, h.maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "reading the body: "+err.Error())
		return
	}
	if int64(len(body)) > h.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too large", fmt.Sprintf("request body over %d bytes", h.maxBody))
		return
	}
	points, err := Parse(body, r.URL.Query().Get("precision"), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	if err := h.write(r.Context(), user, points); err != nil {
		status := writeStatus(err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, status, "write failed", err.Error())
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
// checks every value against its column and writes each table's rows in
// one durable insert. All lines are checked before anything changes,
// and user's right to make the tables and columns they need.
func (h *handler) write(ctx context.Context, user string, points []Point) error {
	byTable := map[string][]Point{}
	var order []string
	for _, p := range points {
		name := p.Measurement
		if !schema.ValidName(name) {
			return sqlerr.New(sqlerr.InvalidName, "measurement %q: table names are lower-case letters, digits and underscores", name)
		}
		if _, ok := byTable[name]; !ok {
			order = append(order, name)
		}
		byTable[name] = append(byTable[name], p)
	}
	// First every table's rows are built against the schema they need, in
	// memory: a bad value rejects the batch before any table or column is
	// created. Then the schema changes, then the inserts.
	type plan struct {
		create *schema.Table   // a new table
		add    []schema.Column // columns a known table gains
		want   schema.Table    // the schema rec was built for
		rec    arrow.RecordBatch
	}
	plans := make([]plan, len(order))
	for i, name := range order {
		pts := byTable[name]
		tbl, ok := h.store.Table(name)
		cols, err := missingColumns(name, tbl, pts)
		if err != nil {
			return err
		}
		p := &plans[i]
		switch {
		case !ok:
			t, err := schema.New(name, append([]schema.Column{{Name: "time", Type: schema.Timestamptz, NotNull: true}}, cols...))
			if err != nil {
				return err
			}
			t.Cluster = clusterTag(t)
			p.create, p.want = &t, t
		case len(cols) > 0:
			wide, err := schema.New(tbl.Name, append(append([]schema.Column(nil), tbl.Columns...), cols...))
			if err != nil {
				return err
			}
			wide.ID, wide.TimeIndex, wide.Cluster = tbl.ID, tbl.TimeIndex, tbl.Cluster
			p.add, p.want = cols, wide
		default:
			p.want = tbl
		}
		if p.rec, err = build(p.want, pts); err != nil {
			return err
		}
	}
	newTables := 0
	for _, p := range plans {
		if p.create != nil {
			newTables++
		}
	}
	if newTables > maxNewTables {
		return sqlerr.New(sqlerr.ProgramLimitExceeded, "the request would create %d tables; one request creates at most %d (send the points of new measurements in smaller batches)", newTables, maxNewTables)
	}
	// One policy for every way in: making tables and columns needs
	// CREATE on schema public, as CREATE TABLE and ADD COLUMN do.
	for i, name := range order {
		if p := plans[i]; (p.create != nil || len(p.add) > 0) && h.roles != nil && !h.roles.Allowed(user, auth.Create) {
			what := "table " + name
			if p.create == nil {
				what = fmt.Sprintf("columns of table %s (%s…)", name, p.add[0].Name)
			}
			return sqlerr.New(sqlerr.InsufficientPrivilege, "role %q may not create %s: GRANT CREATE ON SCHEMA public TO %s, or create it as the admin", user, what, user)
		}
	}
	for i, name := range order {
		p := plans[i]
		switch {
		case p.create != nil:
			if _, err := h.store.CreateTable(ctx, *p.create, true); err != nil {
				return err
			}
		case len(p.add) > 0:
			if err := h.store.AddColumns(ctx, name, p.add); err != nil {
				return err
			}
		}
		rec := p.rec
		if tbl, _ := h.store.Table(name); !sameColumns(tbl, p.want) {
			// Another request changed the table first: build again for
			// the columns it has now.
			var err error
			if rec, err = build(tbl, byTable[name]); err != nil {
				return err
			}
		}
		if _, err := h.store.Insert(ctx, name, rec); err != nil {
			return err
		}
	}
	return nil
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

// missingColumns are the tags and fields of pts that tbl lacks: tags (TEXT)
// first, then fields by their type, each group sorted.
func missingColumns(name string, tbl schema.Table, pts []Point) ([]schema.Column, error) {
	tags, fields := map[string]bool{}, map[string]byte{}
	for _, p := range pts {
		for k := range p.Tags {
			tags[k] = true
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
		if tags[k] {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "measurement %s: %q is both a tag and a field", name, k)
		}
		if tbl.ColumnIndex(k) < 0 {
			cols = append(cols, schema.Column{Name: k, Type: columnType(fields[k])})
		}
	}
	for _, c := range cols {
		if !schema.ValidName(c.Name) {
			return nil, sqlerr.New(sqlerr.InvalidName, "measurement %s: %q cannot be a column name: use lower-case letters, digits and underscores", name, c.Name)
		}
	}
	return cols, nil
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

// build converts points into a record with the table's columns.
func build(tbl schema.Table, pts []Point) (arrow.RecordBatch, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer bld.Release()
	for _, p := range pts {
		set := make([]bool, len(tbl.Columns))
		set[tbl.TimeIndex] = true
		bld.Field(tbl.TimeIndex).(*array.TimestampBuilder).Append(arrow.Timestamp(p.Micros))
		vals := map[int]any{}
		for k, v := range p.Tags {
			i := tbl.ColumnIndex(k)
			if i < 0 || tbl.Columns[i].Type != schema.Text {
				return nil, unknownColumn(p.Line, tbl, k, "text")
			}
			vals[i] = v
		}
		for _, f := range p.Fields {
			i := tbl.ColumnIndex(f.Key)
			if i < 0 {
				return nil, unknownColumn(p.Line, tbl, f.Key, columnType(f.Kind).String())
			}
			vals[i] = f
		}
		for i, c := range tbl.Columns {
			if i == tbl.TimeIndex {
				continue
			}
			v, ok := vals[i]
			if !ok {
				if c.NotNull {
					return nil, sqlerr.New(sqlerr.NotNullViolation, "line %d: %s: column %q is NOT NULL and the line has no value for it", p.Line, tbl.Name, c.Name)
				}
				bld.Field(i).AppendNull()
				continue
			}
			if err := appendValue(bld.Field(i), c, v); err != nil {
				// The client's fault: InfluxDB answers a field type
				// conflict with 400.
				return nil, sqlerr.Wrap(sqlerr.DatatypeMismatch, fmt.Errorf("line %d: %s.%s: %w", p.Line, tbl.Name, c.Name, err))
			}
		}
	}
	return bld.NewRecordBatch(), nil
}

func unknownColumn(line int, tbl schema.Table, name, ty string) error {
	return sqlerr.New(sqlerr.DatatypeMismatch, "line %d: table %s has a column %q, but not of type %s", line, tbl.Name, name, ty)
}

func appendValue(b array.Builder, c schema.Column, v any) error {
	if s, ok := v.(string); ok { // a tag
		b.(*array.StringBuilder).Append(s)
		return nil
	}
	f := v.(Field)
	switch bb := b.(type) {
	case *array.Float64Builder:
		switch f.Kind {
		case 'f':
			bb.Append(f.F)
		case 'i':
			bb.Append(float64(f.I))
		default:
			return errors.New("expects a number")
		}
	case *array.Float32Builder:
		if f.Kind != 'f' && f.Kind != 'i' {
			return errors.New("expects a number")
		}
		bb.Append(float32(f.F + float64(f.I)))
	case *array.Int64Builder:
		if f.Kind != 'i' {
			return errors.New("expects an integer (write 3i)")
		}
		bb.Append(f.I)
	case *array.Int32Builder:
		if f.Kind != 'i' || f.I != int64(int32(f.I)) {
			return errors.New("expects an integer within int4")
		}
		bb.Append(int32(f.I))
	case *array.Int16Builder:
		if f.Kind != 'i' || f.I != int64(int16(f.I)) {
			return errors.New("expects an integer within int2")
		}
		bb.Append(int16(f.I))
	case *array.BooleanBuilder:
		if f.Kind != 'b' {
			return errors.New("expects a boolean")
		}
		bb.Append(f.B)
	case *array.StringBuilder:
		if f.Kind != 's' {
			return errors.New("expects a string")
		}
		bb.Append(f.S)
	default:
		return fmt.Errorf("cannot take line-protocol values (type %s)", c.Type)
	}
	return nil
}
