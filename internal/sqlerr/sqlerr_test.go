package sqlerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeFindsWrappedErrors(t *testing.T) {
	base := errors.New("disk full")
	tests := []struct {
		err  error
		want string
	}{
		{New(UndefinedTable, "relation %q does not exist", "x"), UndefinedTable},
		{fmt.Errorf("context: %w", Wrap(IOError, base)), IOError},
		{base, InternalError},
	}
	for _, tt := range tests {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("Code(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
	if w := Wrap(IOError, base); !errors.Is(w, base) || w.Error() != "disk full" {
		t.Fatalf("Wrap lost its cause: %v", w)
	}
}
