package main

import (
	"flag"
	"strings"
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

func TestParseConfigStorage(t *testing.T) {
	creds := map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantErr  string
		endpoint string
		region   string
	}{
		{name: "local by default", args: nil},
		{name: "AWS endpoint from the region", args: []string{"--storage", "s3://b/p"}, env: map[string]string{"AWS_REGION": "eu-west-1"}, endpoint: "https://s3.eu-west-1.amazonaws.com", region: "eu-west-1"},
		{name: "endpoint from the environment", args: []string{"--storage", "s3://b"}, env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:7070"}, endpoint: "http://127.0.0.1:7070", region: "us-east-1"},
		{name: "flag wins over the environment", args: []string{"--storage", "s3://b", "--s3-endpoint", "http://h:1"}, env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:7070"}, endpoint: "http://h:1", region: "us-east-1"},
		{name: "not an s3 URL", args: []string{"--storage", "/mnt/lake"}, wantErr: "s3://bucket/prefix"},
		{name: "no credentials", args: []string{"--storage", "s3://b"}, env: map[string]string{"AWS_ACCESS_KEY_ID": ""}, wantErr: "AWS_ACCESS_KEY_ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if v, ok := tc.env[k]; ok {
					return v
				}
				return creds[k]
			}
			cfg, err := parseConfig(tc.args, getenv, func(*flag.FlagSet) {})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.S3.Endpoint != tc.endpoint || cfg.S3.Region != tc.region {
				t.Fatalf("endpoint %q region %q, want %q %q", cfg.S3.Endpoint, cfg.S3.Region, tc.endpoint, tc.region)
			}
		})
	}
}

func TestGoMemoryLimit(t *testing.T) {
	for _, tc := range []struct{ limit, want int64 }{
		{256 << 20, 768 << 20}, // at least 512 MiB beside the rows
		{1 << 30, 1536 << 20},  // 1 GiB and 512 MiB
		{4 << 30, 6 << 30},     // half as much again
		{6 << 30, 9 << 30},
	} {
		if got := goMemoryLimit(tc.limit); got != tc.want {
			t.Errorf("goMemoryLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
