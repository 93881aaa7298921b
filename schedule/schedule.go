package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Schedule is a parsed RFC 5545 recurrence: DTSTART, one RRULE, and optional
// EXDATE and RDATE lines. Its occurrences are the recurrence set RRULE +
// RDATE - EXDATE (RFC 5545 section 3.8.5). It is immutable and safe for
// concurrent use; the rrule-go objects it needs are built per call and never
// shared.
//
// Local times follow RFC 5545 (docs/schedules.md, "Writing a schedule"): a wall-clock time that does
// not exist (spring forward) is read with the UTC offset from before the gap,
// so a daily 02:30 in America/New_York runs at 03:30 EDT on the day clocks go
// forward; a time that occurs twice (fall back) means its first occurrence;
// every other occurrence keeps its wall-clock time. An all-day value
// (VALUE=DATE) is midnight of that date in the rule's zone.
//
// Next costs about the same whatever DTSTART's age (about a microsecond for
// a MINUTELY or HOURLY rule), because the rule is evaluated from a period
// start shortly before the asked time rather than from DTSTART, and it is
// bounded on every rule (about a millisecond on the worst ones known, see
// cost_test.go). Sub-daily rules look at most 100 years ahead (maxSpanDays;
// NextChecked reports ErrTooFar), other rules about 200 years; a refresh
// schedule never needs more.
type Schedule struct {
	text    string
	loc     *time.Location
	eng     *engine
	until   time.Time   // UNTIL as an instant; zero when none
	endWall time.Time   // last occurrence's wall clock (COUNT, or UNTIL bound); zero when none
	exdates []time.Time // sorted instants
	rdates  []time.Time // sorted instants, EXDATEs removed
}

// Parse parses RFC 5545 text: an optional DTSTART (UTC with a trailing
// Z, floating (read as UTC), or with TZID=Zone/Name), one RRULE, and optional
// EXDATE and RDATE lines (comma-separated lists, optionally with TZID). Lines
// are separated by real line breaks or by the two characters `\n`. A missing
// DTSTART means 2000-01-01T00:00:00Z, never "now". DTSTART, EXDATE and
// RDATE also take VALUE=DATE (a date: midnight in the value's TZID, else in
// the rule's zone).
//
// Rules that rrule-go would panic or loop forever on, schedules whose whole
// set is empty, and rules beyond the engine's limits (docs/schedules.md,
// "Limits") are rejected, among them a COUNT whose last occurrence
// cannot be found within the cost bound (count.go): the error then says to
// use UNTIL instead. The error text says what is wrong and
// how to fix it, in words suitable after "Invalid refresh schedule: ".
//
// Parse does not cache; a caller that parses the same texts again and again
// keeps a Cache.
func Parse(text string) (*Schedule, error) {
	return parse(text)
}

func parse(text string) (*Schedule, error) {
	p, err := parseText(text)
	if err != nil {
		return nil, err
	}
	eng, err := newEngine(&p.rule, p.startWall)
	var empty *emptyRuleError
	if err != nil && !errors.As(err, &empty) {
		return nil, err
	}
	s := &Schedule{loc: p.loc, eng: eng, until: p.rule.until}
	s.exdates = sortedUnique(p.exdates)
	for _, r := range sortedUnique(p.rdates) {
		if !s.excluded(r) {
			s.rdates = append(s.rdates, r)
		}
	}
	ruleErr := err // why the RRULE alone gives nothing
	if eng != nil {
		ruleErr = s.measureRule(p)
	}
	if ruleErr != nil {
		var far *tooFarError
		var costly *countCostlyError
		if len(s.rdates) == 0 || errors.As(ruleErr, &far) || errors.As(ruleErr, &costly) {
			return nil, ruleErr // a limit, not an empty rule: RDATEs do not replace it
		}
		// The set is the RDATEs alone (RFC 5545 section 3.8.5).
		s.eng, s.endWall = nil, time.Time{}
	}
	s.text = normalizedText(p)
	return s, nil
}

// tooFarError says that a rule's first occurrence could not be found within
// the cost bound (maxSpanDays).
type tooFarError struct{ msg string }

func (e *tooFarError) Error() string { return e.msg }

// measureRule finds the rule's first occurrence and, for COUNT, its last
// (s.endWall). It returns why the rule gives no occurrence, or nil.
func (s *Schedule) measureRule(p *parsed) error {
	bound := time.Time{}
	if !s.until.IsZero() {
		// Every occurrence at or before UNTIL has a wall clock before this.
		bound = wallOf(s.until, s.loc).Add(maxOffsetSpread)
		s.endWall = bound
	}
	it := s.eng.iter(p.startWall, bound)
	inSet := func(w time.Time) (inst time.Time, in, past bool) {
		inst, pushed := wallToInstant(w, s.loc)
		if !s.until.IsZero() && inst.After(s.until) {
			return inst, false, !pushed
		}
		return inst, !s.excluded(inst), false
	}
	kept := false // an occurrence that no EXDATE removes
	n := 0
	for {
		w, ok := it.next()
		if !ok {
			break
		}
		_, in, past := inSet(w)
		if past {
			break
		}
		n++
		kept = kept || in
		if p.rule.count > 0 && n == p.rule.count {
			break // every occurrence COUNT allows is excluded, or one is kept
		}
		// Stop once some occurrence is kept; EXDATEs can remove at most
		// maxDates of them.
		if kept || n > maxDates {
			kept = true
			break
		}
	}
	if p.rule.count > 0 && n > 0 {
		var err error
		if s.endWall, err = s.eng.countEnd(p.rule.count, &countWork{}); err != nil {
			return err
		}
	}
	switch {
	case n == 0 && it.tooFar && s.eng.anyDayPasses():
		return &tooFarError{fmt.Sprintf("the rule has no occurrence within %d years of DTSTART %s, the most the service computes; make it more frequent (e.g. fewer BYxxx parts or a smaller INTERVAL)",
			maxSpanDays/365, p.startWall.Format("2006-01-02 15:04:05"))}
	case n == 0 && !s.until.IsZero():
		return fmt.Errorf("the rule has no occurrence between DTSTART %s and UNTIL %s; move UNTIL later or DTSTART earlier",
			p.startWall.Format("2006-01-02 15:04:05"), s.until.Format("2006-01-02 15:04:05Z"))
	case n == 0:
		return errors.New("the rule never produces an occurrence; its BYxxx parts exclude each other (e.g. BYMONTH=2;BYMONTHDAY=30) or never meet DTSTART's INTERVAL grid")
	case !kept:
		return errors.New("EXDATE removes every occurrence of the rule; remove some EXDATE values, or add RDATE values")
	}
	return nil
}

func sortedUnique(ts []time.Time) []time.Time {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

func (s *Schedule) excluded(t time.Time) bool {
	_, found := slices.BinarySearchFunc(s.exdates, t, func(a, b time.Time) int { return a.Compare(b) })
	return found
}

// Next returns the first occurrence strictly after `after`, in UTC, or the
// zero time when there is none. It never panics, its cost does not grow with
// DTSTART's age, and it is bounded on every rule (see maxSpanDays). It is
// NextChecked without the error: an occurrence beyond the search bound
// reads as "no more occurrences".
func (s *Schedule) Next(after time.Time) time.Time {
	t, _ := s.NextChecked(after)
	return t
}

// ErrTooFar is returned by NextChecked when a sub-daily rule's next
// occurrence, if any, lies more than 100 years after the asked time: the
// engine stops looking there to bound the cost of untrusted rules. The text
// reads well after "Invalid refresh schedule: ".
var ErrTooFar = errors.New("the rule's next occurrence lies more than 100 years ahead, further than the service computes; make it more frequent")

// NextChecked is Next, and tells a rule that ended (zero time, nil) from one
// whose next occurrence lies beyond the search bound (zero time, ErrTooFar).
// An RDATE found before that bound is returned with a nil error.
func (s *Schedule) NextChecked(after time.Time) (time.Time, error) {
	if s == nil || after.Year() > maxYear {
		return time.Time{}, nil
	}
	var best time.Time
	var tooFar bool
	if s.eng != nil {
		best, tooFar = s.nextRule(after)
	}
	i, found := slices.BinarySearchFunc(s.rdates, after, func(a, b time.Time) int { return a.Compare(b) })
	if found {
		i++
	}
	if i < len(s.rdates) && (best.IsZero() || s.rdates[i].Before(best)) {
		return s.rdates[i], nil
	}
	if best.IsZero() && tooFar {
		return time.Time{}, ErrTooFar
	}
	return best, nil
}

// maxOffsetSpread bounds how far an instant can lie before its wall clock
// read as UTC, across all UTC offsets (-12h to +14h).
const maxOffsetSpread = 26 * time.Hour

// nextRule returns the RRULE's first occurrence after `after`, or zero;
// tooFar reports that the search stopped at its bound rather than at the
// rule's end.
func (s *Schedule) nextRule(after time.Time) (next time.Time, tooFar bool) {
	if !s.until.IsZero() && !after.Before(s.until) {
		return time.Time{}, false
	}
	afterWall := wallOf(after, s.loc)
	if !s.endWall.IsZero() && afterWall.Add(-maxOffsetSpread).After(s.endWall) {
		return time.Time{}, false
	}
	// An occurrence whose wall clock lies before after's can still come
	// after it when a spring-forward gap pushed it; start that much earlier.
	from := afterWall.Add(-gapMargin(after, s.loc))
	it := s.eng.iter(from, s.endWall)
	var best time.Time
	for {
		w, ok := it.next()
		if !ok {
			break
		}
		if !best.IsZero() && w.Add(-maxOffsetSpread).After(best) {
			break // no later wall clock can map before best
		}
		inst, pushed := wallToInstant(w, s.loc)
		if !s.until.IsZero() && inst.After(s.until) {
			if pushed {
				continue
			}
			break // instants of unpushed occurrences only grow
		}
		if !inst.After(after) || s.excluded(inst) {
			continue
		}
		if best.IsZero() || inst.Before(best) {
			best = inst
		}
		if !pushed {
			// Later wall clocks map to instants at or after this one.
			break
		}
	}
	if best.IsZero() {
		return best, it.tooFar
	}
	return best.UTC(), false
}

// String returns the normalized text: DTSTART (always present), RRULE with
// its parts in a fixed order, then EXDATE and RDATE lines, separated by "\n".
// Parse(s.String()) describes the same schedule.
func (s *Schedule) String() string {
	if s == nil {
		return ""
	}
	return s.text
}

// Location is the rule's time zone (DTSTART's TZID; UTC for a UTC or
// floating DTSTART), in which `refresher why` shows times.
func (s *Schedule) Location() *time.Location {
	if s == nil || s.loc == nil {
		return time.UTC
	}
	return s.loc
}

func normalizedText(p *parsed) string {
	var b strings.Builder
	b.WriteString("DTSTART")
	switch {
	case p.zoneName != "":
		b.WriteString(";TZID=" + p.zoneName + ":" + p.startWall.Format("20060102T150405"))
	case p.floating:
		b.WriteString(":" + p.startWall.Format("20060102T150405"))
	default:
		b.WriteString(":" + p.startWall.Format("20060102T150405Z"))
	}
	b.WriteString("\nRRULE:" + p.rule.text(p.floating))
	for _, t := range p.exdateText {
		b.WriteString("\n" + dateLine("EXDATE", t))
	}
	for _, t := range p.rdateText {
		b.WriteString("\n" + dateLine("RDATE", t))
	}
	return b.String()
}

func dateLine(name, text string) string {
	if strings.HasPrefix(text, "TZID=") {
		return name + ";" + text
	}
	return name + ":" + text
}
