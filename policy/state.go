package policy

import "time"

// State is the refresh state of one model: the refresh columns (README.md, "The columns") of one
// row, without the schedule text. A zero time.Time stands for SQL NULL and so
// does an empty string; the models package converts at the database edge.
type State struct {
	// RefreshAt is the next time the service must act on the row: start a
	// refresh, or declare the running attempt timed out. Zero: nothing planned
	// (disabled, or the rule has no more occurrences).
	RefreshAt time.Time
	// AttemptUID is the xid of the running attempt; empty when none runs.
	AttemptUID string
	// AttemptAt is when the last attempt started.
	AttemptAt time.Time
	// AttemptNo is incremented at each start and reset to 0 by a success.
	AttemptNo int
	// TimeoutAt is when the running attempt times out.
	TimeoutAt time.Time
	// DisabledAt (refresh_disabled_until_update): when set, refresh is
	// disabled since that time until the user updates the model.
	DisabledAt time.Time
	// DisabledReason (refresh_disabled_user_friendly_reason) is shown in the
	// application's UI.
	DisabledReason string
	// FailingSince is the start of the current run of failures.
	FailingSince time.Time
	// LastSuccessAt is the end of the last successful refresh.
	LastSuccessAt time.Time
	// LastError is the last failure's technical reason, for operators.
	LastError string
	// Status is the latest attempt's status text: its last progress report
	// while it runs (SetStatus), its final result's after (Apply); Start,
	// a success and Failure clear it.
	Status string
}

// Running reports whether an attempt is in progress.
func (s State) Running() bool { return s.AttemptUID != "" }

// Disabled reports whether refresh is disabled until the user updates the model.
func (s State) Disabled() bool { return !s.DisabledAt.IsZero() }

// Nexter is what the transitions need of a schedule: the first occurrence
// strictly after a time, or the zero time when there is none. *Schedule
// implements it.
type Nexter interface {
	Next(after time.Time) time.Time
}
