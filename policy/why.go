package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Why answers "what happened to this model's run at that time, and why?"
// from the ledger (`refresher why`, the API's .../why and the model page):
// it joins the ledger's entries with the schedule and says it in one or two
// plain sentences. Like the rest of the package it is a pure function of
// its inputs: the shell reads the entries (models.LedgerReader) over the
// range WhyRange gives and passes the clock in.

// WhyQuery is what Explain needs.
type WhyQuery struct {
	// At is the time asked about; Explain explains the planned occurrence
	// at or nearest it (or a refresh asked for by hand, when one is
	// nearer).
	At time.Time
	// Now is the clock: occurrences after it are still ahead.
	Now time.Time
	// Schedule is the row's schedule, spread as the service spreads it;
	// nil when the row has none that parses (ScheduleError says why).
	Schedule      Nexter
	ScheduleError string
	Policy        Policy
	// Loc is the zone the sentence shows times in: the schedule's, nil for
	// UTC.
	Loc *time.Location
	// Group is the row's throttle group; "" when unknown (then every hold
	// of the kind may explain a delay).
	Group string
	// Row is the row's state now: it says what the ledger may not hold any
	// more (a model disabled long before the entries read).
	Row State
	// Entries are the row's and its kind's (Whole) entries over WhyRange,
	// oldest first, but the kind's batches of routine successes.
	Entries []Entry
	// Routine are the kind's batches of routine successes (EventRoutine)
	// over WhyRange, oldest first: a plain success has no row entry of its
	// own when ledger.routine is "batches".
	Routine []Entry
	// RowSince, when not zero, is the time of the row's oldest entry the
	// ledger still holds, when it holds RowMax of them: the count bound
	// may have pruned what came before.
	RowSince time.Time
	RowMax   int
	// RoutineSince is the time of the kind's oldest batch of routine
	// successes the ledger still holds (zero: none): before it, a routine
	// cycle cannot be told (the batches were pruned, or not written).
	RoutineSince time.Time
	// LedgerOff: the ledger is off now (ledger.enabled: false); Entries
	// and Routine are then empty, and LedgerLast is the newest entry of
	// the row or its kind the ledger still holds (zero: none).
	LedgerOff  bool
	LedgerLast time.Time
	// Keep is how long the ledger keeps entries; 0 when unknown.
	Keep time.Duration
	// To is where the entries read end (WhyRange's to); zero: Now. A pause
	// still open where a read before Now ends may have ended since.
	To time.Time
}

// Why is Explain's answer.
type Why struct {
	// Occurrence is the planned occurrence explained; zero when none (no
	// rule, or a refresh asked for by hand is explained instead).
	Occurrence time.Time
	// Cause is one word for what happened (the Cause constants).
	Cause Cause
	// Sentence says it in plain words.
	Sentence string
	// Entries are the entries the sentence is built on, oldest first.
	Entries []Entry
	// ReadToNow: the sentence says a pause is still on from entries that
	// end before Now (WhyQuery.To): read them up to Now and explain again,
	// for the resume and the dispatch after it.
	ReadToNow bool
}

// Cause is the one-word answer of Explain, for scripts and the API.
type Cause string

// The causes.
const (
	CauseSucceeded   Cause = "succeeded"    // dispatched (maybe late, maybe after retries) and succeeded
	CauseFailed      Cause = "failed"       // dispatched and failed; a retry is planned or was not recorded
	CauseDisabled    Cause = "disabled"     // it or its retries ended in the model being disabled, or it was disabled before
	CauseRunning     Cause = "running"      // dispatched, no outcome yet
	CausePaused      Cause = "paused"       // the model was paused
	CauseKindPaused  Cause = "kind_paused"  // the kind was paused and nothing ran yet
	CauseHeld        Cause = "held"         // its throttle group was held and nothing ran yet
	CauseMisfire     Cause = "misfire"      // skipped after downtime (catchup window)
	CauseBusy        Cause = "busy"         // the attempt before was still running
	CauseDeferred    Cause = "deferred"     // a failure before planned its retry past it
	CauseTriggered   Cause = "triggered"    // a refresh asked for by hand, explained instead
	CauseInvalidRule Cause = "invalid_rule" // the row's own rule does not parse
	CauseEnded       Cause = "ended"        // the rule has no occurrence left
	CauseAhead       Cause = "ahead"        // the occurrence is still to come
	CauseNoEntries   Cause = "no_entries"   // the ledger holds nothing from then
	CauseLedgerOff   Cause = "ledger_off"   // the ledger is off: only the schedule and the row's columns answer
	CauseUnknown     Cause = "unknown"      // entries exist but none explains it
)

// whyMaxRetries bounds the retries one answer follows.
const whyMaxRetries = 3

// whyOnTime is how late a dispatch may be and still count as on time:
// the dispatcher looks at least every max_sleep (default 1s) and batches.
const whyOnTime = time.Minute

// WhyRange is the range of entries Explain needs to explain the occurrence
// nearest at: from well before it, or before now when it is ahead (pauses
// and disables that began before it; 100 of the rule's periods, between 1
// hour and 7 days) to past the next occurrence and the attempt's timeout,
// never after now.
func WhyRange(sched Nexter, p Policy, at, now time.Time) (from, to time.Time) {
	p = p.WithDefaults()
	back, ahead := 24*time.Hour, 24*time.Hour
	if sched != nil {
		if o, _ := nearest(sched, at); !o.IsZero() {
			at = o
			if n := sched.Next(o); !n.IsZero() {
				period := n.Sub(o)
				back = min(max(100*period, time.Hour), 7*24*time.Hour)
				ahead = period
			}
		}
	}
	// An occurrence ahead is told from what holds now (a pause, a
	// disable): read back from now, not from the occurrence, which may lie
	// more than back ahead.
	from = at.Add(-back)
	if at.After(now) {
		from = now.Add(-back)
	}
	to = at.Add(ahead + p.Timeout)
	if to.After(now) {
		to = now
	}
	return from, to
}

// Nearest is the occurrence of sched at or nearest at (the earlier of
// two as near), the one Explain explains; zero when none.
func Nearest(sched Nexter, at time.Time) time.Time {
	o, _ := nearest(sched, at)
	return o
}

// nearest is the occurrence of sched at or nearest at (the earlier of two
// as near), and whether at lies after the rule's last occurrence.
func nearest(sched Nexter, at time.Time) (occ time.Time, ended bool) {
	next := sched.Next(at.Add(-time.Nanosecond)) // at or after
	prev := previous(sched, at)
	switch {
	case next.IsZero():
		return prev, !prev.IsZero()
	case prev.IsZero(), next.Equal(at):
		return next, false
	case at.Sub(prev) <= next.Sub(at):
		return prev, false
	}
	return next, false
}

// previous is the last occurrence strictly before at, zero when none within
// about 400 days: Nexter only looks forward, so it steps back in growing
// steps until an occurrence falls before at, then walks forward.
func previous(sched Nexter, at time.Time) time.Time {
	const back = 400 * 24 * time.Hour
	for step := time.Minute; ; step = min(4*step, back) {
		t := sched.Next(at.Add(-step - time.Nanosecond))
		if t.IsZero() || !t.Before(at) {
			if step == back {
				return time.Time{}
			}
			continue
		}
		for {
			n := sched.Next(t)
			if n.IsZero() || !n.Before(at) {
				return t
			}
			t = n
		}
	}
}

// Explain says what happened to the occurrence of q.Schedule at or nearest
// q.At, and why; see WhyQuery and Why.
func Explain(q WhyQuery) Why {
	q.Policy = q.Policy.WithDefaults()
	if q.Loc == nil {
		q.Loc = time.UTC
	}
	e := explainer{q: q, given: q.Entries}
	e.q.Entries = withDispatches(q)
	return e.explain()
}

// withDispatches is q.Entries with the dispatch of each routine start
// (RoutineStart) put back where it happened: an attempt whose entries
// hold no dispatched entry was dispatched at the Dispatched of the entry
// that ended it, or, while it runs, at the row's AttemptAt; it ran for
// its Planned when the entry has one, else for the schedule's last
// occurrence at or before then. Such dispatches are not cited (they are
// not the ledger's), the entries they come from are.
func withDispatches(q WhyQuery) []Entry {
	var made []Entry
	known := map[string]bool{}
	for _, x := range q.Entries {
		if !x.Whole && x.Event == EventDispatched && x.Attempt != "" {
			known[x.Attempt] = true
		}
	}
	add := func(x Entry, at time.Time) {
		if x.Attempt == "" || at.IsZero() || known[x.Attempt] || q.Schedule == nil {
			return
		}
		known[x.Attempt] = true
		p := x.Planned
		if p.IsZero() {
			p = routinePlanned(q.Schedule, at)
		}
		made = append(made, Entry{At: at, Kind: x.Kind, Key: x.Key, Event: EventDispatched, Attempt: x.Attempt, Planned: p, Priority: x.Priority})
	}
	for _, x := range q.Entries {
		switch x.Event {
		case EventSucceeded, EventFailed, EventTimedOut, EventLate, EventExtended:
			if !x.Whole {
				add(x, x.Dispatched)
			}
		}
	}
	if r := q.Row; r.Running() {
		key := ""
		for _, x := range q.Entries {
			if !x.Whole {
				key = x.Key
				break
			}
		}
		add(Entry{Kind: q.Policy.Kind, Key: key, Attempt: r.AttemptUID}, r.AttemptAt)
	}
	if len(made) == 0 {
		return q.Entries
	}
	// Merged by time; a dispatch goes before the entries of its instant.
	slices.SortStableFunc(made, func(a, b Entry) int { return a.At.Compare(b.At) })
	out := make([]Entry, 0, len(q.Entries)+len(made))
	i := 0
	for _, x := range q.Entries {
		for i < len(made) && !made[i].At.After(x.At) {
			out = append(out, made[i])
			i++
		}
		out = append(out, x)
	}
	return append(out, made[i:]...)
}

type explainer struct {
	q WhyQuery
	// given are the entries as read; q.Entries adds the routine
	// dispatches (withDispatches).
	given []Entry
	occ   time.Time // the occurrence explained
	ended bool      // At lies after the rule's last occurrence, occ
	used  []Entry
	// readToNow: a pause was told as still on from a read that ends
	// before Now.
	readToNow bool
}

// cite records an entry the answer is built on.
func (e *explainer) cite(en ...Entry) {
	for _, x := range en {
		if x.Event == "" {
			continue
		}
		e.used = append(e.used, x)
	}
}

// same reports whether a and b are one entry.
func same(a, b Entry) bool {
	return a.At.Equal(b.At) && a.Event == b.Event && a.Key == b.Key && a.Attempt == b.Attempt && a.Group == b.Group
}

// answer joins the sentences and cites the entries used, in the ledger's
// order.
func (e *explainer) answer(c Cause, sentences ...string) Why {
	var kept []string
	for _, s := range sentences {
		if s = strings.TrimSpace(s); s != "" {
			kept = append(kept, s)
		}
	}
	// In the ledger's order (oldest first, as the entries came).
	var used []Entry
	for _, x := range append(slices.Clip(e.given), e.q.Routine...) {
		for _, u := range e.used {
			if same(u, x) {
				used = append(used, x)
				break
			}
		}
	}
	return Why{Occurrence: e.occ, Cause: c, Sentence: strings.Join(kept, " "), Entries: used, ReadToNow: e.readToNow}
}

// full formats the first time of an answer: date, time and zone
// ("Nov 25 09:00 UTC").
func (e *explainer) full(t time.Time) string {
	t = t.In(e.q.Loc)
	return t.Format("Jan 2 ") + hm(t) + " " + t.Format("MST")
}

// at formats a later time: its clock, with the date when it is not the
// day of the occurrence (or of At).
func (e *explainer) at(t time.Time) string {
	t = t.In(e.q.Loc)
	ref := e.occ
	if ref.IsZero() {
		ref = e.q.At
	}
	ref = ref.In(e.q.Loc)
	out := t.Format("Jan 2 ") + hm(t)
	if t.Year() == ref.Year() && t.YearDay() == ref.YearDay() {
		out = hm(t)
	}
	// Across a change of the clocks (DST), say which offset.
	_, off := t.Zone()
	if _, refOff := ref.Zone(); off != refOff {
		out += " " + t.Format("MST")
	}
	return out
}

// hm is a clock time, with seconds only when they are not zero.
func hm(t time.Time) string {
	if t.Second() != 0 {
		return t.Format("15:04:05")
	}
	return t.Format("15:04")
}

// explain is Explain's answer; a time after the rule's end names the end
// as the cause.
func (e *explainer) explain() Why {
	w := e.explainOccurrence()
	if e.ended && w.Cause != CauseTriggered {
		w.Cause = CauseEnded
	}
	return w
}

// explainOccurrence finds the occurrence and tells its story.
func (e *explainer) explainOccurrence() Why {
	q := e.q
	if q.Schedule == nil {
		return e.invalidRule()
	}
	occ, ended := nearest(q.Schedule, q.At)
	if occ.IsZero() {
		return e.answer(CauseEnded, fmt.Sprintf("The rule has no occurrence near %s: nothing was planned then.", e.full(q.At)))
	}
	e.occ, e.ended = occ, ended
	// A refresh asked for by hand nearer to At than the occurrence is what
	// the question is about.
	if t, ok := e.nearerTrigger(); ok {
		return e.triggered(t)
	}
	head := e.full(occ) + " was planned."
	if ended {
		head = fmt.Sprintf("%s was the rule's last occurrence: it has none after, so nothing was planned at %s.", e.full(occ), e.at(q.At))
	}
	if occ.After(q.Now) {
		return e.ahead(head)
	}
	if q.LedgerOff {
		return e.ledgerOff(head)
	}
	d, found := e.dispatchFor(occ)
	if !found && q.Keep > 0 && occ.Before(q.Now.Add(-q.Keep)) {
		return e.answer(CauseNoEntries, head, fmt.Sprintf("The ledger keeps %s, so nothing is left from then.", days(q.Keep)))
	}
	if !found && !q.RowSince.IsZero() && occ.Before(q.RowSince) {
		return e.answer(CauseNoEntries, head, fmt.Sprintf("The ledger keeps the last %d entries of each model, and this model's oldest left is from %s, after it: it cannot tell what happened then.",
			q.RowMax, e.at(q.RowSince)))
	}
	if len(q.Entries) == 0 {
		if r := q.Row; r.Disabled() && !r.DisabledAt.After(occ) {
			return e.answer(CauseDisabled, head, fmt.Sprintf("It did not run: the model has been disabled since %s%s.", e.at(r.DisabledAt), quoteReason(r.DisabledReason)))
		}
		if story, ok := e.routineCycle(occ); ok {
			return e.answer(CauseSucceeded, head, "It ran as usual: it "+story+".")
		}
		if w, ok := e.routineGone(head); ok {
			return w
		}
		return e.answer(CauseNoEntries, head, "The ledger has no entry about this model or its kind from then: it was off, or the service did not run.")
	}
	if found {
		lead := ""
		if late := d.At.Sub(occ); late > whyOnTime {
			lead = fmt.Sprintf("It was not dispatched at %s: %s. ", e.at(occ), e.delay(occ, d.At))
		}
		c, story := e.story(d)
		return e.answer(c, head, lead+"It "+story)
	}
	return e.notDispatched(head)
}

// days says a retention: "30 days", or the duration when not whole days.
func days(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return plural(int(d/(24*time.Hour)), "day")
	}
	return FormatDuration(d)
}

// plural is "1 day", "2 days".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// quoteReason quotes a reason or a note after a clause: " ('...')"; ""
// for none.
func quoteReason(r string) string {
	if r == "" {
		return ""
	}
	return " ('" + r + "')"
}

// rowEntries are the entries of the row, not of its kind.
func (e *explainer) rowEntries() []Entry {
	var out []Entry
	for _, x := range e.q.Entries {
		if !x.Whole {
			out = append(out, x)
		}
	}
	return out
}

// dispatchFor is the dispatch of the attempt that ran for planned.
func (e *explainer) dispatchFor(planned time.Time) (Entry, bool) {
	for _, x := range e.rowEntries() {
		if x.Event == EventDispatched && x.Planned.Equal(planned) && !x.At.Before(planned.Add(-time.Second)) {
			return x, true
		}
	}
	return Entry{}, false
}

// story tells what became of the attempt dispatched by d ("was dispatched
// at 09:00 and succeeded at 09:01"), and of the retries that followed it:
// one in full, more as their count and the last one (at most
// whyMaxRetries are followed).
func (e *explainer) story(d Entry) (Cause, string) {
	c, s, end := e.attemptStory(d, true)
	first := end // the first attempt's outcome
	retries, tail := 0, ""
	for c == CauseFailed && retries < whyMaxRetries {
		if _, dis := e.disableEntry(end); dis || end.Next.IsZero() {
			break
		}
		nd, ok := e.dispatchFor(end.Next)
		if !ok {
			break
		}
		retries++
		var more string
		c, more, end = e.attemptStory(nd, false)
		if retries == 1 {
			tail = "; " + retryWords(first.Bound, e.at(first.Next)) + ", which " + more
		} else {
			tail = fmt.Sprintf("; %d retries followed, the last at %s, which %s", retries, e.at(nd.At), more)
		}
	}
	s += tail
	switch {
	case c == CauseSucceeded || c == CauseRunning:
		return c, s + "."
	}
	if dis, ok := e.disableEntry(end); ok {
		e.cite(dis)
		return CauseDisabled, s + "; the model was then disabled" + quoteReason(cmpStr(dis.Reason, e.q.Row.DisabledReason)) + "."
	}
	if end.Next.IsZero() {
		return c, s + "; no retry is recorded."
	}
	return c, s + "; " + retryWords(end.Bound, e.at(end.Next)) + "."
}

// attemptStory tells one attempt: its dispatch (when first, or late),
// its lease, its outcome and the stale answers it drew.
func (e *explainer) attemptStory(d Entry, first bool) (Cause, string, Entry) {
	e.cite(d)
	var parts []string
	if first || d.At.Sub(d.Planned) > whyOnTime {
		s := "was dispatched at " + e.at(d.At)
		if d.Priority != nil {
			s += fmt.Sprintf(" (priority %d)", *d.Priority)
		}
		parts = append(parts, s)
	}
	// The dispatch and the last lease only: every clause has the attempt
	// as its subject ("It was dispatched ..., had its lease extended ...
	// and succeeded ...").
	var stale, lease Entry
	for _, x := range e.rowEntries() {
		if x.Attempt != d.Attempt || d.Attempt == "" || x.At.Before(d.At) {
			continue
		}
		switch x.Event {
		case EventExtended:
			lease = x
		case EventStale:
			if stale.Event == "" {
				stale = x
			}
		}
	}
	if lease.Event != "" {
		e.cite(lease)
		parts = append(parts, "had its lease extended by its worker to "+e.at(lease.Until))
	}
	end, ok := e.outcome(d)
	if !ok {
		s := "no outcome is recorded yet"
		if e.q.Row.AttemptUID == d.Attempt && d.Attempt != "" {
			s = fmt.Sprintf("is still running (it times out at %s)", e.at(e.q.Row.TimeoutAt))
		} else if won, ok := e.batchedSuccess(d, lease.Until); ok {
			return CauseSucceeded, joinAnd(append(parts, won)), end
		}
		return CauseRunning, joinAnd(append(parts, s)), end
	}
	e.cite(end)
	c := CauseFailed
	var s string
	switch end.Event {
	case EventSucceeded:
		c, s = CauseSucceeded, "succeeded at "+e.at(end.At)
	case EventTimedOut:
		s = fmt.Sprintf("timed out at %s (%s)", e.at(end.At), cmpStr(end.Reason, "no answer in time"))
		for _, x := range e.rowEntries() {
			if x.Attempt == d.Attempt && x.Event == EventLate && !x.At.After(end.At) {
				e.cite(x)
				s = fmt.Sprintf("its answer came at %s, after its timeout, so it was ignored and the attempt timed out", e.at(x.At))
			}
		}
	case EventFailed:
		s = fmt.Sprintf("failed at %s (%s)", e.at(end.At), cmpStr(end.Reason, "no reason given"))
	}
	if inc, ok := e.incidentAt(end.At); ok && c == CauseFailed && !end.Disabled {
		e.cite(inc)
		s += " during an incident of the kind"
		if inc.Reason != "" {
			s += " (" + inc.Reason + ")"
		}
		s += ", so the attempt did not count"
	}
	s = joinAnd(append(parts, s))
	if stale.Event != "" {
		e.cite(stale)
		s += fmt.Sprintf("; an answer at %s came when it no longer ran and was ignored", e.at(stale.At))
	}
	return c, s, end
}

// joinAnd joins clauses as "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// retryWords says what planned the next try at t.
func retryWords(bound, t string) string {
	switch bound {
	case BoundRetryList:
		return "the retry list planned a retry at " + t
	case BoundNextOccurrence:
		return "the next occurrence, " + t + ", served as the retry"
	case BoundRetryAfter:
		return "the worker's Retry-After put the next try at " + t
	case BoundIncidentFloor:
		return "the incident's floor put the retry at " + t
	}
	return "the next try was planned at " + t
}

// cmpStr is s, or def when s is empty.
func cmpStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// outcome is the entry that ended the attempt of d.
func (e *explainer) outcome(d Entry) (Entry, bool) {
	for _, x := range e.rowEntries() {
		if x.Attempt != d.Attempt || d.Attempt == "" || x.At.Before(d.At) {
			continue
		}
		switch x.Event {
		case EventSucceeded, EventFailed, EventTimedOut:
			return x, true
		}
	}
	return Entry{}, false
}

// disableEntry is the entry that disabled the model at the outcome end
// (a disabled entry within a second, or end itself when it says so).
func (e *explainer) disableEntry(end Entry) (Entry, bool) {
	for _, x := range e.rowEntries() {
		if x.Event == EventDisabled && !x.At.Before(end.At) && x.At.Sub(end.At) <= time.Second {
			return x, true
		}
	}
	if end.Disabled {
		return end, true
	}
	return Entry{}, false
}

// incidentAt is the incident of the kind open at t.
func (e *explainer) incidentAt(t time.Time) (Entry, bool) {
	var open Entry
	for _, x := range e.q.Entries {
		if !x.Whole || x.At.After(t) {
			continue
		}
		switch x.Event {
		case EventIncidentOpened:
			open = x
		case EventIncidentClosed:
			open = Entry{}
		}
	}
	return open, open.Event != ""
}

// span is an interval of a pause or hold: from its entry to its end (zero:
// not ended).
type span struct {
	start, end Entry
	until      time.Time // the end's time, or the pause's own Until
	// ongoing: not resumed, and its own Until (if any) is still ahead.
	ongoing bool
}

// pauses are the pause spans of the kind (key "") or of the row.
func (e *explainer) pauses(kind bool) []span {
	var out []span
	var open *span
	for _, x := range e.q.Entries {
		if x.Whole != kind {
			continue
		}
		switch x.Event {
		case EventPaused:
			if open == nil {
				open = &span{start: x, until: x.Until}
			}
		case EventResumed:
			if open != nil {
				open.end, open.until = x, x.At
				out = append(out, *open)
				open = nil
			}
		}
	}
	if open != nil {
		open.ongoing = open.until.IsZero() || open.until.After(e.q.Now)
		out = append(out, *open)
	}
	return out
}

// covers reports whether the span holds t.
func (s span) covers(t time.Time) bool {
	return !s.start.At.After(t) && (s.until.IsZero() || s.until.After(t))
}

// who says who paused and why: "by ops ('incident 42')".
func who(x Entry) string {
	s := ""
	if x.By != "" {
		s = " by " + x.By
	}
	if x.Note != "" {
		s += " ('" + x.Note + "')"
	}
	return s
}

// pauseWords: "the kind was paused from 08:55 to 09:20 by ops ('incident 42')".
func (e *explainer) pauseWords(what string, s span) string {
	e.cite(s.start, s.end)
	if s.ongoing {
		if !e.q.To.IsZero() && e.q.To.Before(e.q.Now) {
			e.readToNow = true
		}
		w := fmt.Sprintf("%s has been paused since %s%s", what, e.at(s.start.At), who(s.start))
		if !s.until.IsZero() {
			w += ", to end at " + e.at(s.until)
		}
		return w
	}
	return fmt.Sprintf("%s was paused from %s to %s%s", what, e.at(s.start.At), e.at(s.until), who(s.start))
}

// holdAt is the throttle hold of the row's group that covers t: a hold
// of the kind's group (Key "") or one recorded on the row itself.
func (e *explainer) holdAt(t time.Time) (Entry, bool) {
	var found Entry
	for _, x := range e.q.Entries {
		if x.Event != EventThrottleHold || x.At.After(t) || !x.Until.After(t) {
			continue
		}
		if x.Whole && e.q.Group != "" && x.Group != e.q.Group {
			continue
		}
		if found.Event == "" || x.Until.After(found.Until) {
			found = x
		}
	}
	return found, found.Event != ""
}

// delay says why the dispatch of occ came only at dispatched.
func (e *explainer) delay(occ, dispatched time.Time) string {
	for _, s := range e.pauses(true) {
		if s.covers(occ) {
			return e.pauseWords("the kind", s)
		}
	}
	if h, ok := e.holdAt(occ); ok {
		e.cite(h)
		return fmt.Sprintf("its throttle group %s was held until %s after a Retry-After", h.Group, e.at(h.Until))
	}
	if b, ok := e.busyAt(occ); ok {
		return b
	}
	return fmt.Sprintf("the ledger does not say why it waited %s (the service may have been down or behind)", FormatDuration(dispatched.Sub(occ).Truncate(time.Second)))
}

// busyAt says that an attempt started before occ was still running at occ.
func (e *explainer) busyAt(occ time.Time) (string, bool) {
	var last Entry
	for _, x := range e.rowEntries() {
		if x.Event == EventDispatched && x.At.Before(occ) {
			last = x
		}
	}
	if last.Event == "" {
		return "", false
	}
	end, ok := e.outcome(last)
	if ok && !end.At.After(occ) {
		return "", false
	}
	if !ok && e.q.Row.AttemptUID != last.Attempt {
		// Its success may be in a batch of routine successes: busy only
		// when every batch that may hold it came after occ.
		if bs := e.successBatches(last, time.Time{}); len(bs) == 0 || !bs[0].At.After(occ) {
			return "", false
		}
	}
	e.cite(last)
	s := fmt.Sprintf("the attempt dispatched at %s was still running", e.at(last.At))
	if ok {
		e.cite(end)
		word := map[Event]string{EventSucceeded: "succeeded", EventFailed: "failed", EventTimedOut: "timed out"}[end.Event]
		s += fmt.Sprintf(" (it %s at %s)", word, e.at(end.At))
	}
	return s, true
}

// notDispatched explains an occurrence no attempt ran for.
func (e *explainer) notDispatched(head string) Why {
	occ, q := e.occ, e.q
	rows := e.rowEntries()
	for _, x := range rows {
		if x.Event == EventMisfireSkipped && x.Planned.Equal(occ) {
			e.cite(x)
			s := fmt.Sprintf("It did not run: when the service looked at %s it had been due for %s, longer than the catchup window (%s), as after downtime; it was skipped",
				e.at(x.At), FormatDuration(x.At.Sub(occ).Truncate(time.Second)), FormatDuration(q.Policy.Catchup.Window))
			if !x.Next.IsZero() {
				s += " for the next occurrence, " + e.at(x.Next)
			}
			return e.answer(CauseMisfire, head, s+".")
		}
	}
	// Disabled at the occurrence: the last disable or enable before it.
	var state Entry
	for _, x := range rows {
		if x.At.After(occ) {
			break
		}
		if x.Event == EventDisabled || x.Event == EventEnabled || (x.Event == EventFailed && x.Disabled) {
			state = x
		}
	}
	if state.Event == EventDisabled || state.Event == EventFailed {
		e.cite(state)
		return e.disabledBefore(head, state.At, state.Reason)
	}
	if state.Event == "" && q.Row.Disabled() && !q.Row.DisabledAt.After(occ) && !e.enabledAfter(q.Row.DisabledAt) {
		return e.disabledBefore(head, q.Row.DisabledAt, q.Row.DisabledReason)
	}
	for _, s := range e.pauses(false) {
		if s.covers(occ) {
			w := "It did not run: " + e.pauseWords("the model", s)
			if s.ongoing {
				return e.answer(CausePaused, head, w+".")
			}
			w += "; resuming planned the next occurrence"
			if n := q.Schedule.Next(s.until); !n.IsZero() {
				w += ", " + e.at(n)
			}
			return e.answer(CausePaused, head, w+", not the runs missed.")
		}
	}
	// A pause or hold that has ended since did not stop the dispatch
	// after it: say so rather than let it read as the whole answer.
	const noneAfter = ", and no dispatch is recorded after it ended"
	for _, s := range e.pauses(true) {
		if s.covers(occ) {
			if s.ongoing {
				return e.answer(CauseKindPaused, head, "It has not run: "+e.pauseWords("the kind", s)+".")
			}
			if w, ok := e.servedAfter(head, "the kind's pause", e.pauseWords("the kind", s), s.until); ok {
				return w
			}
			return e.answer(CauseKindPaused, head, "It did not run: "+e.pauseWords("the kind", s)+noneAfter+".")
		}
	}
	if h, ok := e.holdAt(occ); ok {
		e.cite(h)
		if h.Until.After(q.Now) {
			return e.answer(CauseHeld, head, fmt.Sprintf("It has not run: its throttle group %s is held until %s after a Retry-After.", h.Group, e.at(h.Until)))
		}
		if w, ok := e.servedAfter(head, "the hold", fmt.Sprintf("its throttle group %s was held until %s after a Retry-After", h.Group, e.at(h.Until)), h.Until); ok {
			return w
		}
		return e.answer(CauseHeld, head, fmt.Sprintf("It did not run: its throttle group %s was held until %s after a Retry-After%s.", h.Group, e.at(h.Until), noneAfter))
	}
	if b, ok := e.busyAt(occ); ok {
		s := "It did not run: " + b
		if n := q.Schedule.Next(occ); !n.IsZero() {
			s += "; one attempt runs at a time, and the next occurrence, " + e.at(n) + ", came after"
		}
		return e.answer(CauseBusy, head, s+".")
	}
	// A failure before the occurrence that planned its retry past it.
	var fail Entry
	for _, x := range rows {
		if x.At.After(occ) {
			break
		}
		if (x.Event == EventFailed || x.Event == EventTimedOut) && x.Next.After(occ) {
			fail = x
		}
	}
	if fail.Event != "" {
		e.cite(fail)
		return e.answer(CauseDeferred, head, fmt.Sprintf("It did not run: after the failure at %s (%s) %s, past it.",
			e.at(fail.At), cmpStr(fail.Reason, "no reason given"), retryWords(fail.Bound, e.at(fail.Next))))
	}
	if story, ok := e.routineCycle(occ); ok {
		return e.answer(CauseSucceeded, head, "It ran as usual: it "+story+".")
	}
	if w, ok := e.routineGone(head); ok {
		return w
	}
	from, to := e.q.Entries[0].At, e.q.Entries[len(e.q.Entries)-1].At
	if from.After(occ) {
		return e.answer(CauseNoEntries, head, fmt.Sprintf("The ledger's first entry read is at %s, after it: the ledger was off then, or its entries from then are gone.", e.at(from)))
	}
	return e.answer(CauseUnknown, head, fmt.Sprintf("No dispatch for it is recorded, and no entry from %s to %s says why: the service may have been down.", e.at(from), e.at(to)))
}

// servedAfter tells the occurrence that a kind's pause or a throttle hold
// (why, which ended at end) kept from its time, when the row's first
// dispatch after end ran for a time before the next occurrence: the row
// was still due then, from occ or from a refresh now or retry due before
// it, so that one dispatch served the occurrence (as the dispatch after a
// resume serves the runs missed, once). A dispatch planned for a later
// occurrence did not serve it.
func (e *explainer) servedAfter(head, what, why string, end time.Time) (Why, bool) {
	d, ok := e.firstDispatchAfter(end)
	if !ok {
		story, ok := e.routineCycle(end)
		if !ok {
			return Why{}, false
		}
		return e.answer(CauseSucceeded, head, fmt.Sprintf("It was not dispatched at %s: %s. After %s it ran as usual: it %s.", e.at(e.occ), why, what, story)), true
	}
	if n := e.q.Schedule.Next(e.occ); !n.IsZero() && !d.Planned.Before(n) {
		return Why{}, false
	}
	c, story := e.story(d)
	return e.answer(c, head, fmt.Sprintf("It was not dispatched at %s: %s. After %s it %s", e.at(e.occ), why, what, story)), true
}

// enabledAfter reports whether an enable entry follows t.
func (e *explainer) enabledAfter(t time.Time) bool {
	for _, x := range e.rowEntries() {
		if x.Event == EventEnabled && !x.At.Before(t) {
			return true
		}
	}
	return false
}

// disabledBefore explains an occurrence that fell while the model was
// disabled (since at), and what re-enabled it.
func (e *explainer) disabledBefore(head string, at time.Time, reason string) Why {
	if strings.HasPrefix(reason, invalidSchedulePrefix) {
		return e.answer(CauseInvalidRule, head, fmt.Sprintf("It did not run: the model was disabled at %s because its own rule is invalid%s.", e.at(at), quoteReason(reason)))
	}
	s := fmt.Sprintf("It did not run: the model had been disabled since %s%s", e.at(at), quoteReason(reason))
	for _, x := range e.rowEntries() {
		if x.Event != EventEnabled || x.At.Before(e.occ) {
			continue
		}
		e.cite(x)
		s += "; " + cmpStr(x.By, "the application") + " enabled it at " + e.at(x.At)
		if d, ok := e.firstDispatchAfter(x.At); ok {
			_, st := e.story(d)
			return e.answer(CauseDisabled, head, s+", and it "+st)
		}
		return e.answer(CauseDisabled, head, s+".")
	}
	if e.q.Row.Disabled() {
		s += ", and it still is: it waits for the user to update it or an operator to enable it"
	}
	return e.answer(CauseDisabled, head, s+".")
}

// firstDispatchAfter is the row's first dispatch at or after t.
func (e *explainer) firstDispatchAfter(t time.Time) (Entry, bool) {
	for _, x := range e.rowEntries() {
		if x.Event == EventDispatched && !x.At.Before(t) {
			return x, true
		}
	}
	return Entry{}, false
}

// nearerTrigger is a refresh asked for by hand (triggered) nearer to At
// than the occurrence.
func (e *explainer) nearerTrigger() (Entry, bool) {
	var best Entry
	dist := func(t time.Time) time.Duration {
		d := t.Sub(e.q.At)
		if d < 0 {
			return -d
		}
		return d
	}
	limit := dist(e.occ)
	for _, x := range e.rowEntries() {
		if x.Event == EventTriggered && dist(x.At) < limit {
			best, limit = x, dist(x.At)
		}
	}
	return best, best.Event != ""
}

// triggered explains a refresh asked for by hand.
func (e *explainer) triggered(t Entry) Why {
	e.occ = time.Time{}
	e.cite(t)
	head := fmt.Sprintf("At %s %s asked for a refresh now", e.full(t.At), cmpStr(t.By, "someone"))
	if t.Priority != nil {
		head += fmt.Sprintf(" (priority %d)", *t.Priority)
	}
	head += "; it was not one of the schedule's occurrences."
	var d Entry
	for _, x := range e.rowEntries() {
		if x.Event == EventDispatched && x.Planned.Equal(t.At) {
			d = x
			break
		}
	}
	if d.Event == "" {
		var ok bool
		if d, ok = e.firstDispatchAfter(t.At); !ok {
			return e.answer(CauseTriggered, head, "No dispatch is recorded after it.")
		}
	}
	_, s := e.story(d)
	return e.answer(CauseTriggered, head, "It "+s)
}

// ahead explains an occurrence still to come, from what holds now.
func (e *explainer) ahead(head string) Why {
	head = strings.Replace(head, "was planned", "is ahead", 1)
	q := e.q
	if q.Row.Disabled() {
		return e.answer(CauseDisabled, head, fmt.Sprintf("It will not run: the model has been disabled since %s%s, until the user updates it or an operator enables it.",
			e.at(q.Row.DisabledAt), quoteReason(q.Row.DisabledReason)))
	}
	// A pause that ends by itself before the occurrence does not stop it.
	blocks := func(s span) bool { return s.ongoing && (s.until.IsZero() || s.until.After(e.occ)) }
	for _, s := range e.pauses(false) {
		if blocks(s) {
			return e.answer(CausePaused, head, "It will not run: "+e.pauseWords("the model", s)+"; resuming plans the next occurrence after the resume.")
		}
	}
	for _, s := range e.pauses(true) {
		if blocks(s) {
			return e.answer(CauseKindPaused, head, "It will not run while the kind is paused: "+e.pauseWords("the kind", s)+".")
		}
	}
	if q.Row.RefreshAt.Equal(e.occ) {
		return e.answer(CauseAhead, head, "It is planned: refresh_at is "+e.at(e.occ)+".")
	}
	if q.Row.RefreshAt.IsZero() {
		return e.answer(CauseAhead, head, "Nothing is planned now (refresh_at is empty).")
	}
	return e.answer(CauseAhead, head, "The next action planned now is at "+e.at(q.Row.RefreshAt)+"; the schedule's occurrences follow it.")
}

// invalidRule explains a row with no usable rule.
func (e *explainer) invalidRule() Why {
	q := e.q
	for _, x := range e.rowEntries() {
		if x.Event == EventDisabled && strings.HasPrefix(x.Reason, invalidSchedulePrefix) {
			e.cite(x)
			return e.answer(CauseInvalidRule, fmt.Sprintf("Nothing was planned at %s: the model's own rule is invalid, and it was disabled at %s%s.",
				e.full(q.At), e.at(x.At), quoteReason(x.Reason)))
		}
	}
	why := "the model has no rule"
	if q.ScheduleError != "" {
		why = "the model's own rule does not parse: " + q.ScheduleError
	}
	return e.answer(CauseInvalidRule, fmt.Sprintf("Nothing was planned at %s: %s.", e.full(q.At), why))
}

// Routine cycles. With ledger.routine "batches", a plain success (of the
// running attempt, on time, with a next occurrence) writes no row entry:
// the batch that applied it writes one EventRoutine entry of the kind,
// with the range of its attempts' dispatches. Every other outcome of an
// attempt (a failure, a timeout, a late or stale answer, a disable, the
// rule's end) is a row entry written in the transaction that changed the
// row, and so is every start that is not routine (RoutineStart). Hence an
// attempt with no outcome recorded, no longer running, succeeded in one of
// the batches whose dispatches meet its own and that came before it could
// time out; and an occurrence with no entry of its own ran as a routine
// cycle, when batches of the kind show the ledger was on and the row's
// columns show a success since. The answer says which batches, and names
// the exact times only when the row's columns give them (its last attempt
// and last success).

// routineNote ends every answer told from batches.
const routineNote = "routine successes are recorded per batch, not per model"

// batches are the routine batches applied in [from, to] whose
// dispatches' range (to the second) meets [dfrom, dto).
func (e *explainer) batches(dfrom, dto, from, to time.Time) []Entry {
	var out []Entry
	for _, x := range e.q.Routine {
		if x.At.Before(from) || x.At.After(to) || x.Dispatched.IsZero() {
			continue
		}
		if !x.Dispatched.Before(dto) || cmpTime(x.DispatchedLast, x.Dispatched).Before(dfrom) {
			continue
		}
		out = append(out, x)
	}
	return out
}

// cmpTime is t, or def when t is zero.
func cmpTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// successBatches are the batches that may hold the success of the attempt
// dispatched by d: applied from its dispatch to its timeout (or its last
// lease's end, leaseUntil), their dispatches meeting its second.
func (e *explainer) successBatches(d Entry, leaseUntil time.Time) []Entry {
	sec := d.At.Truncate(time.Second)
	until := d.At.Add(e.q.Policy.Timeout)
	if leaseUntil.After(until) {
		until = leaseUntil
	}
	return e.batches(sec, sec.Add(time.Second), d.At, until)
}

// batchedSuccess tells the success of the attempt dispatched by d that no
// row entry records, when the row's columns show a success since and
// batches may hold it: "succeeded at 09:00:03 (...)".
func (e *explainer) batchedSuccess(d Entry, leaseUntil time.Time) (string, bool) {
	r := e.q.Row
	if d.Attempt == "" || r.LastSuccessAt.Before(d.At) {
		return "", false
	}
	bs := e.successBatches(d, leaseUntil)
	if len(bs) == 0 {
		return "", false
	}
	e.cite(bs...)
	if !r.Running() && absDur(r.AttemptAt.Sub(d.At)) < time.Second {
		return fmt.Sprintf("succeeded at %s (the model's last success, from its columns; %s)", e.at(r.LastSuccessAt), routineNote), true
	}
	return "succeeded " + e.batchWords(bs) + " (no other outcome is recorded for it; " + routineNote + ")", true
}

// routineCycle tells the routine cycle that served the occurrence from
// from (the occurrence, or the end of a pause or hold that kept it) to
// the next occurrence: its predicate ("was dispatched at ... and
// succeeded at ..."). It needs the row's columns to show a success since
// from, no entry of the row over the cycle, and batches of the kind
// applied over it whose dispatches fall in it.
func (e *explainer) routineCycle(from time.Time) (string, bool) {
	q := e.q
	if len(q.Routine) == 0 || q.Schedule == nil || q.Row.LastSuccessAt.Before(from) {
		return "", false
	}
	// The cycle ends at the next occurrence, or just after now (a dispatch
	// may have come at now).
	next := q.Schedule.Next(e.occ)
	if next.IsZero() || next.After(q.Now) {
		next = q.Now.Add(time.Nanosecond)
	}
	for _, x := range e.rowEntries() {
		if x.Event != EventStale && !x.At.Before(from) && x.At.Before(next) {
			return "", false
		}
	}
	bs := e.batches(from.Truncate(time.Second), next, from, next.Add(q.Policy.Timeout))
	if len(bs) == 0 {
		return "", false
	}
	e.cite(bs...)
	r := q.Row
	if !r.Running() && !r.AttemptAt.Before(from.Truncate(time.Second)) && r.AttemptAt.Before(next) && !r.LastSuccessAt.Before(r.AttemptAt) {
		return fmt.Sprintf("was dispatched at %s and succeeded at %s (its last attempt, from the model's columns; %s)", e.at(r.AttemptAt), e.at(r.LastSuccessAt), routineNote), true
	}
	return "was dispatched and succeeded " + e.batchWords(bs) + " (no entry of its own, so nothing but a routine cycle happened to it; " + routineNote + ")", true
}

// routineGone answers an occurrence nothing explains when the kind's
// batches of routine successes the ledger holds begin after it: a routine
// cycle then would have left nothing, so the ledger cannot tell.
func (e *explainer) routineGone(head string) (Why, bool) {
	since := e.q.RoutineSince
	if since.IsZero() || !e.occ.Before(since) {
		return Why{}, false
	}
	return e.answer(CauseNoEntries, head, fmt.Sprintf("A routine cycle leaves no entry of its own, and the kind's oldest batch of routine successes left is from %s, after it (the ledger keeps the last ledger.routine_max_entries of them, and none from before it was on): it cannot tell what happened then.",
		e.at(since))), true
}

// batchWords says when batches were applied: "in the batch of routine
// successes applied at 09:00:04", "in one of the 3 batches of routine
// successes applied between 09:00:01 and 09:00:04".
func (e *explainer) batchWords(bs []Entry) string {
	first, last := bs[0].At, bs[len(bs)-1].At
	if len(bs) == 1 {
		return "in the batch of routine successes applied at " + e.at(first)
	}
	return fmt.Sprintf("in one of the %d batches of routine successes applied between %s and %s", len(bs), e.at(first), e.at(last))
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// ledgerOff explains a past occurrence while the ledger is off: only the
// schedule and the row's columns answer.
func (e *explainer) ledgerOff(head string) Why {
	q, occ := e.q, e.occ
	off := "The ledger is off (ledger.enabled: false), so it recorded nothing about it"
	if !q.LedgerLast.IsZero() {
		off = fmt.Sprintf("The ledger is off (ledger.enabled: false); its newest entry about this model or its kind is from %s", e.full(q.LedgerLast))
	}
	r := q.Row
	next := q.Schedule.Next(occ)
	var cols string
	switch {
	case r.Disabled() && !r.DisabledAt.After(occ):
		cols = fmt.Sprintf("The model's columns say it has been disabled since %s%s, so it did not run.", e.at(r.DisabledAt), quoteReason(r.DisabledReason))
	case !r.LastSuccessAt.Before(occ) && (next.IsZero() || r.LastSuccessAt.Before(next)):
		cols = fmt.Sprintf("The model's columns say its last success was at %s, after it and before the next occurrence: it ran.", e.at(r.LastSuccessAt))
	case !r.LastSuccessAt.IsZero():
		cols = fmt.Sprintf("The model's columns say only that its last success was at %s.", e.at(r.LastSuccessAt))
	default:
		cols = "The model's columns record no success."
	}
	return e.answer(CauseLedgerOff, head, off+".", cols)
}
