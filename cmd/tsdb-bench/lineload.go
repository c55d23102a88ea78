package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The line-protocol load: the same rows as Telegraf's influxdb output
// sends them, 5,000 lines to a request (its metric_batch_size default is
// 1,000; its users raise it for throughput), by 4 writers at once, once
// as plain text and once gzip-compressed (Telegraf's content_encoding
// default).
const (
	lineBatch   = 5000
	lineWriters = 4
	lineTable   = "cpu_lp"
)

// lineBodies renders the rows as line-protocol request bodies: tags as
// tags, metrics as float fields, nanosecond timestamps.
func lineBodies(d *dataset) (plain, gz [][]byte, err error) {
	var b []byte
	n := 0
	flush := func() error {
		plain = append(plain, b)
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(b); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		gz = append(gz, z.Bytes())
		b, n = nil, 0
		return nil
	}
	err = d.each(func(t time.Time, h *host) error {
		b = append(b, lineTable...)
		for i, v := range h.tags {
			b = append(b, ',')
			b = append(b, tagNames[i]...)
			b = append(b, '=')
			b = appendTagValue(b, v)
		}
		for i, v := range h.metrics {
			if i == 0 {
				b = append(b, ' ')
			} else {
				b = append(b, ',')
			}
			b = append(b, metricNames[i]...)
			b = append(b, '=')
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, t.UnixNano(), 10)
		b = append(b, '\n')
		if n++; n == lineBatch {
			return flush()
		}
		return nil
	})
	if err == nil && n > 0 {
		err = flush()
	}
	return plain, gz, err
}

// appendTagValue escapes what ends a tag value.
func appendTagValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == ' ' || c == ',' || c == '=' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, v[i])
	}
	return b
}

// postLines sends every body to base's /write with lineWriters writers
// and returns when all are written (204) or one failed.
func postLines(ctx context.Context, base string, bodies [][]byte, gzipped bool) error {
	work := make(chan []byte)
	errs := make(chan error, lineWriters)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Minute}
	for range lineWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/write?db=bench&precision=ns", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				if gzipped {
					req.Header.Set("Content-Encoding", "gzip")
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					errs <- fmt.Errorf("line protocol write: %s: %s", resp.Status, msg)
					return
				}
			}
		}()
	}
	var err error
send:
	for _, b := range bodies {
		select {
		case work <- b:
		case err = <-errs:
			break send
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
