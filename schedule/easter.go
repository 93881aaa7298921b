package schedule

import (
	"slices"
	"time"
)

// BYEASTER (a python-dateutil extension, not RFC 5545) is evaluated here
// rather than by rrule-go: Easter dates do not repeat every 400 years, so the
// engine's translation trick does not apply, and rrule-go would walk every
// year up to 9999 (about 50 µs each) looking for a rule that never matches.
// Parse computes once which years of 1900..9999 hold an occurrence; Next
// then jumps straight to the next such year.
//
// BYEASTER may be combined with BYMONTH, BYMONTHDAY, BYDAY without numbers
// and the times of day; combinations with BYWEEKNO, BYYEARDAY, numbered
// BYDAY or BYSETPOS are refused (validate).

// easterRule is a FREQ=YEARLY rule with BYEASTER.
type easterRule struct {
	start    time.Time // DTSTART wall clock
	interval int
	offsets  []int // days from Easter Sunday
	filter   dayFilter
	tods     []int    // seconds of day, sorted
	years    []uint64 // bit y-minYear: year y holds an occurrence date
}

func newEasterRule(r *ruleSpec, start time.Time) *easterRule {
	e := &easterRule{start: start, interval: r.interval, offsets: r.byeaster, filter: newDayFilter(r)}
	hours, minutes, seconds := r.byhour, r.byminute, r.bysecond
	if len(hours) == 0 {
		hours = []int{start.Hour()}
	}
	if len(minutes) == 0 {
		minutes = []int{start.Minute()}
	}
	if len(seconds) == 0 {
		seconds = []int{start.Second()}
	}
	for _, h := range hours {
		for _, m := range minutes {
			for _, s := range seconds {
				e.tods = append(e.tods, h*3600+m*60+s)
			}
		}
	}
	slices.Sort(e.tods)
	e.years = make([]uint64, (maxYear-minYear)/64+1)
	for y := minYear; y <= maxYear; y++ {
		if len(e.dates(y)) > 0 {
			e.years[(y-minYear)/64] |= 1 << ((y - minYear) % 64)
		}
	}
	return e
}

// empty reports whether no year holds an occurrence on the INTERVAL grid.
func (e *easterRule) empty() bool {
	it := e.iter(e.start, time.Time{})
	_, ok := it.next()
	return !ok
}

func (e *easterRule) hasYear(y int) bool {
	return y >= minYear && y <= maxYear && e.years[(y-minYear)/64]&(1<<((y-minYear)%64)) != 0
}

// dates returns the occurrence dates (midnight, UTC) of year y, sorted.
func (e *easterRule) dates(y int) []time.Time {
	var out []time.Time
	base := easterSunday(y)
	for _, k := range e.offsets {
		d := base.AddDate(0, 0, k)
		if d.Year() == y && e.filter.skip(d) == 0 && !slices.ContainsFunc(out, d.Equal) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// iter yields the occurrences from the year of from on (and not before
// DTSTART), ending after bound when bound is not zero.
func (e *easterRule) iter(from, bound time.Time) *occIter {
	y := max(from.Year(), e.start.Year())
	if k := (y - e.start.Year()) % e.interval; k != 0 {
		y += e.interval - k
	}
	var pending []time.Time
	it := &occIter{}
	it.next = func() (time.Time, bool) {
		for len(pending) == 0 {
			for y <= maxYear && !e.hasYear(y) {
				y += e.interval
			}
			if y > maxYear {
				return time.Time{}, false
			}
			for _, d := range e.dates(y) {
				for _, tod := range e.tods {
					if w := d.Add(time.Duration(tod) * time.Second); !w.Before(e.start) {
						pending = append(pending, w)
					}
				}
			}
			y += e.interval
		}
		w := pending[0]
		pending = pending[1:]
		if !bound.IsZero() && w.After(bound) {
			pending = nil
			y = maxYear + 1
			return time.Time{}, false
		}
		return w, true
	}
	return it
}

// easterSunday returns Western Easter Sunday of year y (midnight, UTC),
// by the same algorithm as python-dateutil's easter (EASTER_WESTERN).
func easterSunday(y int) time.Time {
	g := y % 19
	c := y / 100
	h := (c - c/4 - (8*c+13)/25 + 19*g + 15) % 30
	i := h - (h/28)*(1-(h/28)*(29/(h+1))*((21-g)/11))
	j := (y + y/4 + i + 2 - c + c/4) % 7
	p := i - j
	d := 1 + (p+27+(p+6)/40)%31
	m := 3 + (p+26)/30
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
}
