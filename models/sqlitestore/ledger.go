package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

var (
	_ models.LedgerStore = (*Store)(nil)
	_ models.LedgerTx    = (*Tx)(nil)
)

// newLedger is the Store's ledger (models.LedgerTable) on db; see
// models.SQLLedgerStore.
func newLedger(db *sql.DB) models.SQLLedgerStore {
	return models.SQLLedgerStore{L: models.SQLLedger{DB: db, Quoted: `"` + models.LedgerTable + `"`, RowValues: true}}
}

// AppendLedger implements models.LedgerStore: entries outside any row's
// transaction (a kind's pause, an incident, the undone attempts after a
// failed push), written as one of the Store's transactions is, after the
// writer before it in the process (see writeLock). Through SQLite's busy
// handler alone it would be an outside writer to the Store's own: during
// a backlog it waited for the outside writers' turn (up to TurnRun and
// more), the dispatcher that recorded the undo with it stalled meanwhile.
func (s *Store) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	release, err := s.writer.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.SQLLedgerStore.AppendLedger(ctx, entries)
}

// AppendLedger implements models.LedgerTx: the entries commit or roll back
// with the transaction's rows.
func (tx *Tx) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return tx.s.L.Append(ctx, tx.tx, entries)
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
