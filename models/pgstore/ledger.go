package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

var (
	_ models.LedgerStore = (*Store)(nil)
	_ models.LedgerTx    = (*Tx)(nil)
)

// ledgerTable is models.LedgerTable quoted.
const ledgerTable = `"` + models.LedgerTable + `"`

func dollar(i int) string { return "$" + strconv.Itoa(i) }

// insertLedger inserts a batch of entries in one statement whatever
// their number (its text is prepared once): the columns as arrays.
const insertLedger = `INSERT INTO ` + ledgerTable + ` (kind, row_key, at_us, event, detail)
SELECT k, r, a, e, NULLIF(d, '') FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::text[]) AS v(k, r, a, e, d)`

// appendLedger inserts entries through exec, one statement per
// models.MaxLedgerInsert of them.
func appendLedger(ctx context.Context, exec func(ctx context.Context, sql string, args ...any) error, entries []policy.Entry) error {
	rows := models.GetLedgerRows()
	defer models.PutLedgerRows(rows)
	for len(entries) > 0 {
		n := min(len(entries), models.MaxLedgerInsert)
		rows.Fill(entries[:n])
		kinds, ats, events := make([]string, n), make([]int64, n), make([]string, n)
		for i, e := range entries[:n] {
			kinds[i], ats[i], events[i] = e.Kind, models.Micros(e.At), string(e.Event)
		}
		if err := exec(ctx, insertLedger, kinds, rows.Keys, ats, events, rows.Details); err != nil {
			return fmt.Errorf("record %d ledger entries: %w", n, err)
		}
		entries = entries[n:]
	}
	return nil
}

// AppendLedger implements models.LedgerTx: the entries commit or roll back
// with the transaction's rows.
func (tx *Tx) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return appendLedger(ctx, func(ctx context.Context, sql string, args ...any) error {
		_, err := tx.tx.Exec(ctx, sql, args...)
		return err
	}, entries)
}

// AppendLedger implements models.LedgerStore.
func (s *Store) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return appendLedger(ctx, func(ctx context.Context, sql string, args ...any) error {
		_, err := s.pool.Exec(ctx, sql, args...)
		return err
	}, entries)
}

// Ledger implements models.LedgerReader.
func (s *Store) Ledger(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error) {
	out, err := s.readLedger(ctx, kind, models.LedgerReadArgs(kind, key, false, from, to, limit), true)
	if err != nil {
		return nil, fmt.Errorf("read the ledger of %s %q: %w", kind, key, err)
	}
	return out, nil
}

// LedgerRoutine implements models.LedgerReader.
func (s *Store) LedgerRoutine(ctx context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error) {
	out, err := s.readLedger(ctx, kind, models.LedgerReadArgs(kind, "", true, from, to, limit), false)
	if err != nil {
		return nil, fmt.Errorf("read the routine batches of %s in the ledger: %w", kind, err)
	}
	return out, nil
}

func (s *Store) readLedger(ctx context.Context, kind string, args []any, newest bool) ([]policy.Entry, error) {
	rows, err := s.pool.Query(ctx, models.LedgerSelect(ledgerTable, dollar, newest), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return models.ScanLedger(rows, kind, newest)
}

// LedgerRowSpan implements models.LedgerReader.
func (s *Store) LedgerRowSpan(ctx context.Context, kind, key string) (int, time.Time, error) {
	var n, oldest int64
	if err := s.pool.QueryRow(ctx, models.LedgerSpanSelect(ledgerTable, dollar), kind, models.LedgerKey(key)).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count the ledger's entries of %s %q: %w", kind, key, err)
	}
	return int(n), models.FromMicros(oldest), nil
}

// LedgerReady implements models.LedgerStore.
func (s *Store) LedgerReady(ctx context.Context) error {
	var one int
	err := s.pool.QueryRow(ctx, "SELECT 1 FROM "+ledgerTable+" WHERE 1 = 0").Scan(&one)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return models.LedgerMissing(err)
	}
	return nil
}

// PruneLedger implements models.LedgerStore.
func (s *Store) PruneLedger(ctx context.Context, b models.LedgerBounds, now time.Time, from models.LedgerPrune) (int, models.LedgerPrune, error) {
	p := models.LedgerPruner{
		Age: func(ctx context.Context, chunk int, before int64) (int, error) {
			return models.AgeChunk(ctx, chunk, before, func(ctx context.Context, offset int) (int64, bool, error) {
				var id int64
				err := s.pool.QueryRow(ctx, models.LedgerChunkEnd(ledgerTable, dollar), offset).Scan(&id)
				if errors.Is(err, pgx.ErrNoRows) {
					return 0, false, nil
				}
				return id, err == nil, err
			}, func(ctx context.Context, upTo, before int64) (int, error) {
				tag, err := s.pool.Exec(ctx, models.LedgerAgeDelete(ledgerTable, dollar), upTo, before)
				return int(tag.RowsAffected()), err
			})
		},
		Groups: func(ctx context.Context, kind, key string, chunk int) ([]models.LedgerGroup, error) {
			rows, err := s.pool.Query(ctx, models.LedgerGroups(ledgerTable, dollar, true), kind, key, chunk)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []models.LedgerGroup
			for rows.Next() {
				var g models.LedgerGroup
				var n int64
				if err := rows.Scan(&g.Kind, &g.Key, &n); err != nil {
					return nil, err
				}
				g.Count = int(n)
				out = append(out, g)
			}
			return out, rows.Err()
		},
		Trim: func(ctx context.Context, g models.LedgerGroup, keep int) (int, error) {
			var cut, id int64
			err := s.pool.QueryRow(ctx, models.LedgerCutoff(ledgerTable, dollar), g.Kind, g.Key, keep-1).Scan(&cut, &id)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			tag, err := s.pool.Exec(ctx, models.LedgerCountDelete(ledgerTable, dollar), g.Kind, g.Key, cut, id)
			return int(tag.RowsAffected()), err
		},
	}
	return p.Prune(ctx, b, now, from)
}

// LedgerDDL creates the ledger; the texts collate as "C", so that keys
// compare byte by byte and the index serves the pruning's walk in order.
func (dialect) LedgerDDL() []string {
	return []string{`CREATE TABLE IF NOT EXISTS ` + ledgerTable + ` (
  "id" bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  "kind" text COLLATE "C" NOT NULL,
  "row_key" text COLLATE "C" NOT NULL,
  "at_us" bigint NOT NULL,
  "event" text NOT NULL,
  "detail" text NULL
)`,
		`CREATE INDEX IF NOT EXISTS "refresher_ledger_row_idx" ON ` + ledgerTable + ` ("kind", "row_key", "at_us")`}
}
