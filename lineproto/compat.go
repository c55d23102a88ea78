package lineproto

import (
	"encoding/json"
	"net/http"
	"strings"
)

// InfluxDB clients check a server and prepare a database before they
// write; tsdb answers those two requests so that they start without extra
// configuration.

// PingHandler answers GET or HEAD /ping as InfluxDB does: 204, with the
// version header clients read.
func PingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Influxdb-Version", "1.8-tsdb")
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
