package schedule

import (
	"sync"
	"time"
	_ "time/tzdata" // containers without /usr/share/zoneinfo still know every zone
)

// Wall-clock arithmetic. Occurrences are computed in "floating" time: a local
// wall clock written as if it were UTC, so that every day has 24 hours and
// FREQ up to WEEKLY has a fixed period. This file maps between the two.

var locations sync.Map // zone name -> *time.Location

// loadLocation is time.LoadLocation with a cache: loading costs about 7 µs.
func loadLocation(name string) (*time.Location, error) {
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, errUnknownZone
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	locations.Store(name, l)
	return l, nil
}

type zoneError struct{}

func (zoneError) Error() string { return "unknown time zone" }

var errUnknownZone error = zoneError{}

// wallOf returns t's wall clock in loc, expressed in UTC, truncated to seconds.
func wallOf(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	return time.Unix(t.Unix()+int64(off), 0).UTC()
}

// wallToInstant maps a wall clock (expressed in UTC) in loc to an instant as
// RFC 5545 section 3.3.5 says: a time that occurs twice (fall back) means its
// first occurrence; a time that does not exist (spring forward) is read with
// the UTC offset from before the gap, so 02:30 becomes 03:30 when clocks jump
// from 02:00 to 03:00. pushed reports the second case: the instant is later
// than the wall clock of any valid local time before it.
func wallToInstant(w time.Time, loc *time.Location) (inst time.Time, pushed bool) {
	if loc == time.UTC {
		return w, false
	}
	u := w.Unix()
	y, m, d := w.Date()
	hh, mm, ss := w.Clock()
	t := time.Date(y, m, d, hh, mm, ss, 0, loc)
	_, off := t.Zone()
	start, end := t.ZoneBounds()
	if t.Unix()+int64(off) == u {
		// Valid. If the zone began with a fall back, the same wall clock may
		// also have existed in the previous zone, earlier: prefer that one.
		if !start.IsZero() {
			_, prevOff := start.Add(-time.Second).Zone()
			if prevOff > off {
				x := u - int64(prevOff)
				if x < start.Unix() {
					return time.Unix(x, 0).In(loc), false
				}
			}
		}
		return t, false
	}
	// In a gap: Go picked an instant on one side of it. Find the transition
	// whose gap holds w and read w with the offset before it.
	for _, tr := range []time.Time{start, end} {
		if tr.IsZero() {
			continue
		}
		_, before := tr.Add(-time.Second).Zone()
		_, after := tr.Zone()
		if after > before && tr.Unix()+int64(before) <= u && u < tr.Unix()+int64(after) {
			return time.Unix(u-int64(before), 0).In(loc), true
		}
	}
	return t, true // unreachable with real zone data; keep Go's choice
}

// gapMargin returns how far (in wall-clock time) an occurrence before
// after's wall clock can still map to an instant after `after`: the size of
// spring-forward gaps that began in the two days before `after`.
func gapMargin(after time.Time, loc *time.Location) time.Duration {
	if loc == time.UTC {
		return 0
	}
	t := after.In(loc)
	_, off := t.Zone()
	minOff := off
	limit := after.Add(-48 * time.Hour)
	for range 4 {
		start, _ := t.ZoneBounds()
		if start.IsZero() || start.Before(limit) {
			break
		}
		t = start.Add(-time.Second)
		_, o := t.Zone()
		minOff = min(minOff, o)
	}
	return time.Duration(off-minOff) * time.Second
}
