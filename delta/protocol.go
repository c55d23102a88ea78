package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"tsdb/internal/schema"
)

// What tsdb implements of the protocol other writers may ask for. A table
// whose reader requirements tsdb lacks is unreadable (reading it by
// position or without its deletion vectors would return wrong rows); one
// whose writer requirements it lacks is read-only (writing it would break
// what the other writers rely on). Either way only that table is
// affected, with an error naming what is missing.

// readerFeatures are the reader table features tsdb implements.
var readerFeatures = []string{"columnMapping", "deletionVectors", "timestampNtz", "vacuumProtocolCheck"}

// writerFeatures are the writer table features tsdb implements: it carries
// deletion vectors in its removes, writes timestamp_ntz as the protocol
// says, checks the protocol before VACUUM, and enforces appendOnly and
// the absence of the metadata the others need (checked in writeBlocker).
var writerFeatures = []string{"appendOnly", "invariants", "checkConstraints", "generatedColumns", "identityColumns",
	"columnMapping", "changeDataFeed", "deletionVectors", "timestampNtz", "vacuumProtocolCheck"}

// ErrUnsupportedFeature is wrapped by the errors that say a table needs
// what tsdb does not implement.
var ErrUnsupportedFeature = errors.New("delta: unsupported table feature")

// FeatureError names the protocol feature that keeps tsdb from reading
// (Write false) or writing (Write true) a table.
type FeatureError struct {
	Feature string
	Write   bool
	// Detail says more when the feature alone does not (a setting).
	Detail string
}

func (e *FeatureError) Error() string {
	what := "reading"
	if e.Write {
		what = "writing"
	}
	msg := fmt.Sprintf("the table uses the Delta feature %q, which tsdb does not support for %s", e.Feature, what)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Unwrap makes every FeatureError an ErrUnsupportedFeature.
func (e *FeatureError) Unwrap() error { return ErrUnsupportedFeature }

// readBlocker returns why tsdb cannot read a table of this protocol and
// metadata, or nil.
func readBlocker(p Protocol, md *Metadata) error {
	switch {
	case p.MinReaderVersion > 3:
		return &FeatureError{Feature: fmt.Sprintf("reader version %d", p.MinReaderVersion)}
	case p.MinReaderVersion == 3:
		for _, f := range p.ReaderFeatures {
			if !slices.Contains(readerFeatures, f) {
				return &FeatureError{Feature: f}
			}
		}
	}
	// Mode name is read by the physical names the schema gives; mode id
	// would match the files' columns by field id, which tsdb does not.
	if mode := columnMappingMode(md); mode != "" && mode != "none" && mode != "name" && (p.MinReaderVersion >= 2) {
		return &FeatureError{Feature: "columnMapping", Detail: "mode " + mode + ": columns are stored under other names"}
	}
	return nil
}

// writeBlocker returns why tsdb must not commit to a table of this
// protocol and metadata, or nil.
func writeBlocker(p Protocol, md *Metadata) error {
	if err := readBlocker(p, md); err != nil {
		return err
	}
	switch {
	case p.MinWriterVersion > 7:
		return &FeatureError{Feature: fmt.Sprintf("writer version %d", p.MinWriterVersion), Write: true}
	case p.MinWriterVersion == 7:
		for _, f := range p.WriterFeatures {
			if !slices.Contains(writerFeatures, f) {
				return &FeatureError{Feature: f, Write: true}
			}
		}
	}
	if md == nil {
		return nil
	}
	// The legacy writer versions 2-6 (and their features under version 7)
	// are only safe while the table uses none of what they guard.
	if mode := columnMappingMode(md); mode != "" && mode != "none" && mode != "name" {
		return &FeatureError{Feature: "columnMapping", Write: true, Detail: "mode " + mode}
	}
	for k := range md.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			return &FeatureError{Feature: "checkConstraints", Write: true, Detail: k}
		}
	}
	if strings.EqualFold(md.Configuration["delta.enableChangeDataFeed"], "true") {
		return &FeatureError{Feature: "changeDataFeed", Write: true, Detail: "delta.enableChangeDataFeed is true"}
	}
	var st structType
	if json.Unmarshal([]byte(md.SchemaString), &st) == nil {
		for _, f := range st.Fields {
			for key, feature := range map[string]string{"delta.invariants": "invariants", "delta.generationExpression": "generatedColumns", "delta.identity.start": "identityColumns"} {
				if _, ok := f.Metadata[key]; ok {
					return &FeatureError{Feature: feature, Write: true, Detail: "column " + f.Name}
				}
			}
		}
	}
	return nil
}

// AppendOnly reports whether the table refuses changes to its rows
// (delta.appendOnly): DELETE, UPDATE and retention must not run on it.
func AppendOnly(md Metadata) bool {
	return strings.EqualFold(md.Configuration["delta.appendOnly"], "true")
}

func columnMappingMode(md *Metadata) string {
	if md == nil {
		return ""
	}
	return strings.ToLower(md.Configuration["delta.columnMapping.mode"])
}

// Readable returns why tsdb cannot read the snapshot's table, or nil.
func (s *Snapshot) Readable() error { return readBlocker(s.Protocol, &s.Metadata) }

// Writable returns why tsdb must not write the snapshot's table, or nil.
func (s *Snapshot) Writable() error { return writeBlocker(s.Protocol, &s.Metadata) }

// protocolFor returns base upgraded to what table t needs, and whether it
// changed: a timestamp_ntz column needs the timestampNtz reader and writer
// features, column mapping the columnMapping ones, so reader version 3
// and writer version 7, which list the features of the versions they
// replace (writer 2's appendOnly and invariants).
func protocolFor(base Protocol, t schema.Table) (Protocol, bool) {
	var need []string
	for _, c := range t.Columns {
		if c.Type == schema.Timestamp && c.NTZ {
			need = append(need, "timestampNtz")
			break
		}
	}
	if t.ColumnMapping() && !(base.MinReaderVersion == 2 && base.MinWriterVersion >= 5 && base.MinWriterVersion < 7) {
		need = append(need, "columnMapping")
	}
	missing := false
	for _, f := range need {
		missing = missing || !slices.Contains(base.ReaderFeatures, f) || !slices.Contains(base.WriterFeatures, f)
	}
	if !missing {
		return base, false
	}
	p := Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: slices.Clone(base.ReaderFeatures), WriterFeatures: slices.Clone(base.WriterFeatures)}
	if base.MinWriterVersion < 7 {
		// The legacy features of writer versions 2-6 tsdb's tables use.
		for v, fs := range map[int][]string{2: {"appendOnly", "invariants"}, 3: {"checkConstraints"}, 4: {"changeDataFeed", "generatedColumns"}, 5: {"columnMapping"}, 6: {"identityColumns"}} {
			if base.MinWriterVersion >= v {
				p.WriterFeatures = append(p.WriterFeatures, fs...)
			}
		}
	}
	if base.MinReaderVersion == 2 {
		p.ReaderFeatures = append(p.ReaderFeatures, "columnMapping")
	}
	p.ReaderFeatures = append(p.ReaderFeatures, need...)
	p.WriterFeatures = append(p.WriterFeatures, need...)
	slices.Sort(p.ReaderFeatures)
	slices.Sort(p.WriterFeatures)
	p.ReaderFeatures, p.WriterFeatures = slices.Compact(p.ReaderFeatures), slices.Compact(p.WriterFeatures)
	return p, true
}
