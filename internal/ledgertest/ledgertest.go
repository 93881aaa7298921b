// Package ledgertest is a ledger kept in memory, for the tests of what
// reads the ledger (`refresher why`, the API, the model page) before and
// apart from the stores that keep one.
package ledgertest

import (
	"context"
	"sync"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

// Store is a models.Store that also reads the ledger Entries, as a store
// that keeps one does (models.LedgerReader).
type Store struct {
	models.Store
	mu      sync.Mutex
	entries []policy.Entry
	// Reads counts the calls of Ledger.
	reads int
}

// New wraps s with a ledger holding entries (oldest first).
func New(s models.Store, entries ...policy.Entry) *Store {
	return &Store{Store: s, entries: entries}
}

// Add appends entries (oldest first, after those held).
func (s *Store) Add(entries ...policy.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, entries...)
}

// Reads is how many times Ledger was called.
func (s *Store) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Ledger implements models.LedgerReader: the newest limit entries.
func (s *Store) Ledger(_ context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []policy.Entry
	for _, e := range s.entries {
		if e.Kind != kind || e.Event == policy.EventRoutine || (!e.Whole && e.Key != key) || e.At.Before(from) || e.At.After(to) {
			continue
		}
		out = append(out, e)
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// LedgerRoutine implements models.LedgerReader.
func (s *Store) LedgerRoutine(_ context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []policy.Entry
	for _, e := range s.entries {
		if e.Kind != kind || e.Event != policy.EventRoutine || e.At.Before(from) || e.At.After(to) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// LedgerRowSpan implements models.LedgerReader.
func (s *Store) LedgerRowSpan(_ context.Context, kind, key string) (int, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, oldest := 0, time.Time{}
	for _, e := range s.entries {
		if e.Kind == kind && !e.Whole && e.Key == key {
			if n == 0 || e.At.Before(oldest) {
				oldest = e.At
			}
			n++
		}
	}
	return n, oldest, nil
}

var _ models.LedgerReader = (*Store)(nil)
