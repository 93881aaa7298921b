package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refresher/refresher/policy"
)

// LedgerReader reads the ledger: what the service decided about rows and
// kinds (see policy.Entry). `refresher why`, the API and the model page
// read it; the stores that keep the ledger implement it.
type LedgerReader interface {
	// Ledger returns the newest entries of kind with At in [from, to], at
	// most limit, oldest first: those of the row whose key is key and those
	// of the whole kind (Entry.Whole) but its routine batches. The pauses,
	// holds and incidents that explain why a row did not run are kind
	// entries.
	Ledger(ctx context.Context, kind, key string, from, to time.Time, limit int) ([]policy.Entry, error)
	// LedgerRoutine returns the kind's batches of routine successes
	// (policy.EventRoutine) with At in [from, to], the oldest limit of
	// them, oldest first.
	LedgerRoutine(ctx context.Context, kind string, from, to time.Time, limit int) ([]policy.Entry, error)
	// LedgerRowSpan returns how many entries of the row whose key is key
	// the ledger holds, and the oldest one's time (zero when none): the
	// count bound may have pruned what came before it.
	LedgerRowSpan(ctx context.Context, kind, key string) (n int, oldest time.Time, err error)
}

// LedgerTable is the table that keeps the ledger, one per database that
// holds kinds: `refresher migrate` creates it (migrations.Dialect's
// LedgerDDL) beside the migrations' records. Its columns:
//
//	id      auto-increment primary key: the order of insertion, which the
//	        age bound prunes along
//	kind    the kind's name
//	row_key the row's key as LedgerRowKey writes it: "" for an entry of
//	        the whole kind, LedgerRoutineKey for its batches of routine
//	        successes, a row's key with a '!' before it when it is empty
//	        or starts with '!'
//	at_us   Entry.At in microseconds since 1970 UTC (an integer on every
//	        database, so that the three drivers compare it alike)
//	event   Entry.Event
//	detail  the other fields of the Entry as compact JSON
//	        (AppendLedgerDetail), NULL when they are all zero
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
// the last KindMaxEntries not older than MaxAge; of each kind's batches
// of routine successes, the last RoutineMaxEntries not older than MaxAge.
type LedgerBounds struct {
	MaxEntries        int
	KindMaxEntries    int
	RoutineMaxEntries int
	MaxAge            time.Duration
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
// (at most 5 parameters each: within every database's limit).
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
	// Dispatched: Entry.Dispatched.
	Dispatched int64 `json:"dp,omitempty"`
	// Count and DispatchedLast: an EventRoutine entry's.
	Count          int   `json:"c,omitempty"`
	DispatchedLast int64 `json:"dl,omitempty"`
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

// AppendLedgerDetail appends e's detail column to buf: the JSON that
// LedgerEntry reads, written by hand (a batch writes one per row, and
// encoding/json's reflection was most of the ledger's cost); buf is
// returned as it was when e has no detail (NULL).
func AppendLedgerDetail(buf []byte, e policy.Entry) []byte {
	start := len(buf)
	buf = append(buf, '{')
	buf = appendText(buf, start, "a", e.Attempt, maxLedgerAttempt)
	buf = appendMicros(buf, start, "p", e.Planned)
	buf = appendMicros(buf, start, "n", e.Next)
	buf = appendText(buf, start, "b", e.Bound, maxLedgerName)
	buf = appendMicros(buf, start, "u", e.Until)
	buf = appendText(buf, start, "r", e.Reason, maxLedgerText)
	if e.Disabled {
		buf = append(appendKey(buf, start, "d"), "true"...)
	}
	if e.Priority != nil {
		buf = strconv.AppendInt(appendKey(buf, start, "pr"), int64(*e.Priority), 10)
	}
	buf = appendText(buf, start, "by", e.By, maxLedgerName)
	buf = appendText(buf, start, "no", e.Note, maxLedgerText)
	buf = appendText(buf, start, "g", e.Group, maxLedgerName)
	buf = appendMicros(buf, start, "dp", e.Dispatched)
	if e.Count != 0 {
		buf = strconv.AppendInt(appendKey(buf, start, "c"), int64(e.Count), 10)
	}
	buf = appendMicros(buf, start, "dl", e.DispatchedLast)
	if len(buf) == start+1 {
		return buf[:start]
	}
	return append(buf, '}')
}

// appendKey appends a member's name, after a comma unless it is the
// first of the object that starts at buf[start].
func appendKey(buf []byte, start int, key string) []byte {
	if len(buf) > start+1 {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, key...)
	return append(buf, '"', ':')
}

func appendMicros(buf []byte, start int, key string, t time.Time) []byte {
	if t.IsZero() {
		return buf
	}
	return strconv.AppendInt(appendKey(buf, start, key), t.UnixMicro(), 10)
}

// appendText appends a text member cut to max characters; nothing when
// s is empty. Plain ASCII is written as it is; anything else goes through
// encoding/json, which escapes it and mends invalid UTF-8.
func appendText(buf []byte, start int, key, s string, max int) []byte {
	if s == "" {
		return buf
	}
	buf = appendKey(buf, start, key)
	if len(s) > max {
		s = policy.Truncate(s, max)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// LedgerEntry rebuilds an Entry from a row of LedgerTable; rowKey is the
// row_key column (LedgerRowKey).
func LedgerEntry(kind, rowKey string, atUS int64, event string, detail []byte) (policy.Entry, error) {
	key, whole := ledgerKeyOf(rowKey)
	e := policy.Entry{At: FromMicros(atUS), Kind: kind, Key: key, Whole: whole, Event: policy.Event(event)}
	if len(detail) == 0 {
		return e, nil
	}
	var d ledgerDetail
	if err := json.Unmarshal(detail, &d); err != nil {
		return e, fmt.Errorf("ledger entry %s of %s %q at %s: detail: %w", event, kind, key, e.At.Format(time.RFC3339Nano), err)
	}
	e.Attempt, e.Planned, e.Next, e.Bound = d.Attempt, FromMicros(d.Planned), FromMicros(d.Next), d.Bound
	e.Until, e.Reason, e.Disabled, e.Priority = FromMicros(d.Until), d.Reason, d.Disabled, d.Priority
	e.By, e.Note, e.Group, e.Dispatched = d.By, d.Note, d.Group, FromMicros(d.Dispatched)
	e.Count, e.DispatchedLast = d.Count, FromMicros(d.DispatchedLast)
	return e, nil
}

// LedgerRows is a batch of entries as the columns of LedgerTable, for
// the drivers' INSERTs: Keys and Details hold row_key (LedgerRowKey) and
// detail ("" for NULL) of each entry.
type LedgerRows struct {
	Keys, Details []string
	buf           []byte
	ends          []int
}

// ledgerRows reuses the buffers of LedgerRows from batch to batch.
var ledgerRows = sync.Pool{New: func() any { return new(LedgerRows) }}

// GetLedgerRows returns a LedgerRows for one batch; PutLedgerRows gives it
// back once its statement ran.
func GetLedgerRows() *LedgerRows { return ledgerRows.Get().(*LedgerRows) }

// PutLedgerRows: see GetLedgerRows.
func PutLedgerRows(r *LedgerRows) {
	clear(r.Keys)
	clear(r.Details)
	ledgerRows.Put(r)
}

// Fill sets r to es's keys and details; the details share one string.
func (r *LedgerRows) Fill(es []policy.Entry) {
	r.Keys, r.Details, r.buf, r.ends = r.Keys[:0], r.Details[:0], r.buf[:0], r.ends[:0]
	for _, e := range es {
		r.buf = AppendLedgerDetail(r.buf, e)
		r.ends = append(r.ends, len(r.buf))
		r.Keys = append(r.Keys, LedgerRowKey(e))
	}
	all, from := string(r.buf), 0
	for _, end := range r.ends {
		r.Details = append(r.Details, all[from:end])
		from = end
	}
}

// LedgerValuesSQL is the INSERT of es into the quoted ledger table for
// the drivers whose placeholder is "?" (MySQL, SQLite), and its
// arguments: row_key and detail are arguments, while at_us (a number), and
// kind and event when they hold only letters, digits, '_' and '-' (a
// kind's name, an event word), are written as literals: three arguments
// fewer per row to box and escape.
func LedgerValuesSQL(quoted string, es []policy.Entry, r *LedgerRows) (string, []any) {
	r.Fill(es)
	var b strings.Builder
	size := 80
	for _, e := range es {
		size += len(e.Kind) + len(e.Event) + 32 // ('kind',?,1763719200000000,'event',?),
	}
	b.Grow(size)
	b.WriteString("INSERT INTO ")
	b.WriteString(quoted)
	b.WriteString(" (kind, row_key, at_us, event, detail) VALUES ")
	args := make([]any, 0, 2*len(es)+4)
	word := func(s string) {
		if plainWord(s) {
			b.WriteByte('\'')
			b.WriteString(s)
			b.WriteByte('\'')
			return
		}
		b.WriteByte('?')
		args = append(args, s)
	}
	var num [20]byte
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		word(e.Kind)
		b.WriteString(",?,")
		args = append(args, r.Keys[i])
		b.Write(strconv.AppendInt(num[:0], Micros(e.At), 10))
		b.WriteByte(',')
		word(string(e.Event))
		if r.Details[i] == "" {
			b.WriteString(",NULL)")
			continue
		}
		b.WriteString(",?)")
		args = append(args, r.Details[i])
	}
	return b.String(), args
}

// plainWord reports whether s is 1 to 64 letters, digits, '_' and '-':
// safe as a SQL literal in every dialect.
func plainWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
