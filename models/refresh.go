package models

import (
	"time"

	"github.com/refresher/refresher/policy"
)

// Refresh is the set of refresh columns (README.md, "The columns") as a GORM struct. Embed it in
// the application's model so that GORM's AutoMigrate creates the columns
// with the types refresher expects, and the application can read why a model
// is disabled:
//
//	type BigTable struct {
//		ID       uint
//		InputURL string
//		models.Refresh
//	}
//
// A nil pointer is SQL NULL. All times are UTC. To create a model the
// application sets RefreshAt to the current UTC time (README.md, "The SQL your app writes": refresh_at =
// UTC_TIMESTAMP(6)); to re-enable one after the user fixed it, it calls
// Enable. Running `refresher migrate` on a table created this way records
// the migrations as applied and changes nothing.
type Refresh struct {
	// RefreshAt is when the service acts on the row next; nil: nothing planned.
	RefreshAt *time.Time `gorm:"column:refresh_at;precision:6;index" json:"refresh_at,omitempty"`
	// RefreshAttemptUID is the xid of the running attempt; nil when none runs.
	RefreshAttemptUID *string `gorm:"column:refresh_attempt_uid;type:char(20)" json:"refresh_attempt_uid,omitempty"`
	// RefreshAttemptAt is when the last attempt started.
	RefreshAttemptAt *time.Time `gorm:"column:refresh_attempt_at;precision:6" json:"refresh_attempt_at,omitempty"`
	// RefreshAttemptNo counts starts since the last success. The tag says
	// "integer" because GORM reads "int" as its generic integer type and
	// sizes it from the Go field (BIGINT); "integer" reaches MySQL as INT.
	RefreshAttemptNo int `gorm:"column:refresh_attempt_no;type:integer;not null;default:0" json:"refresh_attempt_no"`
	// RefreshTimeoutAt is when the running attempt times out.
	RefreshTimeoutAt *time.Time `gorm:"column:refresh_timeout_at;precision:6" json:"refresh_timeout_at,omitempty"`
	// RefreshDisabledUntilUpdate, when set, is when refresh was disabled until
	// the user updates the model.
	RefreshDisabledUntilUpdate *time.Time `gorm:"column:refresh_disabled_until_update;precision:6" json:"refresh_disabled_until_update,omitempty"`
	// RefreshDisabledUserFriendlyReason is the text for the application's UI.
	RefreshDisabledUserFriendlyReason *string `gorm:"column:refresh_disabled_user_friendly_reason;type:varchar(1024)" json:"refresh_disabled_user_friendly_reason,omitempty"`
	// RefreshRRule is this row's schedule; nil: the kind's default.
	RefreshRRule *string `gorm:"column:refresh_rrule;type:text" json:"refresh_rrule,omitempty"`
	// RefreshFailingSince is the start of the current run of failures.
	RefreshFailingSince *time.Time `gorm:"column:refresh_failing_since;precision:6" json:"refresh_failing_since,omitempty"`
	// RefreshLastSuccessAt is the end of the last successful refresh.
	RefreshLastSuccessAt *time.Time `gorm:"column:refresh_last_success_at;precision:6" json:"refresh_last_success_at,omitempty"`
	// RefreshLastError is the last failure's technical reason.
	RefreshLastError *string `gorm:"column:refresh_last_error;type:varchar(1024)" json:"refresh_last_error,omitempty"`
	// RefreshStatus is the latest attempt's status text: its last progress
	// report while it runs, its final result's after; nil when it gave none.
	RefreshStatus *string `gorm:"column:refresh_status;type:varchar(255)" json:"refresh_status,omitempty"`
}

// State returns the refresh state (all columns but refresh_rrule) as
// policy.State: nil becomes the zero time or "", times are UTC.
func (r Refresh) State() policy.State {
	return policy.State{
		RefreshAt:      fromTimePtr(r.RefreshAt),
		AttemptUID:     fromStringPtr(r.RefreshAttemptUID),
		AttemptAt:      fromTimePtr(r.RefreshAttemptAt),
		AttemptNo:      r.RefreshAttemptNo,
		TimeoutAt:      fromTimePtr(r.RefreshTimeoutAt),
		DisabledAt:     fromTimePtr(r.RefreshDisabledUntilUpdate),
		DisabledReason: fromStringPtr(r.RefreshDisabledUserFriendlyReason),
		FailingSince:   fromTimePtr(r.RefreshFailingSince),
		LastSuccessAt:  fromTimePtr(r.RefreshLastSuccessAt),
		LastError:      fromStringPtr(r.RefreshLastError),
		Status:         fromStringPtr(r.RefreshStatus),
	}
}

// SetState stores s in the struct's columns (the zero time and "" become
// nil) and leaves RefreshRRule alone.
func (r *Refresh) SetState(s policy.State) {
	r.RefreshAt = toTimePtr(s.RefreshAt)
	r.RefreshAttemptUID = toStringPtr(s.AttemptUID)
	r.RefreshAttemptAt = toTimePtr(s.AttemptAt)
	r.RefreshAttemptNo = s.AttemptNo
	r.RefreshTimeoutAt = toTimePtr(s.TimeoutAt)
	r.RefreshDisabledUntilUpdate = toTimePtr(s.DisabledAt)
	r.RefreshDisabledUserFriendlyReason = toStringPtr(s.DisabledReason)
	r.RefreshFailingSince = toTimePtr(s.FailingSince)
	r.RefreshLastSuccessAt = toTimePtr(s.LastSuccessAt)
	r.RefreshLastError = toStringPtr(s.LastError)
	r.RefreshStatus = toStringPtr(s.Status)
}

// Rule returns refresh_rrule, "" when NULL (the kind's default schedule).
func (r Refresh) Rule() string { return fromStringPtr(r.RefreshRRule) }

// Enable is what the application does when the user saved the model: it
// applies policy.Enable, the same transition as `refresher enable`, so there
// is one definition. It clears the disabled columns, the attempt count, the
// failing run, the running attempt's UID and timeout (a result of that
// attempt becomes stale), and makes the row due at now. The history columns
// (refresh_attempt_at, refresh_last_success_at, refresh_last_error) and
// refresh_status stay.
func (r *Refresh) Enable(now time.Time) {
	r.SetState(policy.Enable(r.State(), now.UTC()))
}

func fromTimePtr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func toTimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func fromStringPtr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func toStringPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
