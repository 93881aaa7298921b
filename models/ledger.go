package models

import (
	"context"
	"time"

	"github.com/refresher/refresher/policy"
)

// LedgerReader reads the ledger: what the service decided about rows and
// kinds (see policy.Entry). `refresher why`, the API and the model page
// read it; the stores that keep the ledger implement it.
type LedgerReader interface {
	// Ledger returns the entries of kind with At in [from, to], oldest
	// first, at most limit: those of the row whose key is key and those
	// of the whole kind (Entry.Key ""). The pauses, holds and incidents
	// that explain why a row did not run are kind entries.
	Ledger(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error)
}
