// Package otherwriter writes Parquet files as other Delta writers do, with
// arrow-go's Parquet writer (a Parquet implementation that is not the one
// tsdb writes with), for tests of how tsdb reads them.
package otherwriter

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// WriteFile writes rec to path as one Parquet file (format 2.6; with
// int96, timestamps as Spark's INT96).
func WriteFile(tb testing.TB, path string, rec arrow.RecordBatch, int96 bool) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithVersion(parquet.V2_6)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithDeprecatedInt96Timestamps(int96)))
	if err != nil {
		f.Close()
		tb.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}
