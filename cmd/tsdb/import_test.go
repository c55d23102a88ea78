package main

import (
	"bufio"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestCSVBatchReader reads files in batches as tsdb import sends them:
// each batch ends after its limit of whole rows or at the end of the row
// that reaches its limit of bytes (a quoted newline does not end a row,
// nor does a line longer than the read buffer end before its newline),
// returns every byte once, and names the file lines its rows
// start on, also when a line is longer than the read buffer and when the
// last line has no newline.
func TestCSVBatchReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	cases := []struct {
		name    string
		file    string
		limit   int
		bytes   int // 0: no limit
		batches []string
		lines   [][]int // rowLines of each batch
	}{
		{"even", "a\nb\nc\nd\n", 2, 0, []string{"a\nb\n", "c\nd\n"}, [][]int{{1, 2, 3}, {3, 4, 5}}},
		{"rest", "a\nb\nc\n", 2, 0, []string{"a\nb\n", "c\n"}, [][]int{{1, 2, 3}, {3, 4}}},
		{"no final newline", "a\nb\nc", 2, 0, []string{"a\nb\n", "c"}, [][]int{{1, 2, 3}, {3, 4}}},
		{"quoted newline", "\"a\nx\",1\nb\nc\n", 1, 0, []string{"\"a\nx\",1\n", "b\n", "c\n"}, [][]int{{1, 3}, {3, 4}, {4, 5}}},
		{"longer than the buffer", "1," + long + "\n2\n", 1, 0, []string{"1," + long + "\n", "2\n"}, [][]int{{1, 2}, {2, 3}}},
		// The last line fills the buffer exactly twice: the read that
		// finds the end of the file returns nothing.
		{"long last line without newline", "a\n" + long[:32], 1, 0, []string{"a\n", long[:32]}, [][]int{{1, 2}, {2, 3}}},
		// By bytes: a batch ends at the row that reaches the limit.
		{"bytes", "ab\ncd\nef\ng\n", 100, 5, []string{"ab\ncd\n", "ef\ng\n"}, [][]int{{1, 2, 3}, {3, 4, 5}}},
		{"bytes before rows", "a\nb\nc\nd\n", 3, 4, []string{"a\nb\n", "c\nd\n"}, [][]int{{1, 2, 3}, {3, 4, 5}}},
		{"rows before bytes", "a\nb\nc\nd\n", 1, 4, []string{"a\n", "b\n", "c\n", "d\n"}, [][]int{{1, 2}, {2, 3}, {3, 4}, {4, 5}}},
		// The limit is reached inside a quoted field and inside a line
		// longer than the buffer (16 bytes): the rows stay whole.
		{"bytes inside quotes", "\"a\nb\nc\",1\nd\n", 100, 2, []string{"\"a\nb\nc\",1\n", "d\n"}, [][]int{{1, 4}, {4, 5}}},
		{"bytes inside a long line", "1," + long + "\n2\n", 100, 20, []string{"1," + long + "\n", "2\n"}, [][]int{{1, 2}, {2, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tc.file), 16)
			b := &csvBatchReader{r: r, limit: tc.limit, maxBytes: tc.bytes, line: 1}
			var got []string
			var lines [][]int
			for !b.eof {
				if _, err := r.Peek(1); err == io.EOF {
					break
				}
				b.begin()
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
				got = append(got, sb.String())
				lines = append(lines, append([]int(nil), b.rowLines...))
			}
			if !reflect.DeepEqual(got, tc.batches) {
				t.Fatalf("batches %q, want %q", got, tc.batches)
			}
			if !reflect.DeepEqual(lines, tc.lines) {
				t.Fatalf("row lines %v, want %v", lines, tc.lines)
			}
			if b.read != int64(len(tc.file)) {
				t.Fatalf("read %d bytes of %d", b.read, len(tc.file))
			}
		})
	}
}
