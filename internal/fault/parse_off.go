//go:build !faults

package fault

import (
	"errors"
	"strings"
)

// Enabled reports whether this build can inject faults: not the shipped
// binary.
const Enabled = false

// Parse refuses every fault: this build has none. An empty spec is nil.
func Parse(spec string) (*Injector, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	return nil, errors.New("fault injection exists in test builds only (go build -tags faults); this binary has none")
}
