package pgwire

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rw is a connection made of the fuzzer's bytes; writes are discarded.
type rw struct{ io.Reader }

func (rw) Write(p []byte) (int, error) { return len(p), nil }

// FuzzWire feeds arbitrary bytes through the same decoding steps a
// connection takes: startup packets (SSL/GSS requests answered, cancel),
// then regular messages, with the server's message size limit. Nothing may
// panic or hang. (Bind parameters are fuzzed by session.FuzzParams.)
func FuzzWire(f *testing.F) {
	var seed bytes.Buffer
	startup := &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tsdb", "database": "tsdb"}}
	b, _ := startup.Encode(nil)
	seed.Write(b)
	for _, m := range []pgproto3.FrontendMessage{
		&pgproto3.Query{String: "SELECT 1"},
		&pgproto3.Parse{Name: "s", Query: "SELECT $1", ParameterOIDs: []uint32{20}},
		&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 0, 0, 0, 0, 1}}},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Sync{},
		&pgproto3.CopyData{Data: []byte("a\tb\n")},
		&pgproto3.Terminate{},
	} {
		b, _ := m.Encode(nil)
		seed.Write(b)
	}
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 8, 4, 210, 22, 47}) // SSLRequest
	f.Add([]byte{'Q', 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := bufio.NewReader(bytes.NewReader(data))
		be := pgproto3.NewBackend(rd, rw{})
		be.SetMaxBodyLen(1 << 20)
		for i := 0; i < 8; i++ {
			msg, err := readStartup(rd)
			if err != nil {
				return
			}
			if _, ok := msg.(*pgproto3.StartupMessage); ok {
				break
			}
		}
		for i := 0; i < 1000; i++ {
			if _, err := be.Receive(); err != nil {
				return
			}
		}
	})
}
