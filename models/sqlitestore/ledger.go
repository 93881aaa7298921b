package sqlitestore

import (
	"context"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

var (
	_ models.LedgerStore = (*Store)(nil)
	_ models.LedgerTx    = (*Tx)(nil)
)

// ledger is the Store's ledger (models.LedgerTable); see models.SQLLedger.
func (s *Store) ledger() models.SQLLedger {
	return models.SQLLedger{DB: s.db, Quoted: `"` + models.LedgerTable + `"`, RowValues: true}
}

// AppendLedger implements models.LedgerTx: the entries commit or roll back
// with the transaction's rows.
func (tx *Tx) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return tx.s.ledger().Append(ctx, tx.tx, entries)
}

// AppendLedger implements models.LedgerStore.
func (s *Store) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return s.ledger().Append(ctx, s.db, entries)
}

// Ledger implements models.LedgerReader.
func (s *Store) Ledger(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error) {
	return s.ledger().Read(ctx, kind, key, from, to, limit)
}

// LedgerRoutine implements models.LedgerReader.
func (s *Store) LedgerRoutine(ctx context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error) {
	return s.ledger().Routine(ctx, kind, from, to, limit)
}

// LedgerRowSpan implements models.LedgerReader.
func (s *Store) LedgerRowSpan(ctx context.Context, kind, key string) (int, time.Time, error) {
	return s.ledger().RowSpan(ctx, kind, key)
}

// LedgerReady implements models.LedgerStore.
func (s *Store) LedgerReady(ctx context.Context) error { return s.ledger().Ready(ctx) }

// PruneLedger implements models.LedgerStore.
func (s *Store) PruneLedger(ctx context.Context, b models.LedgerBounds, now time.Time, from models.LedgerPrune) (int, models.LedgerPrune, error) {
	return s.ledger().Pruner().Prune(ctx, b, now, from)
}

// LedgerDDL creates the ledger; INTEGER PRIMARY KEY is the rowid.
func (dialect) LedgerDDL() []string {
	return []string{`CREATE TABLE IF NOT EXISTS "` + models.LedgerTable + `" (
  "id" INTEGER PRIMARY KEY,
  "kind" TEXT NOT NULL,
  "row_key" TEXT NOT NULL,
  "at_us" INTEGER NOT NULL,
  "event" TEXT NOT NULL,
  "detail" TEXT
)`,
		`CREATE INDEX IF NOT EXISTS "idx_refresher_ledger_row" ON "` + models.LedgerTable + `" ("kind", "row_key", "at_us")`}
}
