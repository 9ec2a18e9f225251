package main

import (
	"sort"
	"sync"
)

// lockTable holds the front's in-process locks: one reader/writer lock per collection
// ("db.collection") and, under a shared hold of it, one mutex per document (_id) of that
// collection. Entries are reference-counted and dropped when nobody holds or waits for them.
//
// A writer waiting on a collection lock keeps new shared holders out (sync.RWMutex), so a
// stream of single-document writes cannot starve a multi-document one.
type lockTable struct {
	mu    sync.Mutex
	colls map[string]*collLock
}

type collLock struct {
	rw   sync.RWMutex
	refs int // holders and waiters, guarded by lockTable.mu
	docs map[string]*docLock
}

type docLock struct {
	mu   sync.Mutex
	refs int // guarded by lockTable.mu
}

func newLockTable() *lockTable {
	return &lockTable{colls: map[string]*collLock{}}
}

func (t *lockTable) coll(ns string) *collLock {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.colls[ns]
	if c == nil {
		c = &collLock{docs: map[string]*docLock{}}
		t.colls[ns] = c
	}
	c.refs++
	return c
}

func (t *lockTable) unref(ns string, c *collLock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.refs--; c.refs == 0 {
		delete(t.colls, ns)
	}
}

// lockCollection takes ns exclusively; the returned func releases it.
func (t *lockTable) lockCollection(ns string) func() {
	c := t.coll(ns)
	c.rw.Lock()
	return func() {
		c.rw.Unlock()
		t.unref(ns, c)
	}
}

// lockDocuments takes ns shared and then each document key, in sorted order (no deadlock between
// two commands naming the same documents in different orders); the returned func releases all.
func (t *lockTable) lockDocuments(ns string, keys []string) func() {
	keys = sortedUnique(keys)
	c := t.coll(ns)
	c.rw.RLock()
	held := make([]*docLock, len(keys))
	t.mu.Lock()
	for i, k := range keys {
		d := c.docs[k]
		if d == nil {
			d = &docLock{}
			c.docs[k] = d
		}
		d.refs++
		held[i] = d
	}
	t.mu.Unlock()
	for _, d := range held {
		d.mu.Lock()
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].mu.Unlock()
		}
		t.mu.Lock()
		for i, k := range keys {
			if held[i].refs--; held[i].refs == 0 {
				delete(c.docs, k)
			}
		}
		t.mu.Unlock()
		c.rw.RUnlock()
		t.unref(ns, c)
	}
}

func sortedUnique(keys []string) []string {
	out := append([]string(nil), keys...)
	sort.Strings(out)
	n := 0
	for i, k := range out {
		if i == 0 || k != out[n-1] {
			out[n] = k
			n++
		}
	}
	return out[:n]
}
