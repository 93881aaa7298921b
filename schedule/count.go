package schedule

import (
	"fmt"
	"slices"
	"time"

	"github.com/teambition/rrule-go"
)

// COUNT's last occurrence is found at parse time with bounded work, never by
// walking all COUNT occurrences of a dense rule nor the centuries of a sparse
// one:
//
//   - sub-daily rules of the "days x times" strategy, and DAILY rules
//     (dailyDays), count per day: a day's occurrences follow from its grid
//     phase alone (dayCount, memoized per phase), and days are walked with
//     integer calendar arithmetic;
//   - other rules enumerate their occurrences, at most maxCountSteps of
//     them.
//
// Either walk covers at most one 400-year Gregorian cycle from DTSTART. When
// COUNT runs longer and the rule repeats with the calendar (its period
// divides the cycle), the cycle's count is multiplied out; otherwise the rule
// is refused (a countCostlyError), as it is when the enumeration would exceed
// maxCountSteps.

// cycleDays is the Gregorian calendar's period: 400 years, a whole number of
// weeks.
const cycleDays = 146097

// maxCountSteps bounds the occurrences enumerated to find COUNT's end of a
// rule that is not counted per day (about 0.1 µs each).
const maxCountSteps = 10000

// countWork is the work one countEnd did, for the cost tests: days looked
// at, grid points looked at while counting a day, occurrences enumerated.
type countWork struct{ days, points, steps int }

// countCostlyError refuses a COUNT that cannot be evaluated within the bounds.
type countCostlyError struct{ msg string }

func (e *countCostlyError) Error() string { return e.msg }

// countEnd returns the wall clock of the rule's count-th occurrence from
// DTSTART (RFC 5545: EXDATE does not change what COUNT counts), or the zero
// time when it lies after year maxYear (the engine computes nothing that far
// anyway).
func (e *engine) countEnd(count int, w *countWork) (time.Time, error) {
	limit := e.start.AddDate(400, 0, 0) // cycleDays later, same wall clock
	var nth func(k int, limit time.Time) (time.Time, bool, int, error)
	if e.byDays || e.countDays {
		nth = func(k int, limit time.Time) (time.Time, bool, int, error) {
			t, ok, n := e.nthByDays(k, limit, w)
			return t, ok, n, nil
		}
	} else {
		var seen []time.Time // the first cycle's occurrences, for the second look
		nth = func(k int, limit time.Time) (time.Time, bool, int, error) {
			if seen != nil {
				return seen[k-1], true, 0, nil
			}
			var err error
			seen, err = e.enumerate(k, limit, w)
			if err != nil {
				return time.Time{}, false, 0, err
			}
			if len(seen) >= k {
				return seen[k-1], true, len(seen), nil
			}
			return time.Time{}, false, len(seen), nil
		}
	}
	t, found, n, err := nth(count, limit)
	switch {
	case err != nil:
		return time.Time{}, err
	case found:
		return t, nil
	case limit.Year() > maxYear || n == 0:
		return time.Time{}, nil
	case !e.calendarPeriodic():
		return time.Time{}, &countCostlyError{fmt.Sprintf(
			"COUNT=%d: this rule's last occurrence lies more than 400 years after DTSTART, and the rule does not repeat with the calendar's 400-year cycle (BYEASTER, or an INTERVAL that does not divide the cycle), so this COUNT cannot be evaluated quickly; use UNTIL instead of COUNT, or a smaller COUNT", count)}
	}
	c := count - 1
	cycles, r := c/n, c%n
	if t, found, _, err = nth(r+1, limit); err != nil || !found {
		return time.Time{}, err // not expected: the cycle holds n > r occurrences
	}
	if t = t.AddDate(400*cycles, 0, 0); t.Year() > maxYear {
		return time.Time{}, nil
	}
	return t, nil
}

// calendarPeriodic reports whether the rule's occurrences repeat every 400
// years: its FREQ x INTERVAL grid does, and so do its date filters (Easter
// does not).
func (e *engine) calendarPeriodic() bool {
	if e.easter != nil {
		return false
	}
	if e.byDays || e.countDays {
		p := e.interval / gcd(e.interval, e.units) // days after which the phases repeat
		return cycleDays%p == 0
	}
	switch e.freq {
	case rrule.YEARLY:
		return 400%e.interval == 0
	case rrule.MONTHLY:
		return 4800%e.interval == 0
	case rrule.WEEKLY:
		return (cycleDays/7)%e.interval == 0
	default: // DAILY
		return cycleDays%e.interval == 0
	}
}

// enumerate returns the rule's first k occurrences before limit (fewer when
// there are not that many), or a countCostlyError when that takes more than
// maxCountSteps. It restarts the engine's iterator where a search window
// ends (see shiftYears).
func (e *engine) enumerate(k int, limit time.Time, w *countWork) ([]time.Time, error) {
	var out []time.Time
	from := e.start
	bound := limit.Add(-time.Second)
	for from.Before(limit) {
		it := e.iter(from, bound)
		got := false
		for {
			t, ok := it.next()
			if !ok {
				break
			}
			if t.Before(from) {
				continue
			}
			if w.steps++; w.steps > maxCountSteps {
				return nil, &countCostlyError{fmt.Sprintf(
					"COUNT=%d: evaluating it means walking more than %d occurrences of this rule, which is too slow to do for every row; use UNTIL instead of COUNT, or a COUNT of at most %d",
					k, maxCountSteps, maxCountSteps)}
			}
			out = append(out, t)
			if len(out) == k {
				return out, nil
			}
			from, got = t.Add(time.Second), true
		}
		if !got {
			// The window held nothing after from; it spans at least 199
			// years (see targetYear).
			from = from.AddDate(199, 0, 0)
		}
	}
	return out, nil
}

// nthByDays finds the k-th occurrence from DTSTART of a days x times rule
// when it lies before limit; otherwise it returns the number of occurrences
// before limit.
func (e *engine) nthByDays(k int, limit time.Time, w *countWork) (time.Time, bool, int) {
	day0 := floorDiv(e.start.Unix(), secondsPerDay)
	last := floorDiv(limit.Unix(), secondsPerDay) // exclusive; limit is DTSTART's time of day
	startTod := int(e.start.Unix() - day0*secondsPerDay)
	limitTod := int(limit.Unix() - last*secondsPerDay)
	// A full day's count depends on its phase alone: memoized when the
	// phases are few. With more (INTERVAL over 4,096 units) a day holds at
	// most 21 grid points and is counted afresh.
	var memo []int32
	if e.interval <= 1<<12 {
		memo = make([]int32, e.interval)
		for i := range memo {
			memo[i] = -1
		}
	}
	full := func(phase int) int {
		if memo == nil {
			c, _ := e.dayCount(phase, 0, secondsPerDay, 0, w)
			return c
		}
		if memo[phase] < 0 {
			c, _ := e.dayCount(phase, 0, secondsPerDay, 0, w)
			memo[phase] = int32(c)
		}
		return int(memo[phase])
	}
	n := 0
	// The phase of day d+1 follows from day d's without a division.
	step := e.units % e.interval
	pd, phase := day0-2, 0
	for d := day0; d <= last; {
		w.days++
		if d == pd+1 {
			if phase -= step; phase < 0 {
				phase += e.interval
			}
		} else {
			phase = e.phaseOf(d)
		}
		pd = d
		if phase >= e.units {
			d += int64(phase / e.units) // the day of the next grid point
			continue
		}
		if skip := e.filter.skipDay(d); skip > 0 {
			d += int64(skip)
			continue
		}
		minTod, maxTod := 0, secondsPerDay
		if d == day0 {
			minTod = startTod
		}
		if d == last {
			maxTod = limitTod
		}
		var c int
		if minTod == 0 && maxTod == secondsPerDay {
			c = full(phase)
		} else {
			c, _ = e.dayCount(phase, minTod, maxTod, 0, w)
		}
		if n+c >= k {
			_, tod := e.dayCount(phase, minTod, maxTod, k-n, w)
			return time.Unix(d*secondsPerDay+int64(tod), 0).UTC(), true, k
		}
		n += c
		d++
	}
	return time.Time{}, false, n
}

// dayCount counts a day's occurrences with a time of day in [minTod,
// maxTod), given the day's grid phase (see phaseOf); when k > 0 it stops at
// the k-th and returns its time of day too.
func (e *engine) dayCount(phase, minTod, maxTod, k int, w *countWork) (n, tod int) {
	if e.unit < 3600 && e.units/e.interval > 1440 {
		return e.blockCount(phase, minTod, maxTod, k, w)
	}
	fine := e.fine
	for i := phase; i < e.units; i += e.interval {
		w.points++
		base := i * e.unit
		if base >= maxTod {
			break
		}
		h, m, s := base/3600, base/60%60, base%60
		if e.unit < secondsPerDay && !e.isHour[h] || (e.unit <= 60 && !e.isMin[m]) || (e.unit == 1 && !e.isSec[s]) {
			continue
		}
		if base >= minTod && base+e.unit <= maxTod && (k == 0 || n+len(fine) < k) {
			n += len(fine)
			continue
		}
		for _, f := range fine {
			if t := base + f; t >= minTod && t < maxTod {
				if n++; n == k {
					return n, t
				}
			}
		}
	}
	return n, 0
}

// skipDay is dayFilter.skip for day d (days since 1970-01-01), in integer
// arithmetic: 0 when the day passes, else how many days may be skipped.
func (f *dayFilter) skipDay(d int64) int {
	if !f.anyMonth && !f.anyWeekday && !f.anyMonthDay && !f.anyYearDay {
		return 0
	}
	y, m, dd := civil(d)
	ml := monthDays(y, m)
	if f.anyMonth && !f.month[m] {
		return ml - dd + 1
	}
	if f.anyWeekday && !f.weekday[int((d%7+7+3)%7)] { // 1970-01-01 was a Thursday
		return 1
	}
	if f.anyMonthDay && !f.monthDay[dd] && !f.negMDay[ml-dd+1] {
		return 1
	}
	if f.anyYearDay {
		leap := 0
		if isLeap(y) {
			leap = 1
		}
		yd := daysBefore[m-1] + dd
		if m > 2 {
			yd += leap
		}
		if !f.yearDay[yd] && !f.negYDay[365+leap-yd+1] {
			return 1
		}
	}
	return 0
}

// daysBefore[m-1] is the number of days before month m in a common year.
var daysBefore = [12]int{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func monthDays(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (H. Hinnant's days_from_civil, inverted).
func civil(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, cycleDays)
	doe := z - era*cycleDays
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// blockCount is dayCount for a dense grid of a MINUTELY or SECONDLY rule
// (more than 1,440 grid points a day): it counts by blocks of 60 units (an
// hour's minutes, a minute's seconds) that pass BYHOUR (and BYMINUTE), each
// in one step from the residues of the block's allowed values, so a day
// costs at most 1,440 steps.
func (e *engine) blockCount(phase, minTod, maxTod, k int, w *countWork) (n, tod int) {
	inner, fine, minutes := e.seconds, []int{0}, e.minutes // SECONDLY: blocks are minutes
	if e.unit == 60 {
		inner, fine, minutes = e.minutes, e.seconds, []int{0} // MINUTELY: blocks are hours
	}
	// hist[r]: allowed inner values v with v = r (mod INTERVAL).
	var hist [60]int
	for _, v := range inner {
		if e.interval <= 60 {
			hist[v%e.interval]++
		} else {
			hist[v]++
		}
	}
	span := 60 * e.unit // seconds in a block
	for _, h := range e.hours {
		for _, m := range minutes {
			w.points++
			b := e.index(h, m, 0) // the block's first index
			start := b * e.unit
			if start+span <= minTod {
				continue
			}
			if start >= maxTod {
				return n, 0
			}
			r := (phase - b) % e.interval
			if r < 0 {
				r += e.interval
			}
			c := 0
			if e.interval <= 60 || r < 60 {
				c = hist[r] * len(fine)
			}
			if start >= minTod && start+span <= maxTod && (k == 0 || n+c < k) {
				n += c
				continue
			}
			for _, v := range inner {
				if (v-r)%e.interval != 0 {
					continue
				}
				for _, f := range fine {
					if t := start + v*e.unit + f; t >= minTod && t < maxTod {
						if n++; n == k {
							return n, t
						}
					}
				}
			}
		}
	}
	return n, 0
}

// fineOffsets returns the times within one grid unit of a days x times
// rule, in seconds, sorted: BYMINUTE x BYSECOND within an hour, BYSECOND
// within a minute, 0 within a second.
func (e *engine) fineOffsets() []int {
	switch e.unit {
	case 3600:
		var fine []int
		for _, m := range e.minutes {
			for _, s := range e.seconds {
				fine = append(fine, m*60+s)
			}
		}
		return fine
	case 60:
		return e.seconds
	}
	return []int{0}
}

// dailyDays sets a DAILY rule up for counting per day: one grid unit a day
// (unit, units, start0 as in the days x times strategy, so that phaseOf
// tells the INTERVAL's days), its date filters, and its times of day (x
// holds them with DTSTART's defaults written out), picked by BYSETPOS.
func (e *engine) dailyDays(r *ruleSpec, x rrule.ROption) {
	var times []int
	for _, h := range x.Byhour {
		for _, m := range x.Byminute {
			for _, s := range x.Bysecond {
				times = append(times, h*3600+m*60+s)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	if len(r.bysetpos) > 0 {
		var picked []int
		for _, p := range r.bysetpos {
			i := p - 1
			if p < 0 {
				i = len(times) + p
			}
			if i >= 0 && i < len(times) {
				picked = append(picked, times[i])
			}
		}
		slices.Sort(picked)
		times = slices.Compact(picked)
	}
	e.countDays = true
	e.unit, e.units = secondsPerDay, 1
	e.start0 = floorDiv(e.start.Unix(), secondsPerDay)
	e.filter = newDayFilter(r)
	e.fine = times
}
