package delta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"tsdb/internal/lru"
)

// Direct reads of tsdb's own data files, column chunk by column chunk into
// plain Go slices, for the planner's aggregation path that answers simple
// one-table queries without the engine (planner/fastagg.go): a query for
// one host over an hour reads a few row groups, and the engine's per-query
// setup (binding, planning, opening every file) cost ten times the read.

// ScanCache keeps what direct reads of data files decoded: each file's
// parsed footer, and the column chunks read, decoded (the hot hours a
// dashboard asks for again and again are then read from memory, not
// decompressed and decoded again). A data file never changes once written
// (its name is unique and it is only ever deleted), so what was read once
// stays right; the cache holds no file open, so a vacuumed file's disk
// space is freed at once. Chunks are dropped least recently used first
// past the byte budget. Safe for concurrent use.
type ScanCache struct {
	maxBytes int64
	mu       sync.Mutex
	footers  *lru.Cache[string, *parquet.File]
	chunks   *lru.Cache[chunkKey, any] // *IntChunk, *FloatChunk or *TextChunk
	// gathered are the chunks read in part (IntsAt, FloatsAt): the
	// second such read of a chunk decodes and keeps it whole, so a
	// dashboard's repeated query is answered from memory while a one-off
	// query's chunks do not push the hot ones out. A chunk kept once and
	// dropped since is read in part again until it ages out of gathered:
	// a query whose chunks exceed the budget would otherwise decode every
	// chunk whole on every run only to drop it again.
	gathered *lru.Cache[chunkKey, *bool] // true: kept whole once
}

// gatheredKeys bounds the chunks the cache remembers as read in part.
const gatheredKeys = 1 << 16

// footerSize estimates what a parsed footer holds in memory: a few
// hundred bytes per column chunk (statistics, offsets, the schema's
// share).
func footerSize(f *parquet.File) int64 {
	return 2048 + 256*int64(len(f.RowGroups()))*int64(len(f.Schema().Fields()))
}

type chunkKey struct {
	path       string
	group, col int
}

// NewScanCache returns a cache of at most maxFooterBytes of parsed
// footers and maxBytes of decoded column chunks.
func NewScanCache(maxFooterBytes, maxBytes int64) *ScanCache {
	return &ScanCache{maxBytes: maxBytes, footers: lru.New[string, *parquet.File](maxFooterBytes), chunks: lru.New[chunkKey, any](maxBytes),
		gathered: lru.New[chunkKey, *bool](gatheredKeys)}
}

// Bytes is the size of the decoded chunks the cache holds.
func (c *ScanCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chunks.Bytes()
}

func (c *ScanCache) chunk(k chunkKey) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	chunk, _ := c.chunks.Get(k)
	return chunk
}

// gatherOnce reports whether a part of chunk k, which the cache lacks,
// is to be read without keeping the chunk: false only for the second
// read (the caller then keeps it whole).
func (c *ScanCache) gatherOnce(k chunkKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept, seen := c.gathered.Get(k)
	if !seen {
		c.gathered.Add(k, new(bool), 1)
		return true
	}
	if *kept {
		return true
	}
	*kept = true
	return false
}

func (c *ScanCache) putChunk(k chunkKey, chunk any, size int64) {
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks.Add(k, chunk, size)
}

// Open returns the data file at path (a local path) for reading its
// column chunks. The caller closes it.
func (c *ScanCache) Open(path string) (*ScanFile, error) {
	c.mu.Lock()
	meta, ok := c.footers.Get(path)
	c.mu.Unlock()
	if ok {
		return &ScanFile{cache: c, path: path, meta: meta}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delta: read %s: %w", path, err)
	}
	meta, err = parquet.OpenFile(f, info.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true),
		parquet.ReadBufferSize(readBufferSize))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("delta: open %s: %w", path, err)
	}
	c.mu.Lock()
	c.footers.Add(path, meta, footerSize(meta))
	c.mu.Unlock()
	return &ScanFile{cache: c, path: path, meta: meta, f: f}, nil
}

// ScanFile is a data file whose column chunks are read one at a time,
// from the cache or from the file (opened at the first chunk it lacks).
// Not safe for concurrent use.
type ScanFile struct {
	cache *ScanCache
	path  string
	meta  *parquet.File
	f     *os.File // nil until a chunk is read from the file
	// gathered are the chunks this reader read in part: a statement that
	// reads a column twice (a filter, then its kept rows' values) reads
	// it once as far as ScanCache.gathered is concerned.
	gathered map[chunkKey]bool
}

// Close closes the file.
func (s *ScanFile) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Path is the file's path.
func (s *ScanFile) Path() string { return s.path }

// Rows is the number of rows of row group g.
func (s *ScanFile) Rows(g int) int { return int(s.meta.RowGroups()[g].NumRows()) }

// Groups is the number of row groups.
func (s *ScanFile) Groups() int { return len(s.meta.RowGroups()) }

// bounds returns a column chunk's min and max statistics.
func (s *ScanFile) bounds(g, col int) (lo, hi parquet.Value, ok bool) {
	chunk, isFile := s.meta.RowGroups()[g].ColumnChunks()[col].(*parquet.FileColumnChunk)
	if !isFile {
		return lo, hi, false
	}
	lo, hi, ok = chunk.Bounds()
	return lo, hi, ok && !lo.IsNull() && !hi.IsNull()
}

// IntBounds returns the min and max statistics of an INT64 or INT32
// column chunk (a time column: microseconds); ok is false without them.
func (s *ScanFile) IntBounds(g, col int) (lo, hi int64, ok bool) {
	mn, mx, ok := s.bounds(g, col)
	if !ok {
		return 0, 0, false
	}
	switch mn.Kind() {
	case parquet.Int64:
		return mn.Int64(), mx.Int64(), true
	case parquet.Int32:
		return int64(mn.Int32()), int64(mx.Int32()), true
	}
	return 0, 0, false
}

// TextBounds returns the min and max statistics of a BYTE_ARRAY column
// chunk. tsdb writes them exact (never truncated); ok is false without
// them.
func (s *ScanFile) TextBounds(g, col int) (lo, hi []byte, ok bool) {
	mn, mx, ok := s.bounds(g, col)
	if !ok || mn.Kind() != parquet.ByteArray {
		return nil, nil, false
	}
	return mn.ByteArray(), mx.ByteArray(), true
}

// ReadAs is how a reader of this file reads a column: as text (Text), as
// floats (FloatsAt) or as integers (Ints, IntsAt).
type ReadAs int

// The ways to read a column.
const (
	AsText ReadAs = iota + 1
	AsFloats
	AsInts
)

// Stores reports whether column col of row group g is stored as the reads
// of as take it, so that reading it fails only if the file is damaged.
func (s *ScanFile) Stores(g, col int, as ReadAs) bool {
	chunks := s.meta.RowGroups()[g].ColumnChunks()
	if col >= len(chunks) {
		return false
	}
	switch chunks[col].Type().Kind() {
	case parquet.ByteArray:
		return as == AsText
	case parquet.Double, parquet.Float:
		return as == AsFloats
	case parquet.Int64, parquet.Int32:
		return as == AsInts
	}
	return false
}

// Open opens the file now, if it is not open yet: reads after it go
// through this handle, which outlives the file's removal from its
// directory.
func (s *ScanFile) Open() error {
	if s.f != nil {
		return nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("delta: read %s: %w", s.path, err)
	}
	s.f = f
	return nil
}

// errKind is a column chunk read as a kind it is not stored as.
var errKind = errors.New("column stored as another kind")

// eachPage calls fn with the pages of column col of row group g in order:
// the page's definition levels (empty for a required column: no NULLs;
// else one per row, 0 for NULL), the values present, and the dictionary
// that indexes them (nil: the values themselves).
func (s *ScanFile) eachPage(g, col int, fn func(defs []byte, data encoding.Values, dict parquet.Dictionary) error) error {
	chunk, ok := s.meta.RowGroups()[g].ColumnChunks()[col].(*parquet.FileColumnChunk)
	if !ok {
		return fmt.Errorf("delta: read %s: row group %d: column %d is not a file chunk", s.path, g, col)
	}
	if err := s.Open(); err != nil {
		return err
	}
	pages := chunk.PagesFrom(s.f)
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, err)
		}
		err = fn(p.DefinitionLevels(), p.Data(), p.Dictionary())
		parquet.Release(p)
		if err != nil {
			return fmt.Errorf("delta: read %s: row group %d: column %d: %w", s.path, g, col, err)
		}
	}
}
