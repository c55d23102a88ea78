package main

import (
	"bufio"
	"io"
	"reflect"
	"strings"
	"testing"
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
			b := &csvBatchReader{r: r, limit: tc.limit, line: 1}
			var got []string
			var lines [][]int
			for !b.eof {
				if _, err := r.Peek(1); err == io.EOF {
					break
				}
				b.rows, b.rowLines = 0, append(b.rowLines[:0], b.line)
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
