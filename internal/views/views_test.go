package views

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// Views persist across Open, Dependents follows views through views, and
// a Drop of several stops at the first missing one without dropping any.
func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog", "views.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []View{
		{Name: "a", Query: "SELECT 1", Reads: []string{"cpu"}, Columns: []Column{{Name: "x", OID: 23}}},
		{Name: "b", Query: "SELECT * FROM a", Reads: []string{"a"}},
		{Name: "c", Query: "SELECT * FROM b", Reads: []string{"b"}},
		{Name: "d", Query: "SELECT * FROM mem", Reads: []string{"mem"}},
	} {
		if err := s.Put(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(s.Dependents("cpu")); got != "[a b c]" {
		t.Errorf("Dependents(cpu) = %s", got)
	}
	if err := s.Drop("d", "missing"); !errors.Is(err, ErrNoView) {
		t.Errorf("Drop of a missing view: %v", err)
	}
	if _, ok := s.Get("d"); !ok {
		t.Error("a failed Drop dropped a view")
	}
	if err := s.Drop("d"); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range again.List() {
		names = append(names, v.Name)
	}
	if fmt.Sprint(names) != "[a b c]" || again.Len() != 3 {
		t.Errorf("reopened: %v", names)
	}
	if v, _ := again.Get("a"); v.Query != "SELECT 1" || len(v.Columns) != 1 || v.Columns[0].OID != 23 {
		t.Errorf("reopened view a: %+v", v)
	}
	mem, _ := Open("")
	if err := mem.Put(View{Name: "m"}); err != nil || mem.Len() != 1 {
		t.Errorf("in-memory store: %v", err)
	}
}

// Functions persist beside the views, across Open; a dropped one is gone.
func TestFunctionsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog", "views.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := Function{Name: "twice", Params: []Param{{Name: "x", Type: "integer"}}, Returns: "integer", Body: "SELECT x * 2", Strict: true}
	if err := s.PutFunction(f); err != nil {
		t.Fatal(err)
	}
	if err := s.PutFunction(Function{Name: "gone", Returns: "integer", Body: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DropFunction("gone"); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := again.Function("twice")
	if !ok || fmt.Sprint(got) != fmt.Sprint(f) {
		t.Errorf("reopened: %+v %v, want %+v", got, ok, f)
	}
	if _, ok := again.Function("gone"); ok || !again.HasFunctions() || again.Len() != 0 {
		t.Errorf("reopened: gone %v, has functions %v, views %d", ok, again.HasFunctions(), again.Len())
	}
}
