package models

// Names of the refresh columns; Schema describes them (see also README.md,
// "The columns").
const (
	ColRefreshAt      = "refresh_at"
	ColAttemptUID     = "refresh_attempt_uid"
	ColAttemptAt      = "refresh_attempt_at"
	ColAttemptNo      = "refresh_attempt_no"
	ColTimeoutAt      = "refresh_timeout_at"
	ColDisabledUntil  = "refresh_disabled_until_update"
	ColDisabledReason = "refresh_disabled_user_friendly_reason"
	ColRRule          = "refresh_rrule"
	ColFailingSince   = "refresh_failing_since"
	ColLastSuccessAt  = "refresh_last_success_at"
	ColLastError      = "refresh_last_error"
	ColStatus         = "refresh_status"
)
