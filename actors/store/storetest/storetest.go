// Package storetest holds state directories whose disk misbehaves on
// purpose, for the tests of the packages above actors/store (actors,
// actors/cluster, cmd/hapticd). Only tests import it.
package storetest

import (
	"sync"
	"sync/atomic"

	"github.com/hapticd/hapticd/actors/store"
)

// PastCommit is a state directory whose durable writes of the documents
// it holds stop just past their commit point (the value in its temp file,
// synced; the rename and the directory's fsync left), as a slow directory
// fsync holds them, until Release: then they land. It holds nothing until
// Hold or HoldEvery. It is an actors.Store: Options.WrapStore returns
// New().Over(s.(*store.Store)).
type PastCommit struct {
	*store.Store
	every   atomic.Bool
	name    atomic.Pointer[string]
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// New returns a PastCommit to put over a store with Over.
func New() *PastCommit {
	return &PastCommit{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

// Over puts h over disk and returns h.
func (h *PastCommit) Over(disk *store.Store) *PastCommit {
	h.Store = disk
	return h
}

// Hold holds the durable writes of document name from now on.
func (h *PastCommit) Hold(name string) { h.name.Store(&name) }

// HoldEvery holds the durable writes of every document from now on.
func (h *PastCommit) HoldEvery() { h.every.Store(true) }

// Entered is ready once a write is held (the first of those not waited
// for yet: a test waits for one write).
func (h *PastCommit) Entered() <-chan struct{} { return h.entered }

// Release lets every held write land, and any later one through; it may
// be called more than once (a test's cleanup calls it too, before the
// service's shutdown, which waits for the writes).
func (h *PastCommit) Release() { h.once.Do(func() { close(h.release) }) }

// SaveGated writes as store.Store does, held past the commit point when
// name is held.
func (h *PastCommit) SaveGated(name string, v any, commit func() bool) error {
	held := h.name.Load()
	if !h.every.Load() && (held == nil || *held != name) {
		return h.Store.SaveGated(name, v, commit)
	}
	return h.Store.SaveGated(name, v, func() bool {
		if !commit() {
			return false
		}
		select {
		case h.entered <- struct{}{}:
		default: // the test waits for the first
		}
		<-h.release
		return true
	})
}
