package delta

import (
	"encoding/json"
	"fmt"
)

// Protocol is the protocol action. tsdb writes (1, 2), readable by every
// Delta reader; tables of other writers may name table features (reader
// version 3, writer version 7), which protocol.go checks.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format names the data file format of a table.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      int64             `json:"createdTime"`
}

// Add is the add action: a data file that is part of the table.
type Add struct {
	Path             string            `json:"path"`
	PartitionValues  map[string]string `json:"partitionValues"`
	Size             int64             `json:"size"`
	ModificationTime int64             `json:"modificationTime"`
	DataChange       bool              `json:"dataChange"`
	Stats            string            `json:"stats,omitempty"`
	// Tags are the protocol's free-form file metadata; tsdb keeps each
	// file's checksum there (ChecksumTag).
	Tags map[string]string `json:"tags,omitempty"`
	// DeletionVector, set by other writers, names the rows of the file
	// that no longer count.
	DeletionVector *DeletionVector `json:"deletionVector,omitempty"`
}

// Remove is the remove action: a data file that left the table.
type Remove struct {
	Path                 string            `json:"path"`
	DeletionTimestamp    int64             `json:"deletionTimestamp"`
	DataChange           bool              `json:"dataChange"`
	ExtendedFileMetadata bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues      map[string]string `json:"partitionValues,omitempty"`
	Size                 int64             `json:"size,omitempty"`
	Stats                string            `json:"stats,omitempty"`
	Tags                 map[string]string `json:"tags,omitempty"`
	// DeletionVector is the vector of the file as it was live: the
	// logical file removed is the path with this vector.
	DeletionVector *DeletionVector `json:"deletionVector,omitempty"`
}

// RemoveOf is the remove action of a live file, carrying what the
// protocol's extended file metadata asks for (partition values, size,
// stats, tags) and the file's deletion vector, without which the remove
// would name another logical file and leave this one live.
func RemoveOf(f Add, deletionTimestamp int64, dataChange bool) *Remove {
	pv := f.PartitionValues
	if pv == nil {
		pv = map[string]string{}
	}
	return &Remove{Path: f.Path, DeletionTimestamp: deletionTimestamp, DataChange: dataChange, ExtendedFileMetadata: true,
		PartitionValues: pv, Size: f.Size, Stats: f.Stats, Tags: f.Tags, DeletionVector: f.DeletionVector}
}

// Txn is the txn (SetTransaction) action: the newest version an application
// has committed. tsdb records which WAL entries a flush holds with it.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated int64  `json:"lastUpdated,omitempty"`
}

// CommitInfo is provenance information; readers ignore it.
type CommitInfo struct {
	Timestamp           int64             `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters"`
	EngineInfo          string            `json:"engineInfo"`
	IsBlindAppend       bool              `json:"isBlindAppend"`
	// ReadVersion is the version the commit was built on (absent for
	// version 0).
	ReadVersion    *int64 `json:"readVersion,omitempty"`
	IsolationLevel string `json:"isolationLevel,omitempty"`
	// TxnID is unique per commit attempt (Spark writes one too). Two
	// writers may commit byte-identical actions in the same millisecond
	// (both removing one file); without it the loser of the race would
	// read the winner's commit back and take it for its own.
	TxnID string `json:"txnId,omitempty"`
}

// Action is one line of a commit file: exactly one field is set.
type Action struct {
	Protocol   *Protocol   `json:"protocol,omitempty"`
	MetaData   *Metadata   `json:"metaData,omitempty"`
	Add        *Add        `json:"add,omitempty"`
	Remove     *Remove     `json:"remove,omitempty"`
	Txn        *Txn        `json:"txn,omitempty"`
	CommitInfo *CommitInfo `json:"commitInfo,omitempty"`
}

// encodeCommit renders actions as newline-delimited JSON.
func encodeCommit(actions []Action) ([]byte, error) {
	var out []byte
	for _, a := range actions {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("delta: encode action: %w", err)
		}
		out = append(out, b...)
		out = append(out, '\n')
	}
	return out, nil
}

// Stats are the per-file statistics stored in add.stats.
type Stats struct {
	NumRecords int64          `json:"numRecords"`
	MinValues  map[string]any `json:"minValues"`
	MaxValues  map[string]any `json:"maxValues"`
	NullCount  map[string]any `json:"nullCount"`
}
