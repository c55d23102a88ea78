//go:build faults

package fault

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Enabled reports whether this build can inject faults.
const Enabled = true

// Parse reads a spec such as
//
//	flush.after-commit=crash,flush.commit=error:3,flush.write=delay:500ms,flush.after-parquet=crash@2
//
// point=action[:count|:duration][@skip]. A point may name one table:
// flush.commit/cpu. An empty spec returns nil (no faults).
func Parse(spec string) (*Injector, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	in := &Injector{rules: map[string]*rule{}}
	for _, part := range strings.Split(spec, ",") {
		name, act, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("fault %q: want point=action", part)
		}
		r := &rule{left: -1}
		if a, skip, ok := strings.Cut(act, "@"); ok {
			n, err := strconv.Atoi(skip)
			if err != nil {
				return nil, fmt.Errorf("fault %q: bad skip count", part)
			}
			act, r.skip = a, n
		}
		a, arg, hasArg := strings.Cut(act, ":")
		r.action = a
		switch a {
		case "crash":
			r.left = 1
		case "error":
			if hasArg {
				n, err := strconv.Atoi(arg)
				if err != nil {
					return nil, fmt.Errorf("fault %q: bad count", part)
				}
				r.left = n
			}
		case "delay":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return nil, fmt.Errorf("fault %q: bad duration", part)
			}
			r.delay = d
		default:
			return nil, fmt.Errorf("fault %q: unknown action %q (crash, error, delay)", part, a)
		}
		in.rules[name] = r
	}
	return in, nil
}
