package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

// LedgerTable is the table that keeps the ledger, one per database that
// holds kinds: `refresher migrate` creates it (migrations.Dialect's
// LedgerDDL) beside the migrations' records. Its columns:
//
//	id      auto-increment primary key: the order of insertion, which the
//	        age bound prunes along
//	kind    the kind's name
//	row_key the row's key; "" for an entry of the whole kind
//	at_us   Entry.At in microseconds since 1970 UTC (an integer on every
//	        database, so that the three drivers compare it alike)
//	event   Entry.Event
//	detail  the other fields of the Entry as compact JSON (LedgerDetail),
//	        NULL when they are all zero
//
// and one index on (kind, row_key, at_us), which serves the read
// (LedgerReader) and the count bound.
const LedgerTable = "refresher_ledger"

// LedgerTx is a transaction that records ledger entries with the rows it
// saves: an entry of a batch that rolls back is gone with it. Each
// driver's Tx implements it.
type LedgerTx interface {
	// AppendLedger inserts entries, in one statement per MaxLedgerInsert
	// of them.
	AppendLedger(ctx context.Context, entries []policy.Entry) error
}

// LedgerStore is a Store that keeps the ledger: it reads it, records the
// entries that belong to no row's transaction (the kind's pauses, holds
// and incidents) and prunes it. Each driver's Store implements it.
type LedgerStore interface {
	LedgerReader
	// LedgerReady reports whether LedgerTable exists; the error says to run
	// `refresher migrate` when it does not.
	LedgerReady(ctx context.Context) error
	// AppendLedger is LedgerTx.AppendLedger in a statement of its own.
	AppendLedger(ctx context.Context, entries []policy.Entry) error
	// PruneLedger removes one chunk of what b no longer keeps: of the
	// first b.Chunk entries by id those older than b.MaxAge, or, once the
	// age is done, the entries beyond the counts of b.Chunk (kind, key)
	// groups. It returns how many it removed and where the next call goes
	// on (see LedgerPrune).
	PruneLedger(ctx context.Context, b LedgerBounds, now time.Time, from LedgerPrune) (removed int, next LedgerPrune, err error)
}

// LedgerBounds is what the ledger keeps: of each row, the last MaxEntries
// entries not older than MaxAge; of each kind's own entries (Key ""),
// the last KindMaxEntries not older than MaxAge.
type LedgerBounds struct {
	MaxEntries     int
	KindMaxEntries int
	MaxAge         time.Duration
	// Chunk bounds the entries one PruneLedger call removes, and the
	// (kind, key) groups it counts.
	Chunk int
}

// LedgerPrune is where PruneLedger goes on: the age bound is applied
// first, along the primary key from its start, until a chunk finds
// nothing old; then the count bound walks the (kind, key) groups of the
// index in order from after (Kind, Key), Chunk groups a call, and starts
// over with the age when it reaches the end.
type LedgerPrune struct {
	// Counting: the age is done for this round; the walk is at Kind, Key.
	Counting  bool
	Kind, Key string
}

// MaxLedgerInsert is the most entries one INSERT of the ledger carries
// (5 parameters each: within every database's limit).
const MaxLedgerInsert = 1000

// ledgerDetail is an Entry's fields beyond kind, key, time and event, as
// the detail column holds them: short names, times in microseconds, zero
// values left out.
type ledgerDetail struct {
	Attempt  string `json:"a,omitempty"`
	Planned  int64  `json:"p,omitempty"`
	Next     int64  `json:"n,omitempty"`
	Bound    string `json:"b,omitempty"`
	Until    int64  `json:"u,omitempty"`
	Reason   string `json:"r,omitempty"`
	Disabled bool   `json:"d,omitempty"`
	Priority *int   `json:"pr,omitempty"`
	By       string `json:"by,omitempty"`
	Note     string `json:"no,omitempty"`
	Group    string `json:"g,omitempty"`
}

// Micros is t in microseconds since 1970 UTC; 0 for the zero time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromMicros is the time Micros(t) gave; the zero time for 0.
func FromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// Caps of the detail's texts, in characters (policy.Truncate): an
// attempt UID (20 for the service's; a worker's stale answer may carry
// anything), a reason or note, a name. The detail then fits MySQL's TEXT
// (64 KiB) whatever a worker sends, so an entry never fails its batch.
const (
	maxLedgerAttempt = 64
	maxLedgerText    = policy.MaxLastErrorLen
	maxLedgerName    = 255
)

// LedgerDetail encodes e's detail column; nil (NULL) when it has none.
func LedgerDetail(e policy.Entry) any {
	d := ledgerDetail{Attempt: policy.Truncate(e.Attempt, maxLedgerAttempt), Planned: Micros(e.Planned), Next: Micros(e.Next),
		Bound: e.Bound, Until: Micros(e.Until), Reason: policy.Truncate(e.Reason, maxLedgerText), Disabled: e.Disabled,
		Priority: e.Priority, By: policy.Truncate(e.By, maxLedgerName), Note: policy.Truncate(e.Note, maxLedgerText),
		Group: policy.Truncate(e.Group, maxLedgerName)}
	if d == (ledgerDetail{}) {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil { // strings and numbers only: cannot happen
		return nil
	}
	return string(b)
}

// LedgerEntry rebuilds an Entry from a row of LedgerTable.
func LedgerEntry(kind, key string, atUS int64, event string, detail []byte) (policy.Entry, error) {
	e := policy.Entry{At: FromMicros(atUS), Kind: kind, Key: key, Event: policy.Event(event)}
	if len(detail) == 0 {
		return e, nil
	}
	var d ledgerDetail
	if err := json.Unmarshal(detail, &d); err != nil {
		return e, fmt.Errorf("ledger entry %s of %s %q at %s: detail: %w", event, kind, key, e.At.Format(time.RFC3339Nano), err)
	}
	e.Attempt, e.Planned, e.Next, e.Bound = d.Attempt, FromMicros(d.Planned), FromMicros(d.Next), d.Bound
	e.Until, e.Reason, e.Disabled, e.Priority = FromMicros(d.Until), d.Reason, d.Disabled, d.Priority
	e.By, e.Note, e.Group = d.By, d.Note, d.Group
	return e, nil
}

// LedgerArgs appends the 5 arguments of e's row (kind, row_key, at_us,
// event, detail), in the column order of LedgerInsert.
func LedgerArgs(args []any, e policy.Entry) []any {
	return append(args, e.Kind, LedgerKey(e.Key), Micros(e.At), string(e.Event), LedgerDetail(e))
}

// LedgerInsert is the INSERT of n entries into the quoted ledger table,
// with placeholder(i) the i-th parameter's (from 1).
func LedgerInsert(quoted string, n int, placeholder func(i int) string) string {
	var b strings.Builder
	b.Grow(80 + n*24)
	b.WriteString("INSERT INTO ")
	b.WriteString(quoted)
	b.WriteString(" (kind, row_key, at_us, event, detail) VALUES ")
	p := 1
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j := 0; j < 5; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(placeholder(p))
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}
