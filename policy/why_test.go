package policy

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The why scenarios run on a fake clock: Nov 25 2026, now 12:00 UTC.
var whyNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// hms is a time of Nov 25 2026 UTC.
func hms(h, m, s int) time.Time { return time.Date(2026, 11, 25, h, m, s, 0, time.UTC) }

// row is an entry of model 42 of kind feeds.
func row(ev Event, at time.Time, fill ...func(*Entry)) Entry {
	e := Entry{At: at, Kind: "feeds", Key: "42", Event: ev}
	for _, f := range fill {
		f(&e)
	}
	return e
}

// kindEntry is an entry of the whole kind feeds.
func kindEntry(ev Event, at time.Time, fill ...func(*Entry)) Entry {
	e := row(ev, at, fill...)
	e.Key, e.Whole = "", true
	return e
}

func attempt(uid string) func(*Entry)         { return func(e *Entry) { e.Attempt = uid } }
func planned(t time.Time) func(*Entry)        { return func(e *Entry) { e.Planned = t } }
func next(t time.Time, b string) func(*Entry) { return func(e *Entry) { e.Next, e.Bound = t, b } }
func reason(r string) func(*Entry)            { return func(e *Entry) { e.Reason = r } }
func by(who, note string) func(*Entry)        { return func(e *Entry) { e.By, e.Note = who, note } }
func until(t time.Time) func(*Entry)          { return func(e *Entry) { e.Until = t } }
func group(g string) func(*Entry)             { return func(e *Entry) { e.Group = g } }
func disabled() func(*Entry)                  { return func(e *Entry) { e.Disabled = true } }

// from is when the attempt an outcome ends was dispatched: a routine start
// (RoutineStart) records no dispatched entry, its outcome carries it.
func from(d time.Time) func(*Entry) { return func(e *Entry) { e.Dispatched = d } }

// ran is a dispatch of attempt uid for the planned occurrence p at t.
func ran(uid string, p, t time.Time, fill ...func(*Entry)) Entry {
	return row(EventDispatched, t, append([]func(*Entry){attempt(uid), planned(p)}, fill...)...)
}

func TestWhyScenarios(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	nine := hms(9, 0, 0)
	retry, err := ParseRetry("delays:1m,5m")
	require.NoError(t, err)
	pol := Policy{Kind: "feeds", Timeout: 10 * time.Minute, Retry: retry, Catchup: Catchup{Window: 5 * time.Minute}}

	cases := []struct {
		name  string
		q     WhyQuery
		cause Cause
		want  string
	}{
		{name: "on time, succeeded", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00:01 and succeeded at 09:00:40.",
			q: WhyQuery{Entries: []Entry{row(EventSucceeded, hms(9, 0, 40), attempt("a1"), from(hms(9, 0, 1)), next(hms(10, 0, 0), ""))}}},
		{name: "the example: kind paused, dispatched at the resume", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: the kind was paused from 08:55 to 09:20 by ops ('incident 42'). It was dispatched at 09:20 and succeeded at 09:21.",
			q: WhyQuery{Entries: []Entry{
				kindEntry(EventPaused, hms(8, 55, 0), by("ops", "incident 42")),
				kindEntry(EventResumed, hms(9, 20, 0), by("ops", "")),
				row(EventSucceeded, hms(9, 21, 0), attempt("a1"), from(hms(9, 20, 0)))}}},
		{name: "failed, retried by the retry list, succeeded", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00:01 and failed at 09:00:30 (HTTP 503 from upstream); the retry list planned a retry at 09:01:30, which succeeded at 09:02.",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 0, 30), attempt("a1"), from(hms(9, 0, 1)), reason("HTTP 503 from upstream"), next(hms(9, 1, 30), BoundRetryList)),
				ran("a2", hms(9, 1, 30), hms(9, 1, 31)), row(EventSucceeded, hms(9, 2, 0), attempt("a2"), from(hms(9, 1, 31)))}}},
		{name: "failed, the next occurrence serves as the retry", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00:01 and failed at 09:55 (HTTP 500); the next occurrence, 10:00, served as the retry, which succeeded at 10:01.",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 55, 0), attempt("a1"), from(hms(9, 0, 1)), reason("HTTP 500"), next(hms(10, 0, 0), BoundNextOccurrence)),
				ran("a2", hms(10, 0, 0), hms(10, 0, 0)), row(EventSucceeded, hms(10, 1, 0), attempt("a2"))}}},
		{name: "failed with a Retry-After, retry still to come", cause: CauseFailed, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00:01 and failed at 09:00:05 (HTTP 429); the worker's Retry-After put the next try at 12:30.",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 0, 5), attempt("a1"), from(hms(9, 0, 1)), reason("HTTP 429"), next(hms(12, 30, 0), BoundRetryAfter))}}},
		{name: "retries used up: disabled", cause: CauseDisabled, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and failed at 09:00:10 (connection refused); 2 retries followed, the last at 09:06:20, which failed at 09:06:30 (connection refused); the model was then disabled ('Cannot refresh feeds after 3 attempt(s)').",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 0, 10), attempt("a1"), from(nine), reason("connection refused"), next(hms(9, 1, 10), BoundRetryList)),
				ran("a2", hms(9, 1, 10), hms(9, 1, 10)),
				row(EventFailed, hms(9, 1, 20), attempt("a2"), reason("connection refused"), next(hms(9, 6, 20), BoundRetryList)),
				ran("a3", hms(9, 6, 20), hms(9, 6, 20)),
				row(EventFailed, hms(9, 6, 30), attempt("a3"), reason("connection refused"), disabled()),
				row(EventDisabled, hms(9, 6, 30), reason("Cannot refresh feeds after 3 attempt(s)"))}}},
		{name: "permanent failure: disabled at once", cause: CauseDisabled, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and failed at 09:00:10 (permanent: HTTP 404); the model was then disabled ('Provided URL is invalid').",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 0, 10), attempt("a1"), from(nine), reason("permanent: HTTP 404"), disabled()),
				row(EventDisabled, hms(9, 0, 10), reason("Provided URL is invalid"))}}},
		{name: "timed out, retry planned", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and timed out at 09:10 (timed out after 10m); the retry list planned a retry at 09:11, which succeeded at 09:12.",
			q: WhyQuery{Entries: []Entry{row(EventTimedOut, hms(9, 10, 0), attempt("a1"), from(nine), reason("timed out after 10m"), next(hms(9, 11, 0), BoundRetryList)),
				ran("a2", hms(9, 11, 0), hms(9, 11, 0)), row(EventSucceeded, hms(9, 12, 0), attempt("a2"))}}},
		{name: "a late answer, ignored: the attempt timed out", cause: CauseFailed, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and its answer came at 09:10:03, after its timeout, so it was ignored and the attempt timed out; the retry list planned a retry at 09:11:03.",
			q: WhyQuery{Entries: []Entry{row(EventLate, hms(9, 10, 3), attempt("a1"), from(nine)),
				row(EventTimedOut, hms(9, 10, 3), attempt("a1"), from(nine), reason("timed out after 10m"), next(hms(9, 11, 3), BoundRetryList))}}},
		{name: "a stale answer after the outcome", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and succeeded at 09:01; an answer at 09:02 came when it no longer ran and was ignored.",
			q: WhyQuery{Entries: []Entry{row(EventSucceeded, hms(9, 1, 0), attempt("a1"), from(nine)), row(EventStale, hms(9, 2, 0), attempt("a1"))}}},
		{name: "lease extended, then succeeded", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00, had its lease extended by its worker to 09:30 and succeeded at 09:25.",
			q: WhyQuery{Entries: []Entry{row(EventExtended, hms(9, 8, 0), attempt("a1"), until(hms(9, 30, 0))), row(EventSucceeded, hms(9, 25, 0), attempt("a1"), from(nine))}}},
		{name: "lease extended twice: the dispatch and the last lease", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00, had its lease extended by its worker to 09:40 and succeeded at 09:35.",
			q: WhyQuery{Entries: []Entry{row(EventExtended, hms(9, 8, 0), attempt("a1"), until(hms(9, 30, 0))),
				row(EventExtended, hms(9, 20, 0), attempt("a1"), until(hms(9, 40, 0))), row(EventSucceeded, hms(9, 35, 0), attempt("a1"), from(nine))}}},
		{name: "a retry whose lease was extended", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and failed at 09:00:10 (HTTP 503); the retry list planned a retry at 09:01:10, which had its lease extended by its worker to 09:20 and succeeded at 09:15.",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(9, 0, 10), attempt("a1"), from(nine), reason("HTTP 503"), next(hms(9, 1, 10), BoundRetryList)),
				ran("a2", hms(9, 1, 10), hms(9, 1, 10)),
				row(EventExtended, hms(9, 5, 0), attempt("a2"), until(hms(9, 20, 0))), row(EventSucceeded, hms(9, 15, 0), attempt("a2"), from(hms(9, 1, 10)))}}},
		{name: "still running", cause: CauseRunning, want: "Nov 25 12:00 UTC was planned. It was dispatched at 12:00 and is still running (it times out at 12:10).",
			q: WhyQuery{At: hms(11, 58, 0), Row: State{AttemptUID: "a9", AttemptAt: hms(12, 0, 0), TimeoutAt: hms(12, 10, 0)}}},
		{name: "kind paused, still paused", cause: CauseKindPaused, want: "Nov 25 09:00 UTC was planned. It has not run: the kind has been paused since 08:30 by alice ('database failover').",
			q: WhyQuery{Entries: []Entry{kindEntry(EventPaused, hms(8, 30, 0), by("alice", "database failover"))}}},
		{name: "kind paused, resumed, yet no dispatch after", cause: CauseKindPaused, want: "Nov 25 09:00 UTC was planned. It did not run: the kind was paused from 08:30 to 09:20 by alice ('database failover'), and no dispatch is recorded after it ended.",
			q: WhyQuery{Entries: []Entry{kindEntry(EventPaused, hms(8, 30, 0), by("alice", "database failover")), kindEntry(EventResumed, hms(9, 20, 0))}}},
		{name: "kind paused over a refresh now: the dispatch after the resume served it", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: the kind was paused from 08:30 to 09:20 by alice ('database failover'). After the kind's pause it was dispatched at 09:20 and succeeded at 09:21.",
			q: WhyQuery{Entries: []Entry{kindEntry(EventPaused, hms(8, 30, 0), by("alice", "database failover")), row(EventTriggered, hms(8, 31, 0), by("bob", "refresh due now")),
				kindEntry(EventResumed, hms(9, 20, 0)), ran("a1", hms(8, 31, 0), hms(9, 20, 0)), row(EventSucceeded, hms(9, 21, 0), attempt("a1"))}}},
		{name: "kind paused past the next occurrence: the dispatch after ran for that one", cause: CauseKindPaused, want: "Nov 25 09:00 UTC was planned. It did not run: the kind was paused from 08:30 to 10:20 by alice ('database failover'), and no dispatch is recorded after it ended.",
			q: WhyQuery{Entries: []Entry{kindEntry(EventPaused, hms(8, 30, 0), by("alice", "database failover")),
				kindEntry(EventResumed, hms(10, 20, 0)), row(EventSucceeded, hms(10, 21, 0), attempt("a1"), from(hms(10, 20, 0)))}}},
		{name: "throttle hold ended, the dispatch after served it", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: its throttle group api.example.com was held until 09:30 after a Retry-After. After the hold it was dispatched at 09:30 and succeeded at 09:31.",
			q: WhyQuery{Entries: []Entry{kindEntry(EventThrottleHold, hms(8, 50, 0), until(hms(9, 30, 0)), group("api.example.com")),
				ran("a1", hms(8, 50, 0), hms(9, 30, 0)), row(EventSucceeded, hms(9, 31, 0), attempt("a1"))}}},
		{name: "throttle hold ended, yet no dispatch after", cause: CauseHeld, want: "Nov 25 09:00 UTC was planned. It did not run: its throttle group api.example.com was held until 09:30 after a Retry-After, and no dispatch is recorded after it ended.",
			q: WhyQuery{Group: "api.example.com", Entries: []Entry{kindEntry(EventThrottleHold, hms(8, 58, 0), group("api.example.com"), until(hms(9, 30, 0)))}}},
		{name: "model paused, resumed later", cause: CausePaused, want: "Nov 25 09:00 UTC was planned. It did not run: the model was paused from 08:40 to 10:15 by ops ('upstream migrates'); resuming planned the next occurrence, 11:00, not the runs missed.",
			q: WhyQuery{Entries: []Entry{row(EventPaused, hms(8, 40, 0), by("ops", "upstream migrates")),
				row(EventResumed, hms(10, 15, 0), by("ops", ""))}}},
		{name: "model paused with an end of its own, ended", cause: CausePaused, want: "Nov 25 09:00 UTC was planned. It did not run: the model was paused from 08:40 to 09:30 by cli; resuming planned the next occurrence, 10:00, not the runs missed.",
			q: WhyQuery{Entries: []Entry{row(EventPaused, hms(8, 40, 0), by("cli", ""), until(hms(9, 30, 0)))}}},
		{name: "throttle hold delayed it", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: its throttle group api.example.com was held until 09:30 after a Retry-After. It was dispatched at 09:30:01 and succeeded at 09:31.",
			q: WhyQuery{Group: "api.example.com", Entries: []Entry{
				kindEntry(EventThrottleHold, hms(8, 50, 0), group("other.example.com"), until(hms(11, 0, 0))),
				kindEntry(EventThrottleHold, hms(8, 58, 0), group("api.example.com"), until(hms(9, 30, 0))),
				row(EventSucceeded, hms(9, 31, 0), attempt("a1"), from(hms(9, 30, 1)))}}},
		{name: "throttle hold, nothing ran yet", cause: CauseHeld, want: "Nov 25 12:00 UTC was planned. It has not run: its throttle group api.example.com is held until 12:40 after a Retry-After.",
			q: WhyQuery{At: hms(11, 50, 0), Group: "api.example.com", Entries: []Entry{
				kindEntry(EventThrottleHold, hms(11, 40, 0), group("api.example.com"), until(hms(12, 40, 0)))}}},
		{name: "failure during an incident", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00 and failed at 09:00:20 (HTTP 502) during an incident of the kind (45 of 50 results failed in 5m), so the attempt did not count; the incident's floor put the retry at 09:01:20, which succeeded at 09:01:40.",
			q: WhyQuery{Entries: []Entry{
				kindEntry(EventIncidentOpened, hms(8, 57, 0), reason("45 of 50 results failed in 5m")),
				row(EventFailed, hms(9, 0, 20), attempt("a1"), from(nine), reason("HTTP 502"), next(hms(9, 1, 20), BoundIncidentFloor)),
				kindEntry(EventIncidentClosed, hms(9, 1, 0)),
				ran("a2", hms(9, 1, 20), hms(9, 1, 20)), row(EventSucceeded, hms(9, 1, 40), attempt("a2"))}}},
		{name: "misfire skipped after downtime", cause: CauseMisfire, want: "Nov 25 09:00 UTC was planned. It did not run: when the service looked at 09:42:10 it had been due for 42m10s, longer than the catchup window (5m), as after downtime; it was skipped for the next occurrence, 10:00.",
			q: WhyQuery{Entries: []Entry{row(EventMisfireSkipped, hms(9, 42, 10), planned(nine), next(hms(10, 0, 0), ""))}}},
		{name: "disabled before, still disabled", cause: CauseDisabled, want: "Nov 25 09:00 UTC was planned. It did not run: the model had been disabled since 07:00:05 ('Provided URL is invalid'), and it still is: it waits for the user to update it or an operator to enable it.",
			q: WhyQuery{Row: State{DisabledAt: hms(7, 0, 5), DisabledReason: "Provided URL is invalid"},
				Entries: []Entry{row(EventDisabled, hms(7, 0, 5), reason("Provided URL is invalid"))}}},
		{name: "disabled before, enabled by alice", cause: CauseDisabled, want: "Nov 25 09:00 UTC was planned. It did not run: the model had been disabled since 07:00:05 ('Cannot refresh feeds after 3 attempt(s)'); alice enabled it at 09:30, and it was dispatched at 09:30:01 and succeeded at 09:31.",
			q: WhyQuery{Entries: []Entry{row(EventDisabled, hms(7, 0, 5), reason("Cannot refresh feeds after 3 attempt(s)")),
				row(EventEnabled, hms(9, 30, 0), by("alice", "")), ran("a1", hms(9, 30, 0), hms(9, 30, 1)), row(EventSucceeded, hms(9, 31, 0), attempt("a1"))}}},
		{name: "disabled long before the entries read (the row says so)", cause: CauseDisabled, want: "Nov 25 09:00 UTC was planned. It did not run: the model had been disabled since Nov 20 07:00 ('Provided URL is invalid'), and it still is: it waits for the user to update it or an operator to enable it.",
			q: WhyQuery{Row: State{DisabledAt: time.Date(2026, 11, 20, 7, 0, 0, 0, time.UTC), DisabledReason: "Provided URL is invalid"},
				Entries: []Entry{kindEntry(EventIncidentOpened, hms(3, 0, 0)), kindEntry(EventIncidentClosed, hms(3, 5, 0))}}},
		{name: "the row's own rule is invalid", cause: CauseInvalidRule, want: "Nov 25 09:00 UTC was planned. It did not run: the model was disabled at 06:00 because its own rule is invalid ('Invalid refresh schedule: RRULE: FREQ missing').",
			q: WhyQuery{Entries: []Entry{row(EventDisabled, hms(6, 0, 0), reason("Invalid refresh schedule: RRULE: FREQ missing"))}}},
		{name: "the row's own rule does not parse", cause: CauseInvalidRule, want: "Nothing was planned at Nov 25 09:00 UTC: the model's own rule does not parse: FREQ is missing (e.g. RRULE:FREQ=DAILY).",
			q: WhyQuery{ScheduleError: "FREQ is missing (e.g. RRULE:FREQ=DAILY)"}},
		{name: "previous attempt still running", cause: CauseBusy, want: "Nov 25 09:00 UTC was planned. It did not run: the attempt dispatched at 08:00 was still running (it succeeded at 09:15); one attempt runs at a time, and the next occurrence, 10:00, came after.",
			q: WhyQuery{Entries: []Entry{row(EventExtended, hms(8, 9, 0), attempt("a1"), until(hms(9, 20, 0))),
				row(EventSucceeded, hms(9, 15, 0), attempt("a1"), from(hms(8, 0, 0)), next(hms(10, 0, 0), ""))}}},
		{name: "a Retry-After before it planned past it", cause: CauseDeferred, want: "Nov 25 09:00 UTC was planned. It did not run: after the failure at 08:00:30 (HTTP 429) the worker's Retry-After put the next try at 10:30, past it.",
			q: WhyQuery{Entries: []Entry{row(EventFailed, hms(8, 0, 30), attempt("a1"), from(hms(8, 0, 0)), reason("HTTP 429"), next(hms(10, 30, 0), BoundRetryAfter))}}},
		{name: "refresh now by ops, nearer than the occurrence", cause: CauseTriggered, want: "At Nov 25 09:37 UTC ops asked for a refresh now (priority 0); it was not one of the schedule's occurrences. It was dispatched at 09:37:01 and succeeded at 09:38.",
			q: WhyQuery{At: hms(9, 40, 0), Entries: []Entry{row(EventSucceeded, hms(9, 0, 30), attempt("a1"), from(nine)),
				row(EventTriggered, hms(9, 37, 0), by("ops", ""), func(e *Entry) { p := 0; e.Priority = &p }),
				ran("a2", hms(9, 37, 0), hms(9, 37, 1)), row(EventSucceeded, hms(9, 38, 0), attempt("a2"), from(hms(9, 37, 1)))}}},
		{name: "no entries: older than the ledger keeps", cause: CauseNoEntries, want: "Oct 1 09:00 UTC was planned. The ledger keeps 30 days, so nothing is left from then.", q: WhyQuery{At: time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC), Keep: 30 * 24 * time.Hour}},
		{name: "no entries: the ledger was off", cause: CauseNoEntries, want: "Nov 25 09:00 UTC was planned. The ledger has no entry about this model or its kind from then: it was off, or the service did not run.", q: WhyQuery{}},
		{name: "no entries, kept for unknown time", cause: CauseNoEntries, want: "Nov 25 09:00 UTC was planned. The ledger has no entry about this model or its kind from then: it was off, or the service did not run.", q: WhyQuery{Keep: 30 * 24 * time.Hour}},
		{name: "the ledger starts after it", cause: CauseNoEntries, want: "Nov 25 09:00 UTC was planned. The ledger's first entry read is at 10:00, after it: the ledger was off then, or its entries from then are gone.",
			q: WhyQuery{Entries: []Entry{row(EventSucceeded, hms(10, 0, 30), attempt("a3"), from(hms(10, 0, 0)))}}},
		{name: "a hold recorded on the row", cause: CauseSucceeded, want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: its throttle group api.example.com was held until 09:10 after a Retry-After. It was dispatched at 09:10 and succeeded at 09:11.",
			q: WhyQuery{Entries: []Entry{row(EventThrottleHold, hms(9, 0, 0), group("api.example.com"), until(hms(9, 10, 0))),
				row(EventSucceeded, hms(9, 11, 0), attempt("a1"), from(hms(9, 10, 0)))}}},
		{name: "entries but none explains it", cause: CauseUnknown, want: "Nov 25 09:00 UTC was planned. No dispatch for it is recorded, and no entry from 08:00 to 10:00 says why: the service may have been down.",
			q: WhyQuery{Entries: []Entry{row(EventSucceeded, hms(8, 0, 30), attempt("a1"), from(hms(8, 0, 0))),
				// a3, dispatched at a raised priority, is recorded.
				ran("a3", hms(10, 0, 0), hms(10, 0, 0), func(e *Entry) { p := -1; e.Priority = &p })}}},
		{name: "ahead, planned", cause: CauseAhead, want: "Nov 25 13:00 UTC is ahead. It is planned: refresh_at is 13:00.", q: WhyQuery{At: hms(13, 0, 0), Row: State{RefreshAt: hms(13, 0, 0)}}},
		{name: "ahead, but disabled", cause: CauseDisabled, want: "Nov 25 13:00 UTC is ahead. It will not run: the model has been disabled since 11:00 ('Provided URL is invalid'), until the user updates it or an operator enables it.",
			q: WhyQuery{At: hms(13, 0, 0), Row: State{DisabledAt: hms(11, 0, 0), DisabledReason: "Provided URL is invalid"}}},
		{name: "ahead, a model pause that ends by itself before it", cause: CauseAhead, want: "Nov 25 13:00 UTC is ahead. It is planned: refresh_at is 13:00.",
			q: WhyQuery{At: hms(13, 0, 0), Row: State{RefreshAt: hms(13, 0, 0)}, Entries: []Entry{row(EventPaused, hms(11, 0, 0), by("ops", ""), until(hms(12, 30, 0)))}}},
		{name: "ahead, a model pause that ends by itself after it", cause: CausePaused, want: "Nov 25 13:00 UTC is ahead. It will not run: the model has been paused since 11:00 by ops, to end at 13:30; resuming plans the next occurrence after the resume.",
			q: WhyQuery{At: hms(13, 0, 0), Entries: []Entry{row(EventPaused, hms(11, 0, 0), by("ops", ""), until(hms(13, 30, 0)))}}},
		{name: "model paused with an end of its own, not yet ended", cause: CausePaused, want: "Nov 25 09:00 UTC was planned. It did not run: the model has been paused since 08:40 by cli, to end at 14:00.",
			q: WhyQuery{Entries: []Entry{row(EventPaused, hms(8, 40, 0), by("cli", ""), until(hms(14, 0, 0)))}}},
		{name: "ahead, but the kind is paused", cause: CauseKindPaused, want: "Nov 25 13:00 UTC is ahead. It will not run while the kind is paused: the kind has been paused since 11:00 by ops ('failover').",
			q: WhyQuery{At: hms(13, 0, 0), Row: State{RefreshAt: hms(13, 0, 0)}, Entries: []Entry{kindEntry(EventPaused, hms(11, 0, 0), by("ops", "failover"))}}},
		{name: "ahead, but the model is paused", cause: CausePaused, want: "Nov 25 13:00 UTC is ahead. It will not run: the model has been paused since 11:00 by ops ('migration'); resuming plans the next occurrence after the resume.",
			q: WhyQuery{At: hms(13, 0, 0), Entries: []Entry{row(EventPaused, hms(11, 0, 0), by("ops", "migration"))}}},
	}
	// DST in a real zone: a daily 02:30 Europe/Berlin rule. On Mar 29
	// 2026 02:30 does not exist (clocks spring forward): it runs at 03:30
	// CEST. On Oct 25 02:30 happens twice; the rule means the first (CEST),
	// and a pause that ends after the clocks went back says so.
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	daily := mustParse(t, "DTSTART;TZID=Europe/Berlin:20260101T023000\nRRULE:FREQ=DAILY")
	utc := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, time.UTC) }
	ended := mustParse(t, "DTSTART:20261120T090000Z\nRRULE:FREQ=DAILY;COUNT=3")
	cases = append(cases,
		struct {
			name  string
			q     WhyQuery
			cause Cause
			want  string
		}{name: "the rule ended", cause: CauseEnded,
			want: "Nov 22 09:00 UTC was the rule's last occurrence: it has none after, so nothing was planned at Nov 25 09:00. It was dispatched at 09:00 and succeeded at 09:01.",
			q: WhyQuery{Schedule: ended, Entries: []Entry{
				row(EventSucceeded, time.Date(2026, 11, 22, 9, 1, 0, 0, time.UTC), attempt("e1"), from(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)))}}},
		struct {
			name  string
			q     WhyQuery
			cause Cause
			want  string
		}{name: "DST: spring forward, 02:30 runs at 03:30 CEST", cause: CauseSucceeded, want: "Mar 29 03:30 CEST was planned. It was dispatched at 03:30 and succeeded at 03:31.",
			q: WhyQuery{At: utc(3, 29, 1, 0), Now: utc(3, 30, 0, 0), Schedule: daily, Loc: berlin,
				Entries: []Entry{row(EventSucceeded, utc(3, 29, 1, 31), attempt("b1"), from(utc(3, 29, 1, 30)))}}},
		struct {
			name  string
			q     WhyQuery
			cause Cause
			want  string
		}{name: "DST: fall back, a kind pause that ends after the clocks went back", cause: CauseSucceeded, want: "Oct 25 02:30 CEST was planned. It was not dispatched at 02:30: the kind was paused from 01:50 to 02:10 CET by ops ('failover'). It was dispatched at 02:10 CET and succeeded at 02:12 CET.",
			q: WhyQuery{At: utc(10, 25, 0, 30), Now: utc(10, 26, 0, 0), Schedule: daily, Loc: berlin,
				Entries: []Entry{kindEntry(EventPaused, utc(10, 24, 23, 50), by("ops", "failover")), kindEntry(EventResumed, utc(10, 25, 1, 10)),
					row(EventSucceeded, utc(10, 25, 1, 12), attempt("b2"), from(utc(10, 25, 1, 10)))}}},
	)
	for _, c := range cases {
		q := c.q
		q.Policy = pol
		if q.Now.IsZero() {
			q.Now = whyNow
		}
		if q.Schedule == nil && q.ScheduleError == "" {
			q.Schedule = hourly
		}
		if q.At.IsZero() {
			q.At = nine
		}
		got := Explain(q)
		if got.Sentence != c.want || got.Cause != c.cause {
			t.Errorf("%s:\n got  %s: %q\n want %s: %q", c.name, got.Cause, got.Sentence, c.cause, c.want)
		}
	}
}

// TestWhyCitesItsEntries: the answer lists the entries it is built on,
// oldest first, and leaves out those it does not use.
func TestWhyCitesItsEntries(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	pause := kindEntry(EventPaused, hms(8, 55, 0), by("ops", "incident 42"))
	resume := kindEntry(EventResumed, hms(9, 20, 0))
	d := ran("a1", hms(9, 0, 0), hms(9, 20, 0))
	ok := row(EventSucceeded, hms(9, 21, 0), attempt("a1"))
	other := ran("a0", hms(8, 0, 0), hms(8, 0, 0))
	w := Explain(WhyQuery{At: hms(9, 5, 0), Now: whyNow, Schedule: hourly,
		Entries: []Entry{other, row(EventSucceeded, hms(8, 0, 5), attempt("a0")), pause, d, resume, ok}})
	require.Equal(t, hms(9, 0, 0), w.Occurrence)
	require.Equal(t, []Entry{pause, d, resume, ok}, w.Entries)

	// Recorded as one entry (a routine start): the outcome is cited, the
	// dispatch it carries is not an entry of its own.
	one := row(EventSucceeded, hms(9, 21, 0), attempt("a1"), from(hms(9, 20, 0)))
	w = Explain(WhyQuery{At: hms(9, 5, 0), Now: whyNow, Schedule: hourly,
		Entries: []Entry{row(EventSucceeded, hms(8, 0, 5), attempt("a0"), from(hms(8, 0, 0))), pause, resume, one}})
	require.Equal(t, "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: the kind was paused from 08:55 to 09:20 by ops ('incident 42'). It was dispatched at 09:20 and succeeded at 09:21.", w.Sentence)
	require.Equal(t, []Entry{pause, resume, one}, w.Entries)
}

// A routine attempt whose lease was extended, read before its outcome
// (the row no longer says it runs): the lease's entry carries the dispatch.
func TestWhyDispatchFromALease(t *testing.T) {
	t.Parallel()
	ext := row(EventExtended, hms(9, 8, 0), attempt("a1"), from(hms(9, 0, 0)), until(hms(9, 30, 0)))
	w := Explain(WhyQuery{At: hms(9, 0, 0), Now: whyNow, Schedule: mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY"), Entries: []Entry{ext}})
	require.Equal(t, "Nov 25 09:00 UTC was planned. It was dispatched at 09:00, had its lease extended by its worker to 09:30 and no outcome is recorded yet.", w.Sentence)
	require.Equal(t, []Entry{ext}, w.Entries)
}

// TestRoutineStart: a start needs no dispatched entry only when Explain
// can tell the occurrence from its dispatch time, read to the second, and
// the schedule; a retry, a start after a timeout or misfire, or from a
// refresh_at that is not the last occurrence before it, needs one.
func TestRoutineStart(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	start := func(planned time.Time, fill ...func(*DueDecision)) DueDecision {
		d := DueDecision{Action: DueStarted, AttemptUID: "a", BeforeStart: State{RefreshAt: planned}}
		for _, f := range fill {
			f(&d)
		}
		return d
	}
	nine := hms(9, 0, 0)
	for _, c := range []struct {
		name string
		d    DueDecision
		now  time.Time
		want bool
	}{
		{"on time", start(nine), nine.Add(300 * time.Millisecond), true},
		{"late, within the period", start(nine), hms(9, 59, 58), true},
		{"late past the next occurrence", start(nine), hms(10, 0, 1), false},
		{"within a second of the next occurrence", start(nine), hms(9, 59, 59).Add(500 * time.Millisecond), false},
		{"not an occurrence (a trigger's time)", start(hms(9, 37, 0)), hms(9, 37, 1), false},
		{"a retry", start(nine, func(d *DueDecision) { d.BeforeStart.AttemptNo = 1 }), nine, false},
		{"after a timeout", start(nine, func(d *DueDecision) { d.TimedOut = true }), nine, false},
		{"a misfire run once", start(nine, func(d *DueDecision) { d.MissedSince = nine }), nine, false},
		{"not started", DueDecision{Action: DueHeld, BeforeStart: State{RefreshAt: nine}}, nine, false},
		{"planned within the dispatch's second", start(nine.Add(500 * time.Millisecond)), nine.Add(700 * time.Millisecond), false},
	} {
		if got := RoutineStart(c.d, hourly, c.now); got != c.want {
			t.Errorf("%s: RoutineStart = %v", c.name, got)
		}
		if c.want {
			require.Equal(t, c.d.BeforeStart.RefreshAt, routinePlanned(hourly, c.now.Truncate(time.Second)), c.name)
			require.Equal(t, c.d.BeforeStart.RefreshAt, routinePlanned(hourly, c.now), c.name)
		}
	}
	require.False(t, RoutineStart(start(nine), nil, nine), "no schedule")
}

// TestWhyNearestAndRange: the occurrence explained is the one at or
// nearest At (the earlier of two as near), and WhyRange reads from well
// before it to past the next one, never after now.
func TestWhyNearestAndRange(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	for at, want := range map[time.Time]time.Time{
		hms(9, 0, 0): hms(9, 0, 0), hms(9, 29, 0): hms(9, 0, 0), hms(9, 30, 0): hms(9, 0, 0), hms(9, 31, 0): hms(10, 0, 0),
	} {
		got, ended := nearest(hourly, at)
		require.Equal(t, want, got, "at %s", at)
		require.False(t, ended)
	}
	once := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;COUNT=3")
	got, ended := nearest(once, hms(9, 0, 0))
	require.Equal(t, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), got)
	require.True(t, ended)
	require.Equal(t, "Jan 3 00:00 UTC was the rule's last occurrence: it has none after, so nothing was planned at Nov 25 09:00.",
		Explain(WhyQuery{At: hms(9, 0, 0), Now: whyNow, Schedule: once, Row: State{}}).Sentence[:len("Jan 3 00:00 UTC was the rule's last occurrence: it has none after, so nothing was planned at Nov 25 09:00.")])

	from, to := WhyRange(hourly, Policy{Timeout: 10 * time.Minute}, hms(9, 10, 0), whyNow)
	require.Equal(t, hms(9, 0, 0).Add(-100*time.Hour), from)
	require.Equal(t, hms(10, 10, 0), to)
	_, to = WhyRange(hourly, Policy{}, hms(11, 50, 0), whyNow)
	require.Equal(t, whyNow, to)
	// Far ahead: what holds now (a pause begun an hour ago) is read.
	from, to = WhyRange(hourly, Policy{}, whyNow.Add(200*time.Hour), whyNow)
	require.Equal(t, whyNow.Add(-100*time.Hour), from)
	require.Equal(t, whyNow, to)
}

// TestWhyAnyLedger: whatever the entries (in any order of events, with
// missing outcomes, unmatched resumes, a kind or a row), Explain answers a
// sentence that ends with a full stop and cites only entries it was given,
// in their order.
func TestWhyAnyLedger(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	events := []Event{EventDispatched, EventSucceeded, EventFailed, EventTimedOut, EventStale, EventLate, EventExtended,
		EventMisfireSkipped, EventDisabled, EventEnabled, EventTriggered, EventPaused, EventResumed, EventThrottleHold,
		EventIncidentOpened, EventIncidentClosed}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() time.Time { return hms(6, 0, 0).Add(time.Duration(rng.IntN(6*3600)) * time.Second) }
	for i := range 2000 {
		var entries []Entry
		for range rng.IntN(12) {
			x := Entry{At: pick(), Kind: "feeds", Key: []string{"", "42"}[rng.IntN(2)], Event: events[rng.IntN(len(events))],
				Attempt: []string{"", "a1", "a2"}[rng.IntN(3)], Disabled: rng.IntN(4) == 0, Group: "g"}
			if rng.IntN(2) == 0 {
				x.Planned = pick().Truncate(time.Hour)
			}
			if rng.IntN(2) == 0 {
				x.Next = pick()
			}
			if rng.IntN(2) == 0 {
				x.Until = pick()
			}
			entries = append(entries, x)
		}
		sort.SliceStable(entries, func(a, b int) bool { return entries[a].At.Before(entries[b].At) })
		q := WhyQuery{At: pick(), Now: hms(12, 0, 0), Schedule: hourly, Entries: entries}
		if rng.IntN(5) == 0 {
			q.Row = State{DisabledAt: pick(), DisabledReason: "off"}
		}
		w := Explain(q)
		if !strings.HasSuffix(w.Sentence, ".") || w.Cause == "" {
			t.Fatalf("case %d: %s %q", i, w.Cause, w.Sentence)
		}
		j := 0
		for _, c := range w.Entries {
			for j < len(entries) && !same(entries[j], c) {
				j++
			}
			if j == len(entries) {
				t.Fatalf("case %d: cites %+v, not among its entries (or out of order)", i, c)
			}
		}
	}
}

// A pause still open where a read that stops before now ends asks for a
// read up to now; the same pause read up to now does not.
func TestWhyAsksToReadOnPastAnOpenPause(t *testing.T) {
	t.Parallel()
	q := WhyQuery{At: hms(9, 0, 0), Now: whyNow, Schedule: mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY"),
		Entries: []Entry{kindEntry(EventPaused, hms(8, 30, 0), by("alice", "failover"))}, To: hms(10, 10, 0)}
	if w := Explain(q); !w.ReadToNow {
		t.Errorf("read to 10:10 of %s: %q does not ask to read on", whyNow, w.Sentence)
	}
	q.To = whyNow
	if w := Explain(q); w.ReadToNow {
		t.Errorf("read to now: %q asks to read on", w.Sentence)
	}
}

// batch is an entry of the kind for a batch of n routine successes
// applied at t, of attempts dispatched from d0 to d1.
func batch(t time.Time, n int, d0, d1 time.Time) Entry {
	e := kindEntry(EventRoutine, t)
	e.Count, e.Dispatched, e.DispatchedLast = n, d0, d1
	return e
}

// TestWhyRoutineCycles: with ledger.routine "batches", a plain success
// has no row entry; Explain tells it from the kind's batches, the absence
// of any other entry of the row and the row's columns, and says what it
// cannot know.
func TestWhyRoutineCycles(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "DTSTART:20260101T000000Z\nRRULE:FREQ=HOURLY")
	retry, err := ParseRetry("delays:1m,5m")
	require.NoError(t, err)
	pol := Policy{Kind: "feeds", Timeout: 10 * time.Minute, Retry: retry}
	// Batches of every hour's cycle, 09:00 to 11:00, and of a retry at 09:01:30.
	hours := []Entry{
		batch(hms(8, 0, 2), 500, hms(8, 0, 0), hms(8, 0, 1)), batch(hms(8, 0, 4), 300, hms(8, 0, 1), hms(8, 0, 2)),
		batch(hms(9, 0, 2), 500, hms(9, 0, 0), hms(9, 0, 1)), batch(hms(9, 0, 4), 300, hms(9, 0, 1), hms(9, 0, 2)),
		batch(hms(9, 1, 33), 1, hms(9, 1, 30), hms(9, 1, 30)),
		batch(hms(9, 20, 5), 800, hms(9, 20, 0), hms(9, 20, 1)),
		batch(hms(10, 0, 3), 800, hms(10, 0, 0), hms(10, 0, 1)), batch(hms(11, 0, 3), 800, hms(11, 0, 0), hms(11, 0, 2)),
	}
	lastRun := State{AttemptAt: hms(11, 0, 1), LastSuccessAt: hms(11, 0, 3), RefreshAt: hms(12, 0, 0)}
	failed := []Entry{row(EventFailed, hms(9, 0, 30), attempt("a1"), from(hms(9, 0, 1)), reason("HTTP 503"), next(hms(9, 1, 30), BoundRetryList)),
		ran("a2", hms(9, 1, 30), hms(9, 1, 30))}
	triggered := []Entry{row(EventTriggered, hms(8, 30, 0), by("bob", "")), ran("t1", hms(8, 30, 0), hms(8, 30, 0))}
	cases := []struct {
		name  string
		q     WhyQuery
		cause Cause
		want  string
	}{
		{name: "a routine success, from its batches", cause: CauseSucceeded,
			want: "Nov 25 10:00 UTC was planned. It ran as usual: it was dispatched and succeeded in the batch of routine successes applied at 10:00:03 (no entry of its own, so nothing but a routine cycle happened to it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(10, 0, 0), Routine: hours, Row: lastRun}},
		{name: "a routine success, two batches", cause: CauseSucceeded,
			want: "Nov 25 08:00 UTC was planned. It ran as usual: it was dispatched and succeeded in one of the 2 batches of routine successes applied between 08:00:02 and 08:00:04 (no entry of its own, so nothing but a routine cycle happened to it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(8, 0, 0), Routine: hours, Row: lastRun}},
		{name: "the last routine success, exact from the columns", cause: CauseSucceeded,
			want: "Nov 25 11:00 UTC was planned. It ran as usual: it was dispatched at 11:00:01 and succeeded at 11:00:03 (its last attempt, from the model's columns; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(11, 0, 0), Routine: hours, Row: lastRun}},
		{name: "an exception in the middle: the failure and its retry's batched success", cause: CauseSucceeded,
			want: "Nov 25 09:00 UTC was planned. It was dispatched at 09:00:01 and failed at 09:00:30 (HTTP 503); the retry list planned a retry at 09:01:30, which succeeded in the batch of routine successes applied at 09:01:33 (no other outcome is recorded for it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(9, 0, 0), Routine: hours, Entries: failed, Row: lastRun}},
		{name: "an exception in the middle: the cycle after it is routine", cause: CauseSucceeded,
			want: "Nov 25 10:00 UTC was planned. It ran as usual: it was dispatched and succeeded in the batch of routine successes applied at 10:00:03 (no entry of its own, so nothing but a routine cycle happened to it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(10, 0, 0), Routine: hours, Entries: failed, Row: lastRun}},
		{name: "kind paused, the routine dispatch after the resume served it", cause: CauseSucceeded,
			want: "Nov 25 09:00 UTC was planned. It was not dispatched at 09:00: the kind was paused from 08:55 to 09:20 by ops ('incident 42'). After the kind's pause it ran as usual: it was dispatched and succeeded in the batch of routine successes applied at 09:20:05 (no entry of its own, so nothing but a routine cycle happened to it; routine successes are recorded per batch, not per model).",
			q: WhyQuery{At: hms(9, 0, 0), Routine: hours, Row: lastRun, Entries: []Entry{
				kindEntry(EventPaused, hms(8, 55, 0), by("ops", "incident 42")), kindEntry(EventResumed, hms(9, 20, 0), by("ops", ""))}}},
		{name: "a refresh now before it, its success batched: not busy, and the cycle routine", cause: CauseSucceeded,
			want: "Nov 25 09:00 UTC was planned. It ran as usual: it was dispatched and succeeded in one of the 4 batches of routine successes applied between 09:00:02 and 09:20:05 (no entry of its own, so nothing but a routine cycle happened to it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(9, 0, 0), Routine: append(slices.Clone(hours), batch(hms(8, 30, 5), 1, hms(8, 30, 0), hms(8, 30, 0))), Row: lastRun, Entries: triggered}},
		{name: "a refresh now, its success told from its batch", cause: CauseTriggered,
			want: "At Nov 25 08:30 UTC bob asked for a refresh now; it was not one of the schedule's occurrences. It was dispatched at 08:30 and succeeded in the batch of routine successes applied at 08:30:05 (no other outcome is recorded for it; routine successes are recorded per batch, not per model).",
			q:    WhyQuery{At: hms(8, 31, 0), Routine: append(slices.Clone(hours), batch(hms(8, 30, 5), 1, hms(8, 30, 0), hms(8, 30, 0))), Row: lastRun, Entries: triggered}},
		{name: "no success since in the row's columns: not told as routine", cause: CauseNoEntries,
			want: "Nov 25 10:00 UTC was planned. The ledger has no entry about this model or its kind from then: it was off, or the service did not run.",
			q:    WhyQuery{At: hms(10, 0, 0), Routine: hours, Row: State{LastSuccessAt: hms(9, 0, 3), AttemptAt: hms(9, 0, 1)}}},
		{name: "no batch around it: the ledger was off or the service down", cause: CauseNoEntries,
			want: "Nov 25 07:00 UTC was planned. The ledger has no entry about this model or its kind from then: it was off, or the service did not run.",
			q:    WhyQuery{At: hms(7, 0, 0), Routine: hours, Row: lastRun}},
		{name: "before the kind's oldest routine batch left", cause: CauseNoEntries,
			want: "Nov 25 07:00 UTC was planned. A routine cycle leaves no entry of its own, and the kind's oldest batch of routine successes left is from 08:00:02, after it (the ledger keeps the last ledger.routine_max_entries of them, and none from before it was on): it cannot tell what happened then.",
			q:    WhyQuery{At: hms(7, 0, 0), RoutineSince: hms(8, 0, 2), Row: lastRun}},
		{name: "older than the ledger's memory", cause: CauseNoEntries,
			want: "Oct 20 09:00 UTC was planned. The ledger keeps 30 days, so nothing is left from then.",
			q:    WhyQuery{At: time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC), Keep: 30 * 24 * time.Hour, Routine: hours, Row: lastRun}},
		{name: "before the row's oldest entry the count bound kept", cause: CauseNoEntries,
			want: "Nov 25 08:00 UTC was planned. The ledger keeps the last 100 entries of each model, and this model's oldest left is from 08:40, after it: it cannot tell what happened then.",
			q: WhyQuery{At: hms(8, 0, 0), Routine: hours, Row: lastRun, RowSince: hms(8, 40, 0), RowMax: 100,
				Entries: []Entry{row(EventStale, hms(8, 40, 0), attempt("x"))}}},
		{name: "the ledger is off: the columns answer", cause: CauseLedgerOff,
			want: "Nov 25 11:00 UTC was planned. The ledger is off (ledger.enabled: false); its newest entry about this model or its kind is from Nov 20 10:00 UTC. The model's columns say its last success was at 11:00:03, after it and before the next occurrence: it ran.",
			q:    WhyQuery{At: hms(11, 0, 0), Row: lastRun, LedgerOff: true, LedgerLast: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}},
		{name: "the ledger is off, old entries ignored", cause: CauseLedgerOff,
			want: "Nov 25 09:00 UTC was planned. The ledger is off (ledger.enabled: false), so it recorded nothing about it. The model's columns say only that its last success was at 11:00:03.",
			q: WhyQuery{At: hms(9, 0, 0), Row: lastRun, LedgerOff: true,
				Entries: []Entry{row(EventFailed, hms(9, 0, 30), attempt("a1"), from(hms(9, 0, 1)), reason("HTTP 503"))}}},
	}
	for _, c := range cases {
		q := c.q
		q.Policy, q.Schedule, q.Now = pol, hourly, whyNow
		got := Explain(q)
		if got.Sentence != c.want || got.Cause != c.cause {
			t.Errorf("%s:\n got  %s: %q\n want %s: %q", c.name, got.Cause, got.Sentence, c.cause, c.want)
		}
	}
}
