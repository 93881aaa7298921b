package models

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClaimByPriorityAsksBothLevelsAtOnce: before its scans a claim asks
// the first level of both priority columns in one statement (First), and
// Probe only for the levels after those it scanned: a table whose rows have
// no priority costs one lookup and one scan.
func TestClaimByPriorityAsksBothLevelsAtOnce(t *testing.T) {
	var firsts, probes int
	var scans []Priority
	sc := func(levels FirstLevels) PriorityScans {
		return PriorityScans{
			First: func() (FirstLevels, error) { firsts++; return levels, nil },
			Probe: func(string, int, bool) (int, bool, error) { probes++; return 0, false, nil },
			Claim: func(s Priority, _ time.Time, n int) ([]Row, error) {
				scans = append(scans, s)
				return []Row{{Key: "k"}}, nil
			},
			ClearOnce: func([]string) error { return nil },
		}
	}
	rows, err := ClaimByPriority(5, Cursor{}, 10, sc(FirstLevels{}))
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, 1, firsts, "one statement for both first levels")
	require.Equal(t, 0, probes, "no probe without priority levels")
	require.Equal(t, []Priority{{Level: 5, Source: PriorityKind}}, scans)

	firsts, probes, scans = 0, 0, nil
	_, err = ClaimByPriority(5, Cursor{}, 10, sc(FirstLevels{Once: 1, OnceOK: true, Row: 3, RowOK: true}))
	require.NoError(t, err)
	require.Equal(t, 1, firsts)
	require.Equal(t, 2, probes, "the next level of each column scanned")
	require.Equal(t, []Priority{{Level: 1, Source: PriorityOnce}, {Level: 3, Source: PriorityRow}, {Level: 5, Source: PriorityKind}}, scans)
}
