package planner

import (
	"context"
	"testing"
)

// TestEngineAllocatorDecay checks that opening an engine sets its
// jemalloc's decay, for arenas that exist and for those made later.
func TestEngineAllocatorDecay(t *testing.T) {
	e, err := NewEngine(context.Background(), EngineOptions{TablesDir: t.TempDir(), Connections: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Make the engine allocate on its connections, so that arenas exist.
	var n int
	if err := e.db.QueryRowContext(context.Background(), "SELECT count(*) FROM range(100000)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	names := []string{"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms", "arena.0.dirty_decay_ms", "arena.0.muzzy_decay_ms"}
	for _, name := range names {
		got, err := allocatorDecay(name)
		if err != nil {
			t.Fatal(err)
		}
		if got != engineAllocatorDecay {
			t.Errorf("%s = %v, want %v", name, got, engineAllocatorDecay)
		}
	}
}
