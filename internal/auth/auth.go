// Package auth keeps tsdb's roles: who may log in (SCRAM-SHA-256 verifiers,
// never passwords) and what each may do (PostgreSQL's predefined roles
// pg_read_all_data and pg_write_all_data, and CREATE on schema public).
// One policy serves every way in: SQL, COPY and the line protocol ask the
// same Allowed. Roles persist in one JSON file in the data directory,
// replaced atomically on every change.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/xdg-go/scram"
)

// Admin is the bootstrap superuser.
const Admin = "tsdb"

// Predefined roles that can be granted.
const (
	ReadAll  = "pg_read_all_data"
	WriteAll = "pg_write_all_data"
)

// Privilege is what a statement needs.
type Privilege int

// Privileges, weakest first.
const (
	Read  Privilege = iota // SELECT, SHOW, EXPLAIN, COPY TO
	Write                  // INSERT, UPDATE, DELETE, COPY FROM
	// Create makes tables and columns: CREATE TABLE, ALTER TABLE … ADD
	// COLUMN, and the tables and columns the line protocol creates for
	// new measurements, tags and fields (GRANT CREATE ON SCHEMA public).
	Create
	Manage // other DDL, CHECKPOINT, VACUUM, roles
)

// Role is one login role.
type Role struct {
	Name     string                  `json:"name"`
	Verifier scram.StoredCredentials `json:"verifier"`
	Granted  []string                `json:"granted"`
	// CreateOnPublic is CREATE on schema public (privilege Create).
	CreateOnPublic bool `json:"create_on_public,omitempty"`
}

// Store holds the roles. It is safe for concurrent use.
type Store struct {
	path  string
	mu    sync.RWMutex
	roles map[string]*Role
	admin *scram.StoredCredentials // from the environment, not persisted
}

// ErrNoRole is returned for unknown roles.
var ErrNoRole = errors.New("role does not exist")

// Open loads the roles file at path (missing: no roles). adminPassword, if
// not empty, sets the admin's password for this run.
func Open(path, adminPassword string) (*Store, error) {
	s := &Store{path: path, roles: map[string]*Role{}}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var roles []*Role
		if err := json.Unmarshal(b, &roles); err != nil {
			return nil, fmt.Errorf("auth: read %s: %w", path, err)
		}
		for _, r := range roles {
			s.roles[r.Name] = r
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("auth: %w", err)
	}
	if adminPassword != "" {
		v, err := Verifier(Admin, adminPassword)
		if err != nil {
			return nil, err
		}
		s.admin = &v
	}
	return s, nil
}

// Verifier derives a SCRAM-SHA-256 verifier with a fresh salt.
func Verifier(user, password string) (scram.StoredCredentials, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return scram.StoredCredentials{}, err
	}
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		return scram.StoredCredentials{}, fmt.Errorf("auth: password of %s: %w", user, err)
	}
	// The salt is kept as hex text: any bytes are a valid salt, and text
	// survives the JSON roles file (raw bytes would not be valid UTF-8).
	return client.GetStoredCredentials(scram.KeyFactors{Salt: hex.EncodeToString(salt), Iters: 4096}), nil
}

// RoleInfo is what the catalog shows of a role (pg_roles, psql's \du).
type RoleInfo struct {
	Name    string
	Granted []string // predefined roles it is a member of
}

// Roles lists the roles created with CREATE ROLE, by name; the admin is
// not among them.
func (s *Store) Roles() []RoleInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]RoleInfo, 0, len(s.roles))
	for _, r := range s.roles {
		out = append(out, RoleInfo{Name: r.Name, Granted: append([]string(nil), r.Granted...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PasswordsRequired reports whether clients must authenticate: once any
// password exists.
func (s *Store) PasswordsRequired() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.admin != nil || len(s.roles) > 0
}

// Lookup returns a user's verifier.
func (s *Store) Lookup(user string) (scram.StoredCredentials, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if user == Admin && s.admin != nil {
		return *s.admin, true
	}
	if r, ok := s.roles[user]; ok {
		return r.Verifier, true
	}
	return scram.StoredCredentials{}, false
}

// Allowed reports whether user holds priv. The admin (and everybody when
// no password is configured: trust on loopback) may do everything.
func (s *Store) Allowed(user string, priv Privilege) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if user == Admin || (s.admin == nil && len(s.roles) == 0) {
		return true
	}
	r, ok := s.roles[user]
	if !ok {
		return false
	}
	has := map[string]bool{}
	for _, g := range r.Granted {
		has[g] = true
	}
	switch priv {
	case Read:
		return has[ReadAll] || has[WriteAll]
	case Write:
		return has[WriteAll]
	case Create:
		return r.CreateOnPublic
	}
	return false
}

// GrantCreate gives or (revoke) takes CREATE on schema public.
func (s *Store) GrantCreate(name string, revoke bool) error {
	return s.change(func() error {
		r, ok := s.roles[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoRole, name)
		}
		r.CreateOnPublic = !revoke
		return nil
	})
}

// Create adds a login role.
func (s *Store) Create(name, password string) error {
	if name == Admin || name == ReadAll || name == WriteAll {
		return fmt.Errorf("role %q already exists", name)
	}
	v, err := Verifier(name, password)
	if err != nil {
		return err
	}
	return s.change(func() error {
		if _, ok := s.roles[name]; ok {
			return fmt.Errorf("role %q already exists", name)
		}
		s.roles[name] = &Role{Name: name, Verifier: v}
		return nil
	})
}

// SetPassword changes a role's password.
func (s *Store) SetPassword(name, password string) error {
	v, err := Verifier(name, password)
	if err != nil {
		return err
	}
	return s.change(func() error {
		r, ok := s.roles[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoRole, name)
		}
		r.Verifier = v
		return nil
	})
}

// Drop removes a role.
func (s *Store) Drop(name string, ifExists bool) error {
	return s.change(func() error {
		if _, ok := s.roles[name]; !ok {
			if ifExists {
				return nil
			}
			return fmt.Errorf("%w: %q", ErrNoRole, name)
		}
		delete(s.roles, name)
		return nil
	})
}

// Grant gives or (revoke) takes a predefined role.
func (s *Store) Grant(name, granted string, revoke bool) error {
	if granted != ReadAll && granted != WriteAll {
		return fmt.Errorf("only %s and %s can be granted", ReadAll, WriteAll)
	}
	return s.change(func() error {
		r, ok := s.roles[name]
		if !ok {
			return fmt.Errorf("%w: %q", ErrNoRole, name)
		}
		var out []string
		for _, g := range r.Granted {
			if g != granted {
				out = append(out, g)
			}
		}
		if !revoke {
			out = append(out, granted)
		}
		sort.Strings(out)
		r.Granted = out
		return nil
	})
}

// change applies fn and writes the roles file (temporary file, fsync,
// rename), so a crash leaves the old or the new file, never a torn one.
func (s *Store) change(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := fn(); err != nil {
		return err
	}
	roles := make([]*Role, 0, len(s.roles))
	for _, r := range s.roles {
		roles = append(roles, r)
	}
	sort.Slice(roles, func(i, j int) bool { return roles[i].Name < roles[j].Name })
	b, err := json.MarshalIndent(roles, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	return os.Rename(tmp, s.path)
}

// CheckPassword verifies a clear-text password (HTTP basic auth) against
// the stored verifier by deriving the same keys.
func (s *Store) CheckPassword(user, password string) bool {
	stored, ok := s.Lookup(user)
	if !ok {
		return false
	}
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		return false
	}
	got := client.GetStoredCredentials(stored.KeyFactors)
	return subtle.ConstantTimeCompare(got.StoredKey, stored.StoredKey) == 1
}
