package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

// bodyFile is a list of request bodies spooled to a file.
type bodyFile struct {
	path string
	offs []int64 // body i is bytes [offs[i], offs[i+1])
}

// add appends a body to the file w writes.
func (b *bodyFile) add(w io.Writer, body []byte) error {
	if len(b.offs) == 0 {
		b.offs = append(b.offs, 0)
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	b.offs = append(b.offs, b.offs[len(b.offs)-1]+int64(len(body)))
	return nil
}

func (b *bodyFile) len() int { return max(0, len(b.offs)-1) }

// read reads body i from f, the open file.
func (b *bodyFile) read(f *os.File, i int) ([]byte, error) {
	body := make([]byte, b.offs[i+1]-b.offs[i])
	_, err := f.ReadAt(body, b.offs[i])
	return body, err
}

func (b *bodyFile) remove() {
	if b != nil {
		os.Remove(b.path)
	}
}

// lineBodies renders the rows as line-protocol request bodies, plain and
// gzip-compressed, into files in dir: tags as tags, metrics as float
// fields, nanosecond timestamps.
func lineBodies(d *dataset, dir string) (plain, gz *bodyFile, err error) {
	plain = &bodyFile{path: filepath.Join(dir, "lines.lp")}
	gz = &bodyFile{path: filepath.Join(dir, "lines.lp.gz")}
	pf, err := os.Create(plain.path)
	if err != nil {
		return nil, nil, err
	}
	defer pf.Close()
	gf, err := os.Create(gz.path)
	if err != nil {
		plain.remove()
		return nil, nil, err
	}
	defer gf.Close()
	pw, gw := bufio.NewWriterSize(pf, 1<<20), bufio.NewWriterSize(gf, 1<<20)
	var b []byte
	var z bytes.Buffer
	n := 0
	flush := func() error {
		if err := plain.add(pw, b); err != nil {
			return err
		}
		z.Reset()
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(b); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if err := gz.add(gw, z.Bytes()); err != nil {
			return err
		}
		b, n = b[:0], 0
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
	for _, w := range []*bufio.Writer{pw, gw} {
		if err == nil {
			err = w.Flush()
		}
	}
	for _, f := range []*os.File{pf, gf} {
		if err == nil {
			err = f.Sync() // see generate
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		plain.remove()
		gz.remove()
		return nil, nil, fmt.Errorf("rendering line protocol: %w", err)
	}
	return plain, gz, nil
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
func postLines(ctx context.Context, base string, bodies *bodyFile, gzipped bool) error {
	f, err := os.Open(bodies.path)
	if err != nil {
		return err
	}
	defer f.Close()
	work := make(chan int)
	errs := make(chan error, lineWriters)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Minute}
	for range lineWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				body, err := bodies.read(f, i)
				if err != nil {
					errs <- err
					return
				}
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
send:
	for i := range bodies.len() {
		select {
		case work <- i:
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
