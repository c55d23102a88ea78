//go:build faults

package fault

import (
	"errors"
	"testing"
)

func TestParseAndHit(t *testing.T) {
	in, err := Parse("flush.commit=error:2,flush.write/cpu=error@1")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if got := errors.Is(in.Hit(FlushCommit, "any"), ErrInjected); got != want {
			t.Errorf("commit hit %d: injected=%v, want %v", i, got, want)
		}
	}
	if in.Hit(FlushWrite, "mem") != nil {
		t.Error("rule for table cpu fired for mem")
	}
	if in.Hit(FlushWrite, "cpu") != nil {
		t.Error("skipped hit fired")
	}
	if !errors.Is(in.Hit(FlushWrite, "cpu"), ErrInjected) {
		t.Error("rule for cpu did not fire after the skip")
	}
	var none *Injector
	if none.Hit(FlushCommit, "x") != nil {
		t.Error("nil injector injected")
	}
	for _, bad := range []string{"x", "p=explode", "p=error:many", "p=delay:soon"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
