package main

import (
	"flag"
	"testing"
	"time"
)

func TestParseConfigEnvAndFlags(t *testing.T) {
	env := map[string]string{"TSDB_PG_ADDR": "127.0.0.1:6000", "TSDB_BUCKET_DURATION": "5m", "TSDB_MEMORY_LIMIT": "2GiB"}
	cfg, err := parseConfig([]string{"--bucket-duration", "1h"}, func(k string) string { return env[k] }, func(*flag.FlagSet) {})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PGAddr != "127.0.0.1:6000" || cfg.BucketDuration != time.Hour || cfg.MemoryLimit != 2<<30 || cfg.DataDir != "./data" {
		t.Fatalf("config %+v", cfg)
	}
	if _, err := parseConfig(nil, func(k string) string { return map[string]string{"TSDB_IDLE_FLUSH": "soon"}[k] }, func(*flag.FlagSet) {}); err == nil {
		t.Fatal("bad env value accepted")
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"32MiB", 32 << 20, true}, {"2GiB", 2 << 30, true}, {"1.5GiB", 3 << 29, true},
		{"100MB", 100e6, true}, {"4096", 4096, true}, {"lots", 0, false}, {"-1", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v", tt.in, got, err)
		}
	}
}
