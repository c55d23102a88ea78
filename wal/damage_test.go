package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// garble rewrites entry seq's value in badger with a payload that does not
// match its checksum, as damage on disk would leave it.
func garble(t *testing.T, w *WAL, seq uint64) {
	t.Helper()
	w.mu.Lock()
	l, ok := w.live[seq]
	w.mu.Unlock()
	if !ok {
		t.Fatalf("entry %d is not in the log", seq)
	}
	err := w.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(l.key(seq))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		v[len(v)-1] ^= 0x40
		return txn.Set(l.key(seq), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// big returns a payload that badger keeps in its value log (above the
// 1 KiB threshold), starting with tag so that tests can find it on disk.
func big(tag string) []byte {
	return []byte(tag + strings.Repeat(".", 4<<10))
}

// openWithBig opens a WAL in dir holding three large entries tagged AAAA,
// BBBB and CCCC.
func openWithBig(t *testing.T, dir string) *WAL {
	t.Helper()
	w, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"AAAA", "BBBB", "CCCC"} {
		if _, err := w.Append(context.Background(), [][]byte{big(tag)}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// flipOnDisk flips a byte in the middle of the payload that starts with
// tag, in whichever of dir's files holds it.
func flipOnDisk(t *testing.T, dir, tag string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(tag)); i >= 0 {
			b[i+2<<10] ^= 0x40
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no file in %s holds %q", dir, tag)
}

// A payload damaged on disk is reported with its sequence, quarantined and
// skipped, and does not come back; the entries before it replay. Badger
// cuts the value-log file being written at its first damaged entry when
// it opens (it cannot tell damage from a torn tail there), so entries
// after the damage in that file are reported too: lost, never silent.
func TestDamagedValueIsQuarantined(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := openWithBig(t, dir)
	w.Close()
	flipOnDisk(t, dir, "BBBB")
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	var bad []*CorruptionError
	replay := func() {
		got, bad = nil, nil
		err := w.Replay(ctx, func(seq uint64, p []byte) error {
			got = append(got, seq)
			return nil
		}, func(ce *CorruptionError) { bad = append(bad, ce) })
		if err != nil {
			t.Fatal(err)
		}
	}
	replay()
	reported := map[uint64]bool{}
	for _, ce := range bad {
		reported[ce.Seq] = true
	}
	if len(got) == 0 || got[0] != 1 || !reported[2] || len(got)+len(bad) != 3 || (len(got) == 2 && got[1] != 3) {
		t.Fatalf("replay %v, corrupt %v; want 1 replayed, 2 reported, 3 replayed or reported", got, bad)
	}
	want := fmt.Sprint(got)
	if _, err := os.Stat(filepath.Join(dir, quarantineDir, fmt.Sprintf("%020d", 2))); err != nil {
		t.Fatalf("no quarantined copy of entry 2: %v", err)
	}
	w = reopen(t, w, Options{})
	replay()
	if fmt.Sprint(got) != want || len(bad) != 0 {
		t.Fatalf("after reopen: replay %v, corrupt %v: the quarantined entry came back", got, bad)
	}
}

// A process killed while badger wrote leaves the value log's tail torn:
// the WAL opens, every entry synced before is intact, and the torn one is
// never replayed as if whole.
func TestTornValueLogTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := openWithBig(t, dir)
	// A copy of the files as a SIGKILL leaves them (no Close), with the
	// last value cut in the middle.
	crashed := t.TempDir()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte("CCCC")); i >= 0 && strings.HasSuffix(e.Name(), ".vlog") {
			clear(b[i+1<<10:])
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	w, err := Open(ctx, crashed, Options{})
	if err != nil {
		t.Fatalf("open after a torn write: %v", err)
	}
	defer w.Close()
	var got []string
	err = w.Replay(ctx, func(seq uint64, p []byte) error {
		got = append(got, fmt.Sprintf("%d=%s", seq, p[:4]))
		return nil
	}, func(ce *CorruptionError) { got = append(got, fmt.Sprintf("corrupt %d", ce.Seq)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || fmt.Sprint(got[:2]) != "[1=AAAA 2=BBBB]" || (len(got) == 3 && got[2] != "corrupt 3") || len(got) > 3 {
		t.Fatalf("replay after a torn write: %v; want 1 and 2 intact, 3 gone or reported", got)
	}
	if s, err := w.Append(ctx, [][]byte{[]byte("d")}); err != nil || s < 3 {
		t.Fatalf("append after a torn write: %d %v", s, err)
	}
}

// A data directory of the badger WAL tsdb wrote before the segment log
// (same keys) opens as it is.
func TestEarlierBadgerLayoutOpens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true).WithValueThreshold(1 << 10))
	if err != nil {
		t.Fatal(err)
	}
	val := func(p string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, crc32Checksum([]byte(p))), p...)
	}
	err = db.Update(func(txn *badger.Txn) error {
		for k, v := range map[string][]byte{
			string(entryKey(3)): val("three"),
			string(entryKey(5)): val("five"),
			"m/next":            u64(9),
		} {
			if err := txn.Set([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[3=three 5=five]" || len(bad) != 0 || w.NextSeq() != 9 {
		t.Fatalf("replay %v, corrupt %v, next %d", got, bad, w.NextSeq())
	}
}

// Badger only logs a failed value-log fsync and reports the write as
// done. The WAL catches the message: the write is not acknowledged, and
// nothing more is written until a restart, as after any failed sync.
func TestValueLogSyncFailureIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	w := openWithA(t)
	// What badger's value log does when fsync fails (value.go).
	badgerLogger{l: w.logger, syncFailed: w.syncFailed}.Errorf("Error while curlf sync: %v\n", errors.New("input/output error"))
	if _, err := w.Append(ctx, [][]byte{[]byte("b")}); err == nil || !strings.Contains(err.Error(), "could not sync") {
		t.Fatalf("append after a failed value-log sync: %v", err)
	}
	if _, err := w.Append(ctx, [][]byte{[]byte("c")}); err == nil {
		t.Fatal("the WAL took a write after a failed sync")
	}
}
