package delta

import (
	"strings"
)

// A table's name is its directory's (or key prefix's) name, encoded:
// every byte other than a lower-case letter, digit, '_' or '-' is written
// as ~XX (hex). Not %XX: Delta readers take a table's location for a URL
// and decode it (delta-kernel-rs read "%4Fdd" as "Odd", another
// directory); '~' is a character URLs leave alone. A table may have any name PostgreSQL allows ("Disk-IO",
// "cpu.load", "Used %"), and its directory still
//
//   - is one path element that no name can escape ("..", "a/b");
//   - does not clash with another table's on a filesystem that ignores
//     case ("CPU" is ~43~50~55);
//   - holds nothing a reader would interpret: no glob characters for
//     DuckDB's read_parquet, no '=' that Hive-style partition detection
//     would take for a column, no leading '.' (droppedPrefix).
//
// Names tsdb allowed before (lower-case letters, digits, '_') are their
// own encoding, so existing data directories read unchanged.

// TableDir is the directory name of table name.
func TableDir(name string) string {
	clean := true
	for i := 0; i < len(name) && clean; i++ {
		clean = plainDirByte(name[i])
	}
	if clean {
		return name
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plainDirByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte(escapeByte)
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// TableName is the table a directory name holds; ok is false for a
// directory TableDir would not have made (a foreign one, or a name
// written by hand), which is not a table of tsdb's.
func TableName(dir string) (name string, ok bool) {
	if strings.IndexByte(dir, escapeByte) < 0 {
		name = dir
	} else {
		var b strings.Builder
		for i := 0; i < len(dir); i++ {
			if dir[i] != escapeByte {
				b.WriteByte(dir[i])
				continue
			}
			if i+2 >= len(dir) {
				return "", false
			}
			hi, lo := unhex(dir[i+1]), unhex(dir[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			b.WriteByte(byte(hi<<4 | lo))
			i += 2
		}
		name = b.String()
	}
	return name, name != "" && TableDir(name) == dir
}

// escapeByte starts an encoded byte of a table directory's name.
const escapeByte = '~'

func plainDirByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
