package main

import (
	"bufio"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCSVBatchReader reads files in batches as tsdb import sends them:
// each batch ends after its limit of whole rows (a quoted newline does not
// end a row), returns every byte once, and names the file lines its rows
// start on, also when a line is longer than the read buffer and when the
// last line has no newline.
func TestCSVBatchReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	cases := []struct {
		name    string
		file    string
		limit   int
		batches []string
		lines   [][]int // rowLines of each batch
	}{
		{"even", "a\nb\nc\nd\n", 2, []string{"a\nb\n", "c\nd\n"}, [][]int{{1, 2, 3}, {3, 4, 5}}},
		{"rest", "a\nb\nc\n", 2, []string{"a\nb\n", "c\n"}, [][]int{{1, 2, 3}, {3, 4}}},
		{"no final newline", "a\nb\nc", 2, []string{"a\nb\n", "c"}, [][]int{{1, 2, 3}, {3, 4}}},
		{"quoted newline", "\"a\nx\",1\nb\nc\n", 1, []string{"\"a\nx\",1\n", "b\n", "c\n"}, [][]int{{1, 3}, {3, 4}, {4, 5}}},
		{"longer than the buffer", "1," + long + "\n2\n", 1, []string{"1," + long + "\n", "2\n"}, [][]int{{1, 2}, {2, 3}}},
		// The last line fills the buffer exactly twice: the read that
		// finds the end of the file returns nothing.
		{"long last line without newline", "a\n" + long[:32], 1, []string{"a\n", long[:32]}, [][]int{{1, 2}, {2, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tc.file), 16)
			cur := &csvCursor{r: r, line: 1}
			var got []string
			var lines [][]int
			for !cur.eof {
				if _, err := r.Peek(1); err == io.EOF {
					break
				}
				b := newCSVBatchReader(cur, tc.limit, nil)
				// Small reads, as a row may be cut anywhere.
				var sb strings.Builder
				p := make([]byte, 7)
				for {
					n, err := b.Read(p)
					sb.Write(p[:n])
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				select {
				case <-b.readDone:
				default:
					t.Fatal("the batch ended without handing the cursor on")
				}
				got = append(got, sb.String())
				lines = append(lines, b.rowLines)
			}
			if !reflect.DeepEqual(got, tc.batches) {
				t.Fatalf("batches %q, want %q", got, tc.batches)
			}
			if !reflect.DeepEqual(lines, tc.lines) {
				t.Fatalf("row lines %v, want %v", lines, tc.lines)
			}
			if cur.read != int64(len(tc.file)) {
				t.Fatalf("read %d bytes of %d", cur.read, len(tc.file))
			}
		})
	}
}

// TestCSVBatchWaitsForTheOneBefore: a batch read to its end ends its COPY
// (io.EOF, CopyDone) only once the batch before has landed, and fails it
// (CopyFail) if that one did not, also before its rows are all read.
func TestCSVBatchWaitsForTheOneBefore(t *testing.T) {
	for _, failed := range []bool{false, true} {
		cur := &csvCursor{r: bufio.NewReader(strings.NewReader("a\nb\nc\nd\n")), line: 1}
		prev := &csvBatch{landed: make(chan struct{})}
		b := newCSVBatchReader(cur, 2, prev)
		p := make([]byte, 64)
		if n, err := b.Read(p); err != nil || string(p[:n]) != "a\nb\n" {
			t.Fatalf("first read: %q, %v", p[:n], err)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := b.Read(p)
			ended <- err
		}()
		<-b.readDone // the cursor is the next batch's meanwhile
		select {
		case err := <-ended:
			t.Fatalf("the batch ended (%v) before the one before it landed", err)
		case <-time.After(50 * time.Millisecond):
		}
		if failed {
			prev.err = errors.New("bad row")
		}
		close(prev.landed)
		want := io.EOF
		if failed {
			want = errEarlierBatchFailed
		}
		if err := <-ended; err != want {
			t.Fatalf("earlier batch failed %v: the batch ended with %v, want %v", failed, err, want)
		}
		// A batch whose predecessor failed stops at its next read.
		next := newCSVBatchReader(cur, 2, prev)
		if _, err := next.Read(p); failed && err != errEarlierBatchFailed || !failed && err != nil {
			t.Fatalf("earlier batch failed %v: the next batch read with %v", failed, err)
		}
	}
}
