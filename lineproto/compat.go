package lineproto

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// InfluxDB clients check a server and prepare a database before they
// write; tsdb answers those two requests so that they start without extra
// configuration.

// influxVersion is the version tsdb answers InfluxDB clients with.
const influxVersion = "1.8-tsdb"

// PingHandler answers GET or HEAD /ping as InfluxDB does: 204, with the
// version header clients read.
func PingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Influxdb-Version", influxVersion)
		w.Header().Set("X-Influxdb-Build", "OSS")
		w.WriteHeader(http.StatusNoContent)
	})
}

// QueryHandler answers /query (InfluxDB 1.x). CREATE DATABASE, which
// Telegraf's influxdb output sends when it starts, succeeds and does
// nothing: tsdb has one database, and writes create their tables. Other
// InfluxQL is refused with 400: tsdb is queried in SQL.
func QueryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := strings.TrimSpace(r.FormValue("q"))
		if fields := strings.Fields(q); len(fields) >= 3 && strings.EqualFold(fields[0], "CREATE") && strings.EqualFold(fields[1], "DATABASE") {
			json.NewEncoder(w).Encode(map[string]any{"results": []map[string]any{{"statement_id": 0}}})
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "tsdb answers InfluxQL's CREATE DATABASE only; query it in SQL over the PostgreSQL protocol"})
	})
}

// WantsJSON reports whether a /health request comes from an InfluxDB
// client, which reads InfluxDB's JSON answer (Health() in the 2.x
// clients), or asks for JSON; probes and people get tsdb's text.
func WantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") ||
		strings.HasPrefix(strings.ToLower(r.Header.Get("User-Agent")), "influxdb-client")
}

// WriteHealth answers /health as InfluxDB does: status "pass" with 200,
// "fail" otherwise, the message saying why.
func WriteHealth(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	state := "pass"
	if status != http.StatusOK {
		state = "fail"
	}
	json.NewEncoder(w).Encode(map[string]any{"name": "tsdb", "message": message, "status": state, "version": influxVersion, "checks": []any{}})
}

// ReadyHandler answers GET /ready as InfluxDB 2 does (Ready() in its
// clients): 200 {"status": "ready"} once the server is up, 503 before.
func ReadyHandler(ready func() bool, started time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "not ready", "message": "replaying the WAL"})
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"status": "ready", "started": started.UTC().Format(time.RFC3339Nano), "up": time.Since(started).Round(time.Millisecond).String()})
	})
}
