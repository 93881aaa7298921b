package schedule

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/teambition/rrule-go"
)

// The engine produces a rule's occurrences as floating wall-clock times (local
// wall clock written as UTC) in ascending order, starting near any time
// without walking from DTSTART.
//
// Two strategies, both exact:
//
//   - rrule-go with DTSTART moved forward: the defaults that RFC 5545 takes
//     from DTSTART (BYMONTH, BYMONTHDAY, BYDAY, BYHOUR, BYMINUTE, BYSECOND)
//     are written out explicitly, then DTSTART is moved to the start of the
//     last period (FREQ x INTERVAL, same phase as the real DTSTART) that
//     begins at or before the search start. rrule-go iterates from there.
//   - "days x times" for SECONDLY, MINUTELY and HOURLY rules whose period
//     divides a day: the times of day are the same every day, so rrule-go only
//     enumerates the days that pass the date filters (FREQ=DAILY) and the
//     engine combines them with the times. This avoids rrule-go's
//     per-second and per-minute inner loops, which cost up to 86,400 steps
//     for every day a date filter rejects.
//
// The Gregorian calendar repeats exactly every 400 years (146,097 days, a
// whole number of weeks), so the whole problem is translated by a multiple of
// 400 years to make rrule-go's hard stop at year 9999 lie between 199 and 599
// years after the search start. That bounds the walk over periods that hold
// no occurrence: a rule whose next occurrence is further away than that is
// treated as having none. Easter does not repeat every 400 years, so BYEASTER
// rules (YEARLY only) have their own evaluation (easter.go).

const (
	secondsPerDay = 86400
	targetYear    = 9800 // search start is translated to a year in (targetYear-400, targetYear]
)

type engine struct {
	freq     rrule.Frequency
	interval int
	start    time.Time     // DTSTART wall clock
	orig     rrule.ROption // the rule as written, Dtstart = start
	explicit rrule.ROption // defaults written out, for a moved DTSTART
	wkst     int
	easter   *easterRule // BYEASTER rules are evaluated by easterRule

	// days x times strategy (byDays true)
	byDays  bool
	hours   []int // allowed hours, sorted
	minutes []int
	seconds []int
	unit    int   // seconds in one FREQ unit: 3600, 60 or 1
	units   int   // FREQ units in a day: 24, 1440 or 86400
	start0  int64 // DTSTART's FREQ unit index since 1970-01-01T00:00 (floating)
	filter  dayFilter
	gridIt  bool
	isHour  [24]bool
	isMin   [60]bool
	isSec   [60]bool
	fine    []int // fineOffsets, for counting COUNT's occurrences
	// countDays is set on DAILY rules: their days and times are set up as
	// a days x times rule of one unit a day, for counting COUNT (count.go)
	// only; iter still walks them with rrule-go.
	countDays bool
}

func allInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func toWeekdays(days []nthWeekday, numbered bool) []rrule.Weekday {
	var out []rrule.Weekday
	for _, d := range days {
		if numbered && d.N != 0 {
			out = append(out, weekdays[d.Day].Nth(d.N))
		} else {
			out = append(out, weekdays[d.Day])
		}
	}
	return out
}

// emptyRuleError says that the RRULE alone never produces an occurrence.
// The schedule is still valid when RDATEs give occurrences (RFC 5545
// section 3.8.5: the set is RRULE + RDATE - EXDATE).
type emptyRuleError struct{ msg string }

func (e *emptyRuleError) Error() string { return e.msg }

func emptyRule(format string, args ...any) error {
	return &emptyRuleError{fmt.Sprintf(format, args...)}
}

// newEngine builds the engine for a validated rule. It returns an error when
// the rule's times of day can never be reached (rrule-go would loop forever).
func newEngine(spec *ruleSpec, start time.Time) (*engine, error) {
	r := spec
	if spec.freq > rrule.DAILY && len(spec.bysetpos) > 0 {
		var err error
		if r, err = foldSubDailySetPos(spec, start); err != nil {
			return nil, err
		}
	}
	e := &engine{freq: r.freq, interval: r.interval, start: start, wkst: r.wkst}
	if len(r.byeaster) > 0 {
		e.easter = newEasterRule(r, start)
		if e.easter.empty() {
			return nil, emptyRule("the rule never produces an occurrence; no Easter-relative day (BYEASTER) passes its other BYxxx parts")
		}
		return e, nil
	}
	numbered := r.freq == rrule.MONTHLY || r.freq == rrule.YEARLY
	e.orig = rrule.ROption{
		Freq: r.freq, Dtstart: start, Interval: r.interval, Wkst: weekdays[r.wkst],
		Bysetpos: r.bysetpos, Bymonth: r.bymonth, Bymonthday: r.bymonthday,
		Byyearday: r.byyearday, Byweekno: r.byweekno, Byweekday: toWeekdays(r.byday, numbered),
		Byhour: r.byhour, Byminute: r.byminute, Bysecond: r.bysecond, Byeaster: r.byeaster,
	}
	// Write out the defaults exactly as rrule-go's buildRRule takes them
	// from DTSTART, so that DTSTART can move.
	x := e.orig
	if len(x.Byweekno) == 0 && len(x.Byyearday) == 0 && len(x.Bymonthday) == 0 && len(x.Byweekday) == 0 && len(x.Byeaster) == 0 {
		switch r.freq {
		case rrule.YEARLY:
			if len(x.Bymonth) == 0 {
				x.Bymonth = []int{int(start.Month())}
			}
			x.Bymonthday = []int{start.Day()}
		case rrule.MONTHLY:
			x.Bymonthday = []int{start.Day()}
		case rrule.WEEKLY:
			x.Byweekday = []rrule.Weekday{weekdays[weekdayIndex(start)]}
		}
	}
	if len(x.Byhour) == 0 && r.freq < rrule.HOURLY {
		x.Byhour = []int{start.Hour()}
	}
	if len(x.Byminute) == 0 && r.freq < rrule.MINUTELY {
		x.Byminute = []int{start.Minute()}
	}
	if len(x.Bysecond) == 0 && r.freq < rrule.SECONDLY {
		x.Bysecond = []int{start.Second()}
	}
	e.explicit = x

	if r.freq == rrule.DAILY {
		e.dailyDays(r, x)
	}
	if r.freq < rrule.HOURLY {
		return e, nil
	}
	// Sub-daily: which fields does rrule-go's inner loop test, and what
	// does one period hold?
	e.unit = map[rrule.Frequency]int{rrule.HOURLY: 3600, rrule.MINUTELY: 60, rrule.SECONDLY: 1}[r.freq]
	e.hours = orAll(r.byhour, 24)
	e.minutes, e.seconds = r.byminute, r.bysecond
	if len(e.minutes) == 0 {
		if r.freq == rrule.HOURLY {
			e.minutes = []int{start.Minute()}
		} else {
			e.minutes = allInts(60)
		}
	}
	if len(e.seconds) == 0 {
		if r.freq == rrule.SECONDLY {
			e.seconds = allInts(60)
		} else {
			e.seconds = []int{start.Second()}
		}
	}
	e.fine = e.fineOffsets()
	units := secondsPerDay / e.unit
	idx0 := e.index(start.Hour(), start.Minute(), start.Second())
	e.units = units
	e.start0 = floorDiv(start.Unix(), int64(e.unit))
	e.filter = newDayFilter(r)
	// The INTERVAL grid repeats every lcm(INTERVAL, units) units, so a day's
	// grid points follow from the day number alone (phaseOf); no rule walks
	// its periods one by one.
	e.byDays = true
	{
		for _, h := range e.hours {
			e.isHour[h] = true
		}
		for _, m := range e.minutes {
			e.isMin[m] = true
		}
		for _, s := range e.seconds {
			e.isSec[s] = true
		}
		// Enumerate the grid when it is sparser than the BYxxx product.
		e.gridIt = units/r.interval < len(e.hours)*len(e.minutes)*len(e.seconds)
	}
	if units%r.interval == 0 {
		if _, ok := e.firstTimeOfDay(0, e.phaseOf(0)); !ok {
			return nil, emptyRule("RRULE: no time of day matches; with FREQ=%s;INTERVAL=%d starting at %s, BYHOUR/BYMINUTE/BYSECOND select times the rule never reaches (pick values on the %s grid of DTSTART)",
				freqText[r.freq], r.interval, start.Format("15:04:05"), freqText[r.freq])
		}
		return e, nil
	}
	// Otherwise the grid moves from day to day: index i of a day is on it
	// on some day iff i - DTSTART's index is a multiple of
	// gcd(INTERVAL, units). No allowed index at all means no occurrence.
	g := gcd(r.interval, units)
	reach := false
	hs, ms, ss := e.hours, []int{0}, []int{0}
	if r.freq >= rrule.MINUTELY {
		ms = orAll(r.byminute, 60)
	}
	if r.freq == rrule.SECONDLY {
		ss = orAll(r.bysecond, 60)
	}
	for _, h := range hs {
		for _, m := range ms {
			for _, s := range ss {
				if (e.index(h, m, s)-idx0)%g == 0 {
					reach = true
				}
			}
		}
	}
	if !reach {
		return nil, emptyRule("RRULE: FREQ=%s;INTERVAL=%d starting at %s never reaches the BYHOUR/BYMINUTE/BYSECOND values given; change DTSTART or INTERVAL so the values lie on its grid",
			freqText[r.freq], r.interval, start.Format("15:04:05"))
	}
	return e, nil
}

// foldSubDailySetPos rewrites BYSETPOS on an HOURLY, MINUTELY or SECONDLY
// rule into BYMINUTE/BYSECOND. Each such period holds the same set of times
// (BYMINUTE x BYSECOND within the hour, BYSECOND within the minute, the one
// second of a SECONDLY period), so BYSETPOS always picks the same ones. Left to rrule-go, a position beyond the set would make
// it walk every period until year 9999.
func foldSubDailySetPos(spec *ruleSpec, start time.Time) (*ruleSpec, error) {
	r := *spec
	r.bysetpos = nil
	if r.freq == rrule.SECONDLY {
		// Each period holds at most its one second: only 1 and -1 pick it.
		if slices.Contains(spec.bysetpos, 1) || slices.Contains(spec.bysetpos, -1) {
			return &r, nil
		}
		return nil, emptyRule("RRULE: BYSETPOS picks nothing: each FREQ=SECONDLY period holds only 1 time; use BYSETPOS=1 or -1, or drop it")
	}
	minutes := []int{start.Minute()} // MINUTELY: the set is BYSECOND alone
	if r.freq == rrule.HOURLY && len(r.byminute) > 0 {
		minutes = r.byminute
	}
	seconds := r.bysecond
	if len(seconds) == 0 {
		seconds = []int{start.Second()}
	}
	type ms struct{ m, s int }
	var set []ms // sorted: minutes and seconds are sorted lists
	for _, m := range minutes {
		for _, s := range seconds {
			set = append(set, ms{m, s})
		}
	}
	var picked []ms
	for _, p := range spec.bysetpos {
		i := p - 1
		if p < 0 {
			i = len(set) + p
		}
		if i >= 0 && i < len(set) && !slices.Contains(picked, set[i]) {
			picked = append(picked, set[i])
		}
	}
	if len(picked) == 0 {
		return nil, emptyRule("RRULE: BYSETPOS picks nothing: each FREQ=%s period holds only %d time(s); use positions from 1 to %d or -%d to -1",
			freqText[r.freq], len(set), len(set), len(set))
	}
	var pm, ps []int
	for _, x := range picked {
		if !slices.Contains(pm, x.m) {
			pm = append(pm, x.m)
		}
		if !slices.Contains(ps, x.s) {
			ps = append(ps, x.s)
		}
	}
	if len(pm)*len(ps) != len(picked) {
		return nil, errors.New("RRULE: BYSETPOS on FREQ=HOURLY must pick whole BYMINUTE x BYSECOND combinations; list the wanted minutes and seconds with BYMINUTE and BYSECOND instead")
	}
	slices.Sort(pm)
	slices.Sort(ps)
	if r.freq == rrule.HOURLY {
		r.byminute = pm
	}
	r.bysecond = ps
	return &r, nil
}

func orAll(xs []int, n int) []int {
	if len(xs) == 0 {
		return allInts(n)
	}
	return xs
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// index is the number of whole FREQ units since midnight.
func (e *engine) index(h, m, s int) int {
	return (h*3600 + m*60 + s) / e.unit
}

// phaseOf returns the grid index of the first grid point of a day (day 0
// is 1970-01-01), or a value of at least e.units when the day holds none.
// Index i of that day is on the grid iff i = phase + k*INTERVAL.
func (e *engine) phaseOf(day int64) int {
	d := (e.start0 - day*int64(e.units)) % int64(e.interval)
	if d < 0 {
		d += int64(e.interval)
	}
	return int(d)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// firstTimeOfDay returns the first occurrence time of day (seconds since
// midnight) at or after tod, for the days x times strategy.
func (e *engine) firstTimeOfDay(tod, phase int) (int, bool) {
	if phase >= e.units {
		return 0, false
	}
	if e.gridIt {
		step := e.interval * e.unit
		// grid points: phase*unit + k*step, each then combined with the
		// finer fields that the period holds.
		base := phase * e.unit
		if tod > base+e.unit {
			// Skip the grid points that end before tod.
			base += (tod - base - e.unit) / step * step
		}
		for ; base < secondsPerDay; base += step {
			h, m, s := base/3600, base/60%60, base%60
			switch e.unit {
			case 1:
				if base >= tod && e.isHour[h] && e.isMin[m] && e.isSec[s] {
					return base, true
				}
			case 60:
				if !e.isHour[h] || !e.isMin[m] {
					continue
				}
				for _, sec := range e.seconds {
					if t := base + sec; t >= tod {
						return t, true
					}
				}
			case 3600:
				if !e.isHour[h] {
					continue
				}
				for _, mi := range e.minutes {
					for _, sec := range e.seconds {
						if t := base + mi*60 + sec; t >= tod {
							return t, true
						}
					}
				}
			}
		}
		return 0, false
	}
	th := tod / 3600
	for _, h := range e.hours {
		if h < th {
			continue
		}
		for _, m := range e.minutes {
			if h == th && m < tod/60%60 {
				continue
			}
			for _, s := range e.seconds {
				if t := h*3600 + m*60 + s; t >= tod && (e.index(h, m, s)-phase)%e.interval == 0 {
					return t, true
				}
			}
		}
	}
	return 0, false
}

// align returns the DTSTART to iterate from: the start of the last period at
// or before from, or the real DTSTART (moved == false).
func (e *engine) align(from time.Time) (d time.Time, moved bool) {
	if !from.After(e.start) {
		return e.start, false
	}
	s := e.start
	var base time.Time
	var step int64
	switch e.freq {
	case rrule.YEARLY:
		k := (from.Year() - s.Year()) / e.interval
		if k <= 0 {
			return s, false
		}
		return time.Date(s.Year()+k*e.interval, 1, 1, 0, 0, 0, 0, time.UTC), true
	case rrule.MONTHLY:
		months := (from.Year()-s.Year())*12 + int(from.Month()) - int(s.Month())
		k := months / e.interval
		if k <= 0 {
			return s, false
		}
		return time.Date(s.Year(), s.Month()+time.Month(k*e.interval), 1, 0, 0, 0, 0, time.UTC), true
	case rrule.WEEKLY:
		midnight := s.Truncate(24 * time.Hour)
		back := (weekdayIndex(s) - e.wkst + 7) % 7
		base, step = midnight.AddDate(0, 0, -back), int64(7*secondsPerDay*e.interval)
	case rrule.DAILY:
		base, step = s.Truncate(24*time.Hour), int64(secondsPerDay*e.interval)
	case rrule.HOURLY:
		base, step = s.Truncate(time.Hour), int64(3600*e.interval)
	case rrule.MINUTELY:
		base, step = s.Truncate(time.Minute), int64(60*e.interval)
	default:
		base, step = s, int64(e.interval)
	}
	k := (from.Unix() - base.Unix()) / step
	if k <= 0 {
		return s, false
	}
	return time.Unix(base.Unix()+k*step, 0).UTC(), true
}

// shiftYears returns a multiple of 400 that moves d to a year in
// (targetYear-400, targetYear].
func (e *engine) shiftYears(d time.Time) int {
	diff := targetYear - d.Year()
	m := diff / 400
	if diff < 0 && diff%400 != 0 {
		m--
	}
	return 400 * m
}

// maxSpanDays bounds the days one search of a sub-daily rule looks at: its
// cost is at most this many days (each a few nanoseconds to a microsecond).
// A rule whose next occurrence lies further away is reported as too far
// (occIter.tooFar), not as ended.
const maxSpanDays = 36525 // 100 years

// occIter yields wall-clock occurrences in ascending order.
type occIter struct {
	next func() (time.Time, bool)
	// tooFar is set when next gave up after maxSpanDays days without an
	// occurrence, rather than at the rule's end.
	tooFar bool
}

func none() (time.Time, bool) { return time.Time{}, false }

// iter returns the wall-clock occurrences at or after about from (it may
// yield a few earlier ones), in ascending order, ending at or before bound
// when bound is not zero.
func (e *engine) iter(from, bound time.Time) *occIter {
	if e.easter != nil {
		return e.easter.iter(from, bound)
	}
	if e.byDays {
		return e.iterDays(from, bound)
	}
	d, moved := e.align(from)
	opt := e.orig
	if moved {
		opt = e.explicit
	}
	shift := e.shiftYears(d)
	opt.Dtstart = d.AddDate(shift, 0, 0)
	if !bound.IsZero() {
		opt.Until = bound.AddDate(shift, 0, 0)
	}
	r, err := rrule.NewRRule(opt)
	if err != nil {
		return &occIter{next: none} // validated at parse time; not expected
	}
	next := r.Iterator()
	return &occIter{next: func() (time.Time, bool) {
		t, ok := next()
		if !ok {
			return time.Time{}, false
		}
		return t.AddDate(-shift, 0, 0), true
	}}
}

// iterDays yields a sub-daily rule's occurrences day by day: the days that
// pass the date filters (dayFilter), each combined with its grid points
// (phaseOf) and the times of day.
func (e *engine) iterDays(from, bound time.Time) *occIter {
	it := &occIter{next: none}
	if from.Before(e.start) {
		from = e.start
	}
	day := from.Truncate(24 * time.Hour)
	lastDay := day.AddDate(0, 0, maxSpanDays)
	if b := bound.Truncate(24 * time.Hour); !bound.IsZero() && b.Before(lastDay) {
		lastDay = b
	}
	// Days are numbered from 1970-01-01. With at most one grid point a day
	// (INTERVAL of a day or more), step from grid day to grid day;
	// otherwise from day to day. Either way skip months BYMONTH excludes.
	d := floorDiv(day.Unix(), secondsPerDay) - 1
	last := floorDiv(lastDay.Unix(), secondsPerDay)
	sparse := e.interval >= e.units
	nextDay := func() (time.Time, bool) {
		d++
		for d <= last {
			if sparse {
				if p := e.phaseOf(d); p >= e.units {
					// The next grid point is p units after this day's start.
					d += int64(p / e.units)
					continue
				}
			}
			t := time.Unix(d*secondsPerDay, 0).UTC()
			if skip := e.filter.skip(t); skip > 0 {
				d += int64(skip)
				continue
			}
			return t, true
		}
		return time.Time{}, false
	}
	var cur time.Time // current day, zero before the first
	tod := 0          // next time of day to look at
	phase := 0        // cur's first grid index
	it.next = func() (time.Time, bool) {
		for {
			if cur.IsZero() || tod >= secondsPerDay {
				d, ok := nextDay()
				if !ok {
					// Stopped by lastDay rather than by the bound: too far.
					it.tooFar = bound.IsZero() || lastDay.Before(bound.Truncate(24*time.Hour))
					return time.Time{}, false
				}
				cur, tod = d, 0
				phase = e.phaseOf(floorDiv(cur.Unix(), secondsPerDay))
				if cur.Equal(day) {
					tod = int(from.Sub(day) / time.Second)
				}
			}
			t, ok := e.firstTimeOfDay(tod, phase)
			if !ok {
				tod = secondsPerDay
				continue
			}
			tod = t + 1
			w := cur.Add(time.Duration(t) * time.Second)
			if !bound.IsZero() && w.After(bound) {
				return time.Time{}, false
			}
			return w, true
		}
	}
	return it
}

// weekdayIndex converts Go's Sunday=0 to Monday=0.
func weekdayIndex(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

// dayFilter holds the date filters a sub-daily rule can have: BYMONTH,
// BYMONTHDAY, BYYEARDAY and BYDAY without numbers (RFC 5545 allows no
// others below FREQ=WEEKLY).
type dayFilter struct {
	month             [13]bool
	anyMonth          bool
	monthDay, negMDay [32]bool // negMDay[1] is the last day of the month
	anyMonthDay       bool
	yearDay, negYDay  [367]bool
	anyYearDay        bool
	weekday           [7]bool // Monday = 0
	anyWeekday        bool
}

func newDayFilter(r *ruleSpec) dayFilter {
	var f dayFilter
	for _, m := range r.bymonth {
		f.month[m], f.anyMonth = true, true
	}
	for _, d := range r.bymonthday {
		if d > 0 {
			f.monthDay[d] = true
		} else {
			f.negMDay[-d] = true
		}
		f.anyMonthDay = true
	}
	for _, d := range r.byyearday {
		if d > 0 {
			f.yearDay[d] = true
		} else {
			f.negYDay[-d] = true
		}
		f.anyYearDay = true
	}
	for _, d := range r.byday {
		f.weekday[d.Day], f.anyWeekday = true, true
	}
	return f
}

// anyDayPasses reports whether some day passes a sub-daily rule's date
// filters. They repeat every 400 years (146,097 days), so one such span
// decides; it costs at most a few milliseconds and runs only when a rule's
// first occurrence was not found.
func (e *engine) anyDayPasses() bool {
	if !e.byDays {
		return true
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d < 146097; {
		skip := e.filter.skip(t0.AddDate(0, 0, d))
		if skip == 0 {
			return true
		}
		d += skip
	}
	return false
}

// skip returns 0 when day t (midnight, UTC) passes the filters, else how
// many days may be skipped: to the next month when BYMONTH excludes t's.
func (f *dayFilter) skip(t time.Time) int {
	y, m, d := t.Date()
	if f.anyMonth && !f.month[m] {
		return daysIn(y, m) - d + 1
	}
	if f.anyWeekday && !f.weekday[weekdayIndex(t)] {
		return 1
	}
	if f.anyMonthDay && !f.monthDay[d] && !f.negMDay[daysIn(y, m)-d+1] {
		return 1
	}
	if f.anyYearDay {
		yd := t.YearDay()
		yearLen := 365
		if daysIn(y, time.February) == 29 {
			yearLen = 366
		}
		if !f.yearDay[yd] && !f.negYDay[yearLen-yd+1] {
			return 1
		}
	}
	return 0
}

// daysIn returns the number of days of month m in year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
