package lineproto

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/klauspost/compress/gzip"

	"tsdb/ingest"
	"tsdb/internal/auth"
	"tsdb/internal/sqlerr"
)

// Handler serves InfluxDB-compatible writes: POST /write (v1, db and
// precision parameters) and /api/v2/write (v2, bucket and precision). A
// request is acknowledged with 204 only when its rows are durable in the
// WAL. When passwords are configured the request must authenticate (HTTP
// basic auth, or "Authorization: Token user:password") as a role that may
// write rows. Points of a table with dedup_keys (every table line
// protocol creates has its tag set) go through merged, which replaces
// the table's row of each point.
func Handler(store *ingest.Store, roles *auth.Store, maxBody int64, merged MergedWriter) http.Handler {
	return &handler{store: store, roles: roles, maxBody: maxBody, merged: merged}
}

// MergedWriter writes the rows of one table with dedup_keys as user: each
// replaces the table's row of its point, keeping the fields it lacks
// (planner.Planner.WriteMerged). It returns the number of rows written.
type MergedWriter func(ctx context.Context, user, table string, rec arrow.RecordBatch) (int64, error)

type handler struct {
	store   *ingest.Store
	roles   *auth.Store
	maxBody int64
	merged  MergedWriter
	// bodies holds request body buffers between requests: a body is read
	// whole (and points copy what they keep), so its buffer can serve the
	// next request instead of growing a new one from nothing.
	bodies sync.Pool
	// parsers holds parsers between requests: one keeps the names it
	// interned and its chunks of tags and fields, which it fills again
	// for the next request once the points of the last are written.
	parsers sync.Pool
	// gunzips holds gzip readers between requests: a reader's inflate
	// state (its window and tables) is reset for the next body, not
	// allocated again.
	gunzips sync.Pool
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
		zr, _ := h.gunzips.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(r.Body)
		} else {
			err = zr.Reset(r.Body)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "gzip body: "+err.Error())
			return
		}
		defer func() {
			zr.Close()
			h.gunzips.Put(zr)
		}()
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
	unit, err := precisionUnit(r.URL.Query().Get("precision"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	ps, _ := h.parsers.Get().(*parser)
	if ps == nil {
		ps = newParser()
	}
	// Back to the pool when the request is done: its points are parts of
	// the parser's chunks until then.
	defer func() {
		ps.release()
		h.parsers.Put(ps)
	}()
	points, bad, err := ps.parse(body, unit, time.Now())
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
