package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRolesPersistAsVerifiers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "roles.json")
	s, err := Open(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.PasswordsRequired() || !s.Allowed("anyone", Manage) {
		t.Fatal("without passwords everybody is trusted")
	}
	if err := s.Create("grafana", "correct-horse-pw1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Grant("grafana", ReadAll, false); err != nil {
		t.Fatal(err)
	}
	if !s.PasswordsRequired() || !s.Allowed("grafana", Read) || s.Allowed("grafana", Write) || s.Allowed("nobody", Read) {
		t.Fatal("privileges of a reader")
	}
	s2, err := Open(path, "adminpw")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Lookup("grafana"); !ok || !s2.Allowed("grafana", Read) || !s2.Allowed(Admin, Manage) {
		t.Fatal("roles not reloaded")
	}
	b, _ := readFile(path)
	if strings.Contains(b, "correct-horse-pw1") {
		t.Fatal("password stored in clear")
	}
	if err := s2.Grant("grafana", ReadAll, true); err != nil || s2.Allowed("grafana", Read) {
		t.Fatal("revoke")
	}
	if err := s2.Drop("grafana", false); err != nil || s2.Drop("grafana", false) == nil {
		t.Fatal("drop")
	}
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}
