// Package lru holds a map whose entries are weighed in bytes and dropped
// least recently used first once they weigh more than a budget. It is not
// safe for concurrent use: its users hold their own lock around it, which
// usually guards more than the map.
package lru

import "container/list"

// Cache maps keys to values within a byte budget.
type Cache[K comparable, V any] struct {
	maxBytes int64
	order    *list.List // of *entry[K, V], most recently used first
	m        map[K]*list.Element
	bytes    int64
}

type entry[K comparable, V any] struct {
	key   K
	value V
	bytes int64
}

// New returns an empty cache of at most maxBytes.
func New[K comparable, V any](maxBytes int64) *Cache[K, V] {
	return &Cache[K, V]{maxBytes: maxBytes, order: list.New(), m: map[K]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	e, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).value, true
}

// Add keeps value under key, weighing bytes, unless key is there already,
// and drops the least recently used entries until the cache is within its
// budget again. The entry just added is never dropped: a caller that must
// not keep one larger than the budget checks its size first.
func (c *Cache[K, V]) Add(key K, value V, bytes int64) {
	if _, ok := c.m[key]; ok {
		return
	}
	c.m[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, bytes: bytes})
	c.bytes += bytes
	for c.bytes > c.maxBytes && c.order.Len() > 1 {
		last := c.order.Back()
		e := last.Value.(*entry[K, V])
		c.order.Remove(last)
		delete(c.m, e.key)
		c.bytes -= e.bytes
	}
}

// Bytes is what the entries weigh.
func (c *Cache[K, V]) Bytes() int64 { return c.bytes }

// Len is the number of entries.
func (c *Cache[K, V]) Len() int { return c.order.Len() }

// Clear drops every entry.
func (c *Cache[K, V]) Clear() {
	c.order.Init()
	clear(c.m)
	c.bytes = 0
}
