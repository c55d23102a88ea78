package lru

import (
	"fmt"
	"testing"
)

func TestCacheDropsLeastRecentlyUsed(t *testing.T) {
	type step struct {
		op    string // "add", "get"
		key   string
		bytes int64
	}
	tests := []struct {
		name     string
		max      int64
		steps    []step
		want     []string // keys kept
		wantSize int64
	}{
		{"within budget", 10, []step{{"add", "a", 3}, {"add", "b", 3}}, []string{"a", "b"}, 6},
		{"oldest out first", 10, []step{{"add", "a", 4}, {"add", "b", 4}, {"add", "c", 4}}, []string{"b", "c"}, 8},
		{"a get keeps an entry", 10, []step{{"add", "a", 4}, {"add", "b", 4}, {"get", "a", 0}, {"add", "c", 4}}, []string{"a", "c"}, 8},
		{"the newest stays past the budget", 10, []step{{"add", "a", 4}, {"add", "big", 30}}, []string{"big"}, 30},
		{"a second add keeps the first value", 10, []step{{"add", "a", 4}, {"add", "a", 9}}, []string{"a"}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New[string, string](tc.max)
			for _, s := range tc.steps {
				switch s.op {
				case "add":
					c.Add(s.key, fmt.Sprint(s.key, s.bytes), s.bytes)
				case "get":
					c.Get(s.key)
				}
			}
			for _, k := range tc.want {
				if _, ok := c.Get(k); !ok {
					t.Errorf("%s dropped", k)
				}
			}
			if c.Len() != len(tc.want) || c.Bytes() != tc.wantSize {
				t.Errorf("%d entries of %d bytes, want %d of %d", c.Len(), c.Bytes(), len(tc.want), tc.wantSize)
			}
			c.Clear()
			if c.Len() != 0 || c.Bytes() != 0 {
				t.Errorf("after Clear: %d entries of %d bytes", c.Len(), c.Bytes())
			}
		})
	}
	if v, ok := New[int, string](1).Get(3); ok || v != "" {
		t.Errorf("empty cache: %q, %v", v, ok)
	}
}
