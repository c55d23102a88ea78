package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// CheckpointInterval is how many commits apart checkpoints are written.
const CheckpointInterval = 10

const lastCheckpointPath = logDir + "/_last_checkpoint"

// TombstoneExpiry is how long a checkpoint keeps a removed file's
// tombstone: longer than the default retention VACUUM waits before it
// deletes the file.
const TombstoneExpiry = 30 * 24 * time.Hour

func checkpointPath(v int64) string { return fmt.Sprintf("%s/%020d.checkpoint.parquet", logDir, v) }

type lastCheckpoint struct {
	Version int64 `json:"version"`
	Size    int64 `json:"size"`
}

// Classic V1 checkpoint schema: one row per action, one struct column per
// action type (the fields readers need), the others NULL.
var (
	strMap       = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	protocolType = arrow.StructOf(
		arrow.Field{Name: "minReaderVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "minWriterVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "readerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		arrow.Field{Name: "writerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})
	dvType = arrow.StructOf(
		arrow.Field{Name: "storageType", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "pathOrInlineDv", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "offset", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "sizeInBytes", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "cardinality", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	formatType   = arrow.StructOf(arrow.Field{Name: "provider", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "options", Type: strMap, Nullable: true})
	metaDataType = arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "format", Type: formatType, Nullable: true},
		arrow.Field{Name: "schemaString", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "partitionColumns", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		arrow.Field{Name: "configuration", Type: strMap, Nullable: true},
		arrow.Field{Name: "createdTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	addType = arrow.StructOf(
		arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "partitionValues", Type: strMap, Nullable: true},
		arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "modificationTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "tags", Type: strMap, Nullable: true},
		arrow.Field{Name: "deletionVector", Type: dvType, Nullable: true})
	txnType = arrow.StructOf(
		arrow.Field{Name: "appId", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "lastUpdated", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	removeType = arrow.StructOf(
		arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "deletionTimestamp", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	checkpointSchema = arrow.NewSchema([]arrow.Field{
		{Name: "txn", Type: txnType, Nullable: true},
		{Name: "add", Type: addType, Nullable: true},
		{Name: "remove", Type: removeType, Nullable: true},
		{Name: "metaData", Type: metaDataType, Nullable: true},
		{Name: "protocol", Type: protocolType, Nullable: true},
	}, nil)
)

func appendMap(b *array.MapBuilder, m map[string]string) {
	b.Append(true)
	kb, vb := b.KeyBuilder().(*array.StringBuilder), b.ItemBuilder().(*array.StringBuilder)
	for k, v := range m {
		kb.Append(k)
		vb.Append(v)
	}
}

// writeCheckpoint writes the snapshot as a checkpoint and points
// _last_checkpoint at it. Txns are kept unless txnExpired says they are not
// needed any more (nil: all kept; replay relies on them).
func writeCheckpoint(ctx context.Context, store Store, snap *Snapshot, txnExpired TxnExpiry) error {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, checkpointSchema)
	defer bld.Release()
	txnB := bld.Field(0).(*array.StructBuilder)
	addB := bld.Field(1).(*array.StructBuilder)
	rmB := bld.Field(2).(*array.StructBuilder)
	mdB := bld.Field(3).(*array.StructBuilder)
	protoB := bld.Field(4).(*array.StructBuilder)
	nullOthers := func(keep int) {
		for i, b := range []*array.StructBuilder{txnB, addB, rmB, mdB, protoB} {
			if i != keep {
				b.AppendNull()
			}
		}
	}
	// protocol
	protoB.Append(true)
	protoB.FieldBuilder(0).(*array.Int32Builder).Append(int32(snap.Protocol.MinReaderVersion))
	protoB.FieldBuilder(1).(*array.Int32Builder).Append(int32(snap.Protocol.MinWriterVersion))
	// The features must survive the checkpoint: a reader that lost
	// deletionVectors would read deleted rows again.
	for i, fs := range [][]string{snap.Protocol.ReaderFeatures, snap.Protocol.WriterFeatures} {
		lb := protoB.FieldBuilder(2 + i).(*array.ListBuilder)
		if fs == nil {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		for _, f := range fs {
			lb.ValueBuilder().(*array.StringBuilder).Append(f)
		}
	}
	nullOthers(4)
	// metaData
	md := snap.Metadata
	mdB.Append(true)
	mdB.FieldBuilder(0).(*array.StringBuilder).Append(md.ID)
	mdB.FieldBuilder(1).(*array.StringBuilder).Append(md.Name)
	mdB.FieldBuilder(2).AppendNull()
	fb := mdB.FieldBuilder(3).(*array.StructBuilder)
	fb.Append(true)
	fb.FieldBuilder(0).(*array.StringBuilder).Append(md.Format.Provider)
	appendMap(fb.FieldBuilder(1).(*array.MapBuilder), md.Format.Options)
	mdB.FieldBuilder(4).(*array.StringBuilder).Append(md.SchemaString)
	lb := mdB.FieldBuilder(5).(*array.ListBuilder)
	lb.Append(true)
	for _, c := range md.PartitionColumns {
		lb.ValueBuilder().(*array.StringBuilder).Append(c)
	}
	appendMap(mdB.FieldBuilder(6).(*array.MapBuilder), md.Configuration)
	mdB.FieldBuilder(7).(*array.Int64Builder).Append(md.CreatedTime)
	nullOthers(3)
	// Tombstones stay until VACUUM has deleted their files, so a table
	// opened from this checkpoint still knows what to delete.
	expired := time.Now().Add(-TombstoneExpiry).UnixMilli()
	for _, r := range snap.Tombstones {
		if r.DeletionTimestamp < expired {
			continue
		}
		rmB.Append(true)
		rmB.FieldBuilder(0).(*array.StringBuilder).Append(r.Path)
		rmB.FieldBuilder(1).(*array.Int64Builder).Append(r.DeletionTimestamp)
		rmB.FieldBuilder(2).(*array.BooleanBuilder).Append(false)
		rmB.FieldBuilder(3).(*array.Int64Builder).Append(r.Size)
		nullOthers(2)
	}
	for app, v := range snap.Txns {
		if txnExpired != nil && txnExpired(app, v, snap.TxnUpdated[app], snap.Txns) {
			continue
		}
		txnB.Append(true)
		txnB.FieldBuilder(0).(*array.StringBuilder).Append(app)
		txnB.FieldBuilder(1).(*array.Int64Builder).Append(v)
		if u, ok := snap.TxnUpdated[app]; ok {
			txnB.FieldBuilder(2).(*array.Int64Builder).Append(u)
		} else {
			txnB.FieldBuilder(2).AppendNull()
		}
		nullOthers(0)
	}
	for _, f := range snap.Files {
		addB.Append(true)
		addB.FieldBuilder(0).(*array.StringBuilder).Append(f.Path)
		appendMap(addB.FieldBuilder(1).(*array.MapBuilder), f.PartitionValues)
		addB.FieldBuilder(2).(*array.Int64Builder).Append(f.Size)
		addB.FieldBuilder(3).(*array.Int64Builder).Append(f.ModificationTime)
		addB.FieldBuilder(4).(*array.BooleanBuilder).Append(false)
		if f.Stats != "" {
			addB.FieldBuilder(5).(*array.StringBuilder).Append(f.Stats)
		} else {
			addB.FieldBuilder(5).AppendNull()
		}
		if f.Tags != nil {
			appendMap(addB.FieldBuilder(6).(*array.MapBuilder), f.Tags)
		} else {
			addB.FieldBuilder(6).AppendNull()
		}
		dvB := addB.FieldBuilder(7).(*array.StructBuilder)
		if dv := f.DeletionVector; dv != nil {
			dvB.Append(true)
			dvB.FieldBuilder(0).(*array.StringBuilder).Append(dv.StorageType)
			dvB.FieldBuilder(1).(*array.StringBuilder).Append(dv.PathOrInlineDv)
			if dv.Offset != nil {
				dvB.FieldBuilder(2).(*array.Int32Builder).Append(*dv.Offset)
			} else {
				dvB.FieldBuilder(2).AppendNull()
			}
			dvB.FieldBuilder(3).(*array.Int32Builder).Append(dv.SizeInBytes)
			dvB.FieldBuilder(4).(*array.Int64Builder).Append(dv.Cardinality)
		} else {
			dvB.AppendNull()
		}
		nullOthers(1)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	w, err := pqarrow.NewFileWriter(checkpointSchema, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return fmt.Errorf("delta: checkpoint writer: %w", err)
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return fmt.Errorf("delta: write checkpoint: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("delta: write checkpoint: %w", err)
	}
	// Put (not PutIfAbsent): a checkpoint of a version is the same
	// whoever writes it, and it is only used once _last_checkpoint names it.
	if err := store.Put(ctx, checkpointPath(snap.Version), buf.Bytes()); err != nil {
		return err
	}
	lc, _ := json.Marshal(lastCheckpoint{Version: snap.Version, Size: rec.NumRows()})
	return store.Put(ctx, lastCheckpointPath, lc)
}

// readCheckpoint loads the newest checkpoint, or returns nil if there is
// none (or it cannot be read: the JSON commits are still there).
func readCheckpoint(ctx context.Context, store Store) (*state, error) {
	b, err := store.Get(ctx, lastCheckpointPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lc lastCheckpoint
	if err := json.Unmarshal(b, &lc); err != nil {
		return nil, nil
	}
	data, err := store.Get(ctx, checkpointPath(lc.Version))
	if err != nil {
		return nil, nil
	}
	cpErr := func(err error) error {
		return &LogError{Version: lc.Version, Path: checkpointPath(lc.Version), Err: err}
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, cpErr(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, cpErr(err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, cpErr(err)
	}
	defer tbl.Release()
	st := newState(nil)
	st.version = lc.Version
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	col := func(rec arrow.RecordBatch, name string) *array.Struct {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		s, _ := rec.Column(idx[0]).(*array.Struct)
		return s
	}
	str := func(a arrow.Array, i int) string {
		if s, ok := a.(*array.String); ok && s.IsValid(i) {
			return s.Value(i)
		}
		return ""
	}
	i64 := func(a arrow.Array, i int) int64 {
		if s, ok := a.(*array.Int64); ok && s.IsValid(i) {
			return s.Value(i)
		}
		return 0
	}
	for tr.Next() {
		rec := tr.RecordBatch()
		txn, add, rm, md, proto := col(rec, "txn"), col(rec, "add"), col(rec, "remove"), col(rec, "metaData"), col(rec, "protocol")
		for i := 0; i < int(rec.NumRows()); i++ {
			switch {
			case txn != nil && txn.IsValid(i):
				app := str(childByName(txn, "appId"), i)
				st.txns[app] = intAt(childByName(txn, "version"), i)
				if u := intAt(childByName(txn, "lastUpdated"), i); u != 0 {
					st.txnUpdated[app] = u
				}
			case add != nil && add.IsValid(i):
				// Fields by name: other writers order them otherwise
				// (Spark puts stats after tags and deletionVector).
				a := Add{Path: str(childByName(add, "path"), i), PartitionValues: map[string]string{}, Size: i64(childByName(add, "size"), i),
					ModificationTime: i64(childByName(add, "modificationTime"), i), DataChange: false, Stats: str(childByName(add, "stats"), i)}
				if tags := childByName(add, "tags"); tags != nil {
					if m := readMap(tags, i); len(m) > 0 {
						a.Tags = m
					}
				}
				if dv, ok := childByName(add, "deletionVector").(*array.Struct); ok && dv.IsValid(i) {
					a.DeletionVector = &DeletionVector{StorageType: str(childByName(dv, "storageType"), i), PathOrInlineDv: str(childByName(dv, "pathOrInlineDv"), i),
						SizeInBytes: int32(intAt(childByName(dv, "sizeInBytes"), i)), Cardinality: intAt(childByName(dv, "cardinality"), i)}
					if off := childByName(dv, "offset"); off != nil && off.IsValid(i) {
						o := int32(intAt(off, i))
						a.DeletionVector.Offset = &o
					}
				}
				f, err := fileFromAdd(a)
				if err != nil {
					return nil, cpErr(err)
				}
				st.files[a.Path] = f
			case rm != nil && rm.IsValid(i):
				r := Remove{Path: str(childByName(rm, "path"), i), DeletionTimestamp: i64(childByName(rm, "deletionTimestamp"), i), Size: i64(childByName(rm, "size"), i)}
				st.removed[r.Path] = r
			case md != nil && md.IsValid(i):
				m := Metadata{ID: str(md.Field(0), i), Name: str(md.Field(1), i), SchemaString: str(md.Field(4), i),
					Format: Format{Provider: "parquet", Options: map[string]string{}}, PartitionColumns: []string{},
					Configuration: readMap(md.Field(6), i), CreatedTime: i64(md.Field(7), i)}
				st.md = &m
			case proto != nil && proto.IsValid(i):
				st.protocol.MinReaderVersion = int(intAt(childByName(proto, "minReaderVersion"), i))
				st.protocol.MinWriterVersion = int(intAt(childByName(proto, "minWriterVersion"), i))
				st.protocol.ReaderFeatures = readList(childByName(proto, "readerFeatures"), i)
				st.protocol.WriterFeatures = readList(childByName(proto, "writerFeatures"), i)
			}
		}
	}
	if st.md == nil {
		return nil, cpErr(errors.New("no metaData"))
	}
	return st, nil
}

// intAt reads an integer of any width, 0 when absent or NULL.
func intAt(a arrow.Array, i int) int64 {
	if a == nil || !a.IsValid(i) {
		return 0
	}
	switch x := a.(type) {
	case *array.Int64:
		return x.Value(i)
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Int16:
		return int64(x.Value(i))
	case *array.Int8:
		return int64(x.Value(i))
	}
	return 0
}

// readList reads a list of strings, nil when absent or NULL.
func readList(a arrow.Array, i int) []string {
	l, ok := a.(*array.List)
	if !ok || !l.IsValid(i) {
		return nil
	}
	vals, ok := l.ListValues().(*array.String)
	if !ok {
		return nil
	}
	start, end := l.ValueOffsets(i)
	out := make([]string, 0, end-start)
	for j := start; j < end; j++ {
		out = append(out, vals.Value(int(j)))
	}
	return out
}

// childByName returns the child of s named name, or nil.
func childByName(s *array.Struct, name string) arrow.Array {
	st := s.DataType().(*arrow.StructType)
	if i, ok := st.FieldIdx(name); ok {
		return s.Field(i)
	}
	return nil
}

func readMap(a arrow.Array, i int) map[string]string {
	out := map[string]string{}
	m, ok := a.(*array.Map)
	if !ok || m.IsNull(i) {
		return out
	}
	keys, ok1 := m.Keys().(*array.String)
	items, ok2 := m.Items().(*array.String)
	if !ok1 || !ok2 {
		return out
	}
	start, end := m.ValueOffsets(i)
	for j := start; j < end; j++ {
		out[keys.Value(int(j))] = items.Value(int(j))
	}
	return out
}
