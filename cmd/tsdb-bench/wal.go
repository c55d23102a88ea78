package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"tsdb/wal"
)

// walReplay is how fast a restart replays the WAL.
type walReplay struct {
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	WALBytes   int64   `json:"wal_bytes_on_disk"`
}

// replayLine is the log line a start writes after replaying the WAL.
var replayLine = regexp.MustCompile(`msg="wal replayed".* rows=(\d+) .*duration=(\S+)`)

// benchReplay loads the whole data set by COPY into a server that flushes
// nothing, kills it (SIGKILL: nothing is flushed on the way out), and
// measures the replay of the next start from its log.
func benchReplay(ctx context.Context, c config, logger *slog.Logger, dir string, data *loadData, rep *report) error {
	flags := []string{"--memory-limit", "4GiB", "--idle-flush", "24h", "--max-bucket-bytes", "1GiB", "--compact-interval", "-1s"}
	s, err := startTSDB(ctx, c.binary, dir, append(flags, "--log-level", "warn"))
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		s.stop()
		return err
	}
	if _, err := conn.Exec(ctx, createTable("cpu_replay")); err != nil {
		s.stop()
		return err
	}
	if err := data.copyFile(ctx, conn, "cpu_replay", 0, data.csvSize); err != nil {
		s.stop()
		return err
	}
	conn.Close(ctx)
	walBytes := wal.DiskUsage(filepath.Join(dir, "wal"))
	s.cmd.Process.Kill()
	<-s.died
	s, err = startTSDB(ctx, c.binary, dir, append(flags, "--log-level", "info"))
	if err != nil {
		return err
	}
	defer s.stop()
	m := replayLine.FindStringSubmatch(s.logs.String())
	if m == nil {
		return fmt.Errorf("no replay line in the log:\n%s", s.logs.String())
	}
	rows, _ := strconv.ParseInt(m[1], 10, 64)
	d, err := time.ParseDuration(m[2])
	if err != nil {
		return fmt.Errorf("replay duration %q: %w", m[2], err)
	}
	if rows != int64(data.rows) {
		return fmt.Errorf("replayed %d rows, loaded %d", rows, data.rows)
	}
	rep.WALReplay = &walReplay{Rows: rows, Seconds: d.Seconds(), RowsPerSec: float64(rows) / max(d.Seconds(), 1e-9), WALBytes: walBytes}
	logger.Info("tsdb WAL replay", "rows", rows, "seconds", d.Seconds(), "rows_per_sec", int64(rep.WALReplay.RowsPerSec), "wal_mib", walBytes>>20)
	return nil
}

// walDay is the WAL's disk use over a simulated day of ingest and flushes.
type walDay struct {
	Hosts          int     `json:"hosts"`
	WrittenBytes   int64   `json:"written_bytes"`
	PeakUnflushed  int64   `json:"peak_unflushed_bytes"`
	PeakDisk       int64   `json:"peak_disk_bytes"`
	MaxRatio       float64 `json:"max_disk_over_unflushed"`
	MeanRatio      float64 `json:"mean_disk_over_unflushed"`
	EndDisk        int64   `json:"end_disk_bytes"`
	EndUnflushed   int64   `json:"end_unflushed_bytes"`
	AppendsPerHour int     `json:"appends_per_hour"`
}

// benchWALDay drives the WAL package as the server does over a day of the
// data set's ingest rate scaled to hosts: every simulated hour is a time
// bucket, written as 1,000-row entries of the size tsdb's WAL gives such
// rows, and each bucket is flushed (its entries deleted, then
// ReclaimIfDue, as the flusher does) half-way through the next hour, as a
// bucket closes and its flush follows. The reclaim
// loop runs on its own schedule, compressed like the day: every 5
// simulated minutes. Disk use is sampled after every append.
func benchWALDay(ctx context.Context, logger *slog.Logger, dir string, hosts int, bytesPerRow float64) (*walDay, error) {
	const hours = 24
	rowsPerHour := hosts * 360 // one row per host every 10 s
	entryBytes := int(bytesPerRow * 1000)
	perHour := max(rowsPerHour/1000, 1)
	hourTime := 2 * time.Second // of real time per simulated hour
	w, err := wal.Open(ctx, dir, wal.Options{ReclaimInterval: hourTime / 12})
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	payload := make([]byte, entryBytes)
	for i := range payload {
		payload[i] = byte(i*7 + i>>9)
	}
	day := &walDay{Hosts: hosts, AppendsPerHour: perHour}
	var (
		prev, cur []uint64
		unflushed int64
		ratios    float64
		samples   int
	)
	start := time.Now()
	for h := 0; h < hours; h++ {
		for i := 0; i < perHour; i++ {
			seq, err := w.Append(ctx, [][]byte{payload})
			if err != nil {
				return nil, err
			}
			cur = append(cur, seq)
			unflushed += int64(entryBytes)
			day.WrittenBytes += int64(entryBytes)
			if i == perHour/2 && len(prev) > 0 {
				if err := w.Delete(ctx, prev); err != nil {
					return nil, err
				}
				// As the flusher does after a flush.
				if err := w.ReclaimIfDue(ctx); err != nil {
					return nil, err
				}
				unflushed -= int64(len(prev)) * int64(entryBytes)
				prev = nil
			}
			disk := w.DiskBytes()
			day.PeakDisk = max(day.PeakDisk, disk)
			day.PeakUnflushed = max(day.PeakUnflushed, unflushed)
			if h > 0 {
				r := float64(disk) / float64(unflushed)
				day.MaxRatio = max(day.MaxRatio, r)
				ratios += r
				samples++
			}
			// Pace the day: appends spread over the hour's real time.
			due := start.Add(time.Duration(h)*hourTime + time.Duration(i+1)*hourTime/time.Duration(perHour))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(d):
				}
			}
		}
		prev, cur = cur, nil
	}
	// Give the last reclaim its turn.
	time.Sleep(hourTime / 6)
	day.MeanRatio = ratios / float64(max(samples, 1))
	day.EndDisk, day.EndUnflushed = w.DiskBytes(), unflushed
	logger.Info("WAL over a simulated day", "hosts", hosts, "written_mib", day.WrittenBytes>>20, "peak_unflushed_mib", day.PeakUnflushed>>20,
		"peak_disk_mib", day.PeakDisk>>20, "max_disk_over_unflushed", fmt.Sprintf("%.2f", day.MaxRatio), "mean", fmt.Sprintf("%.2f", day.MeanRatio))
	// Closed before its files go: badger retries a failed memtable flush
	// forever, and Close waits for it.
	closed = true
	if err := w.Close(); err != nil {
		return nil, err
	}
	return day, os.RemoveAll(dir)
}
