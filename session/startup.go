package session

import (
	"sort"
	"strings"

	"tsdb/internal/sqlerr"
)

// startupParams that are connection metadata, not settings.
var startupOnly = map[string]bool{"user": true, "database": true, "options": true, "replication": true}

// Startup applies the settings of a startup packet, as
// PostgreSQL reads them: the -c name=value (or --name=value) switches of
// its options parameter (a backslash escapes the next character, so that
// a value may hold a space), then its parameters, which win. Each goes
// through Settings.StartupSetting; the warnings it returns are for the
// client. A replication connection is refused: tsdb has no replication
// protocol.
func (ex *Executor) Startup(params map[string]string) (warnings []string, err error) {
	set := ex.sess.Settings()
	if r := strings.ToLower(params["replication"]); r != "" && r != "false" && r != "off" && r != "no" && r != "0" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "replication connections are not supported")
	}
	apply := func(name, value string) error {
		w, err := set.StartupSetting(name, value)
		if w != "" {
			warnings = append(warnings, w)
		}
		return err
	}
	args := splitOptions(params["options"])
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c" && i+1 < len(args):
			i++
			kv = args[i]
		case strings.HasPrefix(a, "-c"):
			kv = a[2:]
		case strings.HasPrefix(a, "--"):
			kv = a[2:]
		default:
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "invalid command-line argument for server process: %s", a)
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, sqlerr.New(sqlerr.SyntaxError, "-c %s requires a value", kv)
		}
		if err := apply(strings.ReplaceAll(name, "-", "_"), value); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(params))
	for k := range params {
		if !startupOnly[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if err := apply(k, params[k]); err != nil {
			return nil, err
		}
	}
	return warnings, nil
}

// splitOptions splits the options startup parameter at unescaped white
// space; a backslash escapes the next character.
func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
