package models

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCountByPriorityLevels: with the priority columns, each level's count
// is asked with Filter's clause in the driver's dialect; without them, one
// count of the whole table, the kind's level, and no probe.
func TestCountByPriorityLevels(t *testing.T) {
	type ask struct {
		s      Priority
		filter string
		args   []any
	}
	var asked []ask
	due := map[Priority]int64{{Level: 10, Source: PriorityKind}: 3, {Level: 5, Source: PriorityRow}: 2, {Level: 0, Source: PriorityOnce}: 1}
	sc := LevelCounts{
		Prioritized: true,
		Quote:       func(c string) string { return `"` + c + `"` },
		Placeholder: "$1",
		Probe: func(col string, after int, first bool) (int, bool, error) {
			switch {
			case col == ColPriorityOnce && first:
				return 0, true, nil
			case col == ColPriority && first:
				return 5, true, nil
			}
			return 0, false, nil
		},
		Count: func(s Priority, filter string, args []any) (int64, error) {
			asked = append(asked, ask{s, filter, args})
			return due[s], nil
		},
	}
	got, err := CountByPriority(10, sc)
	require.NoError(t, err)
	require.Equal(t, []LevelCount{{Level: 0, Due: 1}, {Level: 5, Due: 2}, {Level: 10, Due: 3}}, got)
	require.Equal(t, []ask{
		{Priority{Level: 10, Source: PriorityKind}, `"refresh_priority" IS NULL AND `, nil},
		{Priority{Level: 0, Source: PriorityOnce}, `"refresh_priority_once" = $1 AND `, []any{0}},
		{Priority{Level: 5, Source: PriorityRow}, `"refresh_priority" = $1 AND `, []any{5}},
	}, asked)

	asked = nil
	sc.Prioritized = false
	sc.Probe = func(string, int, bool) (int, bool, error) { panic("a table without the priority columns is probed") }
	got, err = CountByPriority(10, sc)
	require.NoError(t, err)
	require.Equal(t, []LevelCount{{Level: 10, Due: 3}}, got)
	require.Equal(t, []ask{{Priority{Level: 10, Source: PriorityKind}, "", nil}}, asked, "one count, no filter")

	sc.Count = func(Priority, string, []any) (int64, error) { return 0, errors.New("gone") }
	_, err = CountByPriority(10, sc)
	require.EqualError(t, err, "gone")

	// A known due count: the kind's level without counting, when no row
	// has a level of its own (or the table no priority columns).
	known := int64(7)
	sc.KnownDue = &known
	got, err = CountByPriority(10, sc)
	require.NoError(t, err)
	require.Equal(t, []LevelCount{{Level: 10, Due: 7}}, got, "no priority columns")
	asked = nil
	sc.Prioritized = true
	sc.Count = func(s Priority, filter string, args []any) (int64, error) {
		asked = append(asked, ask{s, filter, args})
		return due[s], nil
	}
	sc.Probe = func(col string, after int, first bool) (int, bool, error) {
		return 0, col == ColPriorityOnce && first, nil
	}
	got, err = CountByPriority(10, sc)
	require.NoError(t, err)
	require.Equal(t, []LevelCount{{Level: 0, Due: 1}, {Level: 10, Due: 7}}, got)
	require.Equal(t, []ask{{Priority{Level: 0, Source: PriorityOnce}, `"refresh_priority_once" = $1 AND `, []any{0}}}, asked, "the one-shot level only")
}

// TestAlertsByPriorityUnprioritized: a table without the priority columns
// has one level, the kind's, with the figures of its Counts; no level scan
// runs.
func TestAlertsByPriorityUnprioritized(t *testing.T) {
	oldest := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	none := func(Priority) (time.Time, bool, error) { panic("a level scan on a table without the priority columns") }
	got, err := AlertsByPriority(10, LevelScans{
		Unprioritized: func() (Counts, error) { return Counts{Total: 9, OldestDue: oldest, MaxAttemptNo: 4}, nil },
		Oldest:        none,
	})
	require.NoError(t, err)
	require.Equal(t, []LevelAlert{{Level: 10, OldestDue: oldest, MaxAttemptNo: 4}}, got)

	_, err = AlertsByPriority(10, LevelScans{Unprioritized: func() (Counts, error) { return Counts{}, errors.New("gone") }})
	require.EqualError(t, err, "gone")
}
