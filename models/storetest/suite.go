package storetest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/refresher/refresher/models"
)

// Run runs the whole suite against the driver h adapts, each test in
// parallel on its own database.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CheckNamesWhatIsMissing", testCheck},
		{"ClaimDueOrderLimitAndNullKeys", testClaimDue},
		{"ClaimDueCursor", testClaimDueCursor},
		{"ClaimDueSkipsLockedRows", testClaimDueSkipLocked},
		{"ClaimByPriority", testClaimByPriority},
		{"ClaimPrioritySources", testClaimPrioritySources},
		{"ClaimPriorityCursor", testClaimPriorityCursor},
		{"SetPriorityOnce", testSetPriorityOnce},
		{"ClaimUrgentOnly", testClaimUrgentOnly},
		{"Backlog", testBacklog},
		{"BacklogKnownDue", testBacklogKnownDue},
		{"AlertsByLevel", testAlertsByLevel},
		{"UrgentDue", testUrgentDue},
		{"ConcurrentClaimersNeverShareARow", testConcurrentClaimers},
		{"ClaimReadsTheRestOfRunningRowsOnly", testClaimLean},
		{"SaveEveryColumnRoundTrip", testSaveRoundTrip},
		{"SaveLimitsAndDuplicates", testSaveLimits},
		{"SaveWritesOnlyWhatChanged", testSaveOnlyChanged},
		{"SaveManyRows", testSaveMany},
		{"SaveIfAttempt", testSaveIfAttempt},
		{"SaveIfAttemptRestoresOnce", testSaveIfAttemptRestoresOnce},
		{"SaveSuccessesOnlyWhereApplyWould", testSaveSuccesses},
		{"SaveSuccessesAcrossBatches", testSaveSuccessesAcrossBatches},
		{"LockByKeys", testLockByKeys},
		{"LockByKeysWaits", testLockByKeysWaits},
		{"TxRollsBack", testTxRollsBack},
		{"NextDue", testNextDue},
		{"NextDueMany", testNextDueMany},
		{"ClassifyValueRefusedAndTableRefused", testClassify},
		{"MigrateTwice", testMigrateTwice},
		{"MigrateOntoSomeColumns", testMigrateExisting},
		{"MigrateDryRunChangesNothing", testMigrateDryRun},
		{"MigrateMissingTable", testMigrateMissingTable},
		{"OddKeyFindsNothing", testOddKey},
		{"ZeroDate", testZeroDate},
		{"InspectorCounts", testCounts},
		{"InspectorStatesAgreeWithHas", testStatesAgree},
		{"InspectorListPages", testList},
		{"InspectorGet", testGet},
		{"InspectorSearchBoundedScan", testSearchBudget},
		{"LedgerRoundTrip", testLedgerRoundTrip},
		{"LedgerRollsBackWithItsTransaction", testLedgerRollsBack},
		{"LedgerPruneBounds", testLedgerPrune},
		{"LedgerReadsTheNewest", testLedgerReadsTheNewest},
		{"LedgerEmptyAndBangKeys", testLedgerOddKeys},
		{"LedgerRoutineBatches", testLedgerRoutine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if why, ok := h.Skip[tc.name]; ok {
				t.Skip("known failure: " + why)
			}
			tc.fn(t, h)
		})
	}
}

// base is a fixed instant with microseconds.
var base = Base

var (
	must      = Must
	eq        = Eq
	claim     = Claim
	lock      = Lock
	keysOf    = KeysOf
	fullState = FullState
)

// sqlTime is t as a literal every dialect reads as that UTC time.
func sqlTime(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }

// items creates and migrates table "items" with a key of type key.
func items(t *testing.T, env Env, key KeyType) models.Table {
	t.Helper()
	env.CreateItemsTable(t, "items", key)
	_, err := env.Store.Migrate(context.Background(), []string{"items"}, io.Discard, false)
	must(t, err)
	tbl := models.Table{Name: "items", Key: "k", Payload: []string{"input_url", "size"}}
	must(t, env.Store.Check(context.Background(), tbl))
	return tbl
}

func insert(t *testing.T, env Env, key string, refreshAt time.Time) {
	t.Helper()
	at := "NULL"
	if !refreshAt.IsZero() {
		at = sqlTime(refreshAt)
	}
	k := "NULL"
	if key != "" {
		k = "'" + key + "'"
	}
	env.Exec(t, "INSERT INTO items (k, refresh_at, input_url, size) VALUES ("+k+", "+at+", 'https://example.com/"+key+"', 7)")
}

func save(s models.Store, tbl models.Table, rows ...models.Row) error {
	return s.Tx(context.Background(), func(tx models.Tx) error {
		return tx.Save(context.Background(), tbl, rows)
	})
}
