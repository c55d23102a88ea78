package backend

import (
	"errors"
	"testing"
)

func TestSignal(t *testing.T) {
	r := New()
	var canceled, ended int
	remove := r.Add(7, "grafana", func() { canceled++ }, func() { ended++ })
	for _, tc := range []struct {
		pid       uint32
		terminate bool
		user      string
		admin     bool
		found     bool
		err       error
	}{
		{7, false, "grafana", false, true, nil},
		{7, true, "tsdb", true, true, nil},
		{7, false, "agent", false, true, ErrNotPermitted},
		{8, false, "tsdb", true, false, nil},
	} {
		found, err := r.Signal(tc.pid, tc.terminate, tc.user, tc.admin)
		if found != tc.found || !errors.Is(err, tc.err) {
			t.Errorf("Signal(%d, %v, %s): %v %v", tc.pid, tc.terminate, tc.user, found, err)
		}
	}
	if canceled != 1 || ended != 1 {
		t.Fatalf("canceled %d, ended %d", canceled, ended)
	}
	remove()
	if found, _ := r.Signal(7, false, "tsdb", true); found || len(r.Sessions()) != 0 {
		t.Fatal("a removed session is still listed")
	}
}
