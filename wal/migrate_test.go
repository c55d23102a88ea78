package wal

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// segRecord is one record of the segment log tsdb wrote before badger.
func segRecord(typ byte, aux uint32, seq uint64, p []byte) []byte {
	b := make([]byte, segHeaderSize+len(p))
	copy(b[segHeaderSize:], p)
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(p, castagnoli))
	binary.BigEndian.PutUint32(b[8:], uint32(len(p)))
	binary.BigEndian.PutUint32(b[12:], aux)
	b[12] = typ
	binary.BigEndian.PutUint64(b[16:], seq)
	binary.BigEndian.PutUint32(b, crc32.Checksum(b[4:segHeaderSize], castagnoli))
	return b
}

func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

// writeSegmentLog writes a segment log with what the old format could
// hold: a two-entry append, a tombstone, a committed stage with a part in
// the next segment, an aborted stage's part, an entry whose payload fails
// its checksum, a mark raising the next sequence, and a torn tail.
func writeSegmentLog(t *testing.T, dir string) {
	t.Helper()
	var seg1, seg2 []byte
	seg1 = append(seg1, segRecord(segEntry, 1, 1, []byte("one"))...)
	seg1 = append(seg1, segRecord(segEntry, 0, 2, []byte("two"))...)
	seg1 = append(seg1, segRecord(segEntry, 0, 3, []byte("three"))...)
	seg1 = append(seg1, segRecord(segPart, 0, 7, []byte("p0"))...)
	seg1 = append(seg1, segRecord(segPart, 0, 8, []byte("aborted"))...)
	seg1 = append(seg1, segRecord(segTombstone, 0, 0, binary.BigEndian.AppendUint64(nil, 2))...)
	seg2 = append(seg2, segRecord(segPart, 1, 7, []byte("p1"))...)
	commit := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 7), 2)
	seg2 = append(seg2, segRecord(segCommit, 0, 4, commit)...)
	bad := segRecord(segEntry, 0, 6, []byte("garbled"))
	bad[len(bad)-1] ^= 0x40
	seg2 = append(seg2, bad...)
	seg2 = append(seg2, segRecord(segNextSeq, 0, 20, nil)...)
	seg2 = append(seg2, segRecord(segEntry, 0, 21, []byte("torn"))[:26]...)
	if err := os.WriteFile(filepath.Join(dir, segName(1)), seg1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segName(4)), seg2, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A data directory whose WAL is a segment log opens with every live entry
// under its sequence, the damaged one quarantined and reported, and the
// segments gone.
func TestSegmentLogIsConverted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeSegmentLog(t, dir)
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, bad := replayAll(t, w)
	if fmt.Sprint(got) != "[1=one 3=three 4=p0 5=p1]" || w.NextSeq() != 20 {
		t.Fatalf("converted: replay %v, next %d", got, w.NextSeq())
	}
	if len(bad) != 1 || bad[0].Seq != 6 {
		t.Fatalf("corrupt %v, want entry 6 reported", bad)
	}
	if b, err := os.ReadFile(filepath.Join(dir, quarantineDir, fmt.Sprintf("%020d", 6))); err != nil || string(b) != "garblee" && !strings.HasPrefix(string(b), "garbl") {
		t.Fatalf("quarantined entry 6: %q %v", b, err)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix)); len(segs) != 0 {
		t.Fatalf("segments left after conversion: %v", segs)
	}
	w = reopen(t, w, Options{})
	if got, bad := replayAll(t, w); fmt.Sprint(got) != "[1=one 3=three 4=p0 5=p1]" || len(bad) != 0 {
		t.Fatalf("after reopen: replay %v, corrupt %v", got, bad)
	}
	if s, err := w.Append(ctx, [][]byte{[]byte("new")}); err != nil || s != 20 {
		t.Fatalf("append after conversion: %d %v", s, err)
	}
}

// A conversion cut short after the oldest segment was removed runs again
// on what is left and loses nothing, resurrects nothing.
func TestSegmentConversionResumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeSegmentLog(t, dir)
	seg2, err := os.ReadFile(filepath.Join(dir, segName(4)))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, w) // quarantines entry 6, as the first start would
	w.Close()
	// As if the first conversion had stopped before removing segment 2.
	if err := os.WriteFile(filepath.Join(dir, segName(4)), seg2, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, _ := replayAll(t, w)
	if fmt.Sprint(got) != "[1=one 3=three 4=p0 5=p1]" || w.NextSeq() != 20 {
		t.Fatalf("after a resumed conversion: replay %v, next %d", got, w.NextSeq())
	}
}
