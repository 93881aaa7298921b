package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/ledgertest"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

// TestWhyCommand: `refresher why` reads the row, its schedule and the
// ledger of the kind's store and prints the answer, then the entries it is
// built on; --json prints the API's answer; a store without a ledger, an
// unknown model and a bad --at are refused with what to do. The ledger is
// an in-memory one (ledgertest) over the real database. Not parallel: it
// replaces whyStore.
func TestWhyCommand(t *testing.T) {
	b := setupCommands(t)
	_, err := b.run(t, "migrate", "--config", b.path)
	require.NoError(t, err)
	_, err = b.db.Exec(`INSERT INTO big_tables (uid, input_url, refresh_at) VALUES ('42', 'u', '2026-11-26 00:00:00')`)
	require.NoError(t, err)

	// The kind's rule is daily at 00:00 UTC (no DTSTART: 2000-01-01).
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	entries := []policy.Entry{
		{At: at("2026-11-24T23:55:00Z"), Kind: "big_tables", Whole: true, Event: policy.EventPaused, By: "ops", Note: "incident 42"},
		{At: at("2026-11-25T00:20:00Z"), Kind: "big_tables", Whole: true, Event: policy.EventResumed, By: "ops"},
		{At: at("2026-11-25T00:20:00Z"), Kind: "big_tables", Key: "42", Event: policy.EventDispatched, Attempt: "a1", Planned: at("2026-11-25T00:00:00Z")},
		{At: at("2026-11-25T00:21:00Z"), Kind: "big_tables", Key: "42", Event: policy.EventSucceeded, Attempt: "a1", Next: at("2026-11-26T00:00:00Z")},
		{At: at("2026-11-25T00:21:00Z"), Kind: "other", Key: "42", Event: policy.EventFailed}, // another kind's
	}
	var ledger *ledgertest.Store
	whyStore = func(s models.Store) models.Store { ledger = ledgertest.New(s, entries...); return ledger }
	t.Cleanup(func() { whyStore = func(s models.Store) models.Store { return s } })

	// The ledger off (the default): the entries left are not told as if
	// nothing happened since; the row's columns answer.
	out, err := b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "42", "--at", "2026-11-25T00:05:00Z")
	require.NoError(t, err)
	require.Equal(t, "Nov 25 00:00 UTC was planned. The ledger is off (ledger.enabled: false); its newest entry about this model or its kind is from Nov 25 00:21 UTC. The model's columns record no success.\n", out)

	t.Setenv("REFRESHER_LEDGER", "{enabled: true}")
	out, err = b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "42", "--at", "2026-11-25T00:05:00Z")
	require.NoError(t, err)
	require.Equal(t, `Nov 25 00:00 UTC was planned. It was not dispatched at 00:00: the kind was paused from Nov 24 23:55 to 00:20 by ops ('incident 42'). It was dispatched at 00:20 and succeeded at 00:21.

entries it is built on (the ledger read from Nov 18 00:00 to Nov 26 01:00, times UTC):
  2026-11-24 23:55:00 UTC  (kind)  paused      by=ops note=incident 42
  2026-11-25 00:20:00 UTC  (kind)  resumed     by=ops
  2026-11-25 00:20:00 UTC  42      dispatched  attempt=a1 planned=00:00:00
  2026-11-25 00:21:00 UTC  42      succeeded   attempt=a1 next=2026-11-26T00:00:00
`, out)
	require.Equal(t, 1, ledger.Reads(), "one read of the row's entries")

	out, err = b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "42", "--at", "2026-11-25T01:00:00+01:00", "--json")
	require.NoError(t, err)
	var rep refresher.WhyReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "succeeded", rep.Cause)
	require.Equal(t, at("2026-11-25T00:00:00Z"), *rep.Occurrence)
	require.Equal(t, at("2026-11-25T00:00:00Z"), rep.At)
	require.Len(t, rep.Entries, 4)
	require.Nil(t, rep.Entries[0].UID)
	require.Equal(t, "42", *rep.Entries[2].UID)

	_, err = b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "ghost", "--at", "2026-11-25T00:05:00Z")
	require.ErrorContains(t, err, `why: model "ghost" of table big_tables: no such model`)
	_, err = b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "42", "--at", "yesterday")
	require.ErrorContains(t, err, `--at "yesterday": use RFC 3339, e.g. 2026-11-25T09:00:00Z`)

	whyStore = func(s models.Store) models.Store { return struct{ models.Store }{s} } // hides its models.LedgerReader
	_, err = b.run(t, "why", "--config", b.path, "--kind", "big_tables", "--key", "42")
	require.EqualError(t, err, "why: kind big_tables: its database's store keeps no ledger, so there is no history to explain",
		"as docs/operating.md says, without Go's names")
}

// An entry's times on another day than its own say their date.
func TestWhyEntryDetail(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 0, 0, 5, 0, time.UTC)
	e := policy.Entry{At: at, Key: "42", Event: policy.EventSucceeded, Attempt: "a1",
		Planned: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), Next: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
	require.Equal(t, "attempt=a1 planned=00:00:00 next=2026-11-26T00:00:00", entryDetail(e, time.UTC))
}
