package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// rulePart is one RRULE part: how to read its value, how to write it back in
// the normalized text, and the values it takes (used in error messages). The
// parser, the normalized text and the list of known parts in the "unknown
// part" message all come from ruleParts, so they cannot drift apart.
type rulePart struct {
	name  string
	help  string                                  // the values it takes, for error messages
	parse func(r *ruleSpec, v string) error       // v is upper case and trimmed
	text  func(r *ruleSpec, floating bool) string // "" when the part is absent
}

// ruleParts lists every RRULE part the parser accepts, in the order of the
// normalized text.
var ruleParts = []rulePart{
	{"FREQ", "SECONDLY, MINUTELY, HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY",
		func(r *ruleSpec, v string) error {
			f, ok := freqNames[v]
			if !ok {
				return fmt.Errorf("RRULE: unknown FREQ %q (use SECONDLY, MINUTELY, HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)", truncate(v, 20))
			}
			r.freq = f
			return nil
		},
		func(r *ruleSpec, _ bool) string { return freqText[r.freq] }},
	{"INTERVAL", "a whole number of at least 1",
		func(r *ruleSpec, v string) (err error) { r.interval, err = parsePositive("INTERVAL", v); return err },
		func(r *ruleSpec, _ bool) string { return positiveText(r.interval, 1) }},
	{"COUNT", fmt.Sprintf("a whole number from 1 to %d", maxCount),
		func(r *ruleSpec, v string) (err error) {
			if r.count, err = parsePositive("COUNT", v); err == nil && r.count > maxCount {
				err = fmt.Errorf("RRULE: COUNT=%d is too large; use at most %d, or UNTIL", r.count, maxCount)
			}
			return err
		},
		func(r *ruleSpec, _ bool) string { return positiveText(r.count, 0) }},
	{"UNTIL", "a date-time such as 20241231T235959Z, or a date such as 20241231",
		func(r *ruleSpec, v string) error { r.untilText = v; return nil },
		func(r *ruleSpec, floating bool) string {
			switch {
			case r.until.IsZero():
				return ""
			case floating:
				return r.until.UTC().Format("20060102T150405")
			}
			return r.until.UTC().Format("20060102T150405Z")
		}},
	{"WKST", "MO, TU, WE, TH, FR, SA or SU",
		func(r *ruleSpec, v string) error {
			i := slices.Index(weekdayNames, v)
			if i < 0 {
				return fmt.Errorf("RRULE: WKST=%q is not a weekday (use MO, TU, WE, TH, FR, SA or SU)", truncate(v, 10))
			}
			r.wkst, r.wkstSet = i, true
			return nil
		},
		func(r *ruleSpec, _ bool) string {
			if !r.wkstSet {
				return ""
			}
			return weekdayNames[r.wkst]
		}},
	intListPart("BYMONTH", 1, 12, false, "1 (January) to 12 (December)", func(r *ruleSpec) *[]int { return &r.bymonth }),
	intListPart("BYWEEKNO", 1, 53, true, "1 to 53 or -53 to -1", func(r *ruleSpec) *[]int { return &r.byweekno }),
	intListPart("BYYEARDAY", 1, 366, true, "1 to 366 or -366 to -1", func(r *ruleSpec) *[]int { return &r.byyearday }),
	intListPart("BYMONTHDAY", 1, 31, true, "1 to 31 or -31 to -1 (-1 is the last day of the month)", func(r *ruleSpec) *[]int { return &r.bymonthday }),
	{"BYDAY", "MO, TU, WE, TH, FR, SA, SU, optionally with a number such as 1MO (first Monday) or -1FR (last Friday)",
		func(r *ruleSpec, v string) (err error) { r.byday, err = parseByDay(v); return err },
		func(r *ruleSpec, _ bool) string {
			s := make([]string, len(r.byday))
			for i, d := range r.byday {
				s[i] = weekdayNames[d.Day]
				if d.N != 0 {
					s[i] = strconv.Itoa(d.N) + s[i]
				}
			}
			return strings.Join(s, ",")
		}},
	intListPart("BYEASTER", -80, 250, false, "-80 to 250 (days relative to Easter Sunday)", func(r *ruleSpec) *[]int { return &r.byeaster }),
	intListPart("BYHOUR", 0, 23, false, "0 to 23", func(r *ruleSpec) *[]int { return &r.byhour }),
	intListPart("BYMINUTE", 0, 59, false, "0 to 59", func(r *ruleSpec) *[]int { return &r.byminute }),
	intListPart("BYSECOND", 0, 59, false, "0 to 59 (leap second 60 is not supported)", func(r *ruleSpec) *[]int { return &r.bysecond }),
	intListPart("BYSETPOS", 1, 366, true, "1 to 366 or -366 to -1", func(r *ruleSpec) *[]int { return &r.bysetpos }),
}

// intListPart is a part whose value is a comma-separated list of integers
// from lo to hi (and -hi to -lo when signed).
func intListPart(name string, lo, hi int, signed bool, help string, field func(*ruleSpec) *[]int) rulePart {
	return rulePart{name, help,
		func(r *ruleSpec, v string) (err error) {
			*field(r), err = parseIntList(name, v, lo, hi, signed, help)
			return err
		},
		func(r *ruleSpec, _ bool) string { return intsText(*field(r)) }}
}

func rulePartByName(name string) (rulePart, bool) {
	for _, p := range ruleParts {
		if p.name == name {
			return p, true
		}
	}
	return rulePart{}, false
}

// rulePartNames lists the known parts for the "unknown part" message.
func rulePartNames() string {
	names := make([]string, len(ruleParts))
	for i, p := range ruleParts {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

func positiveText(n, omit int) string {
	if n <= omit {
		return ""
	}
	return strconv.Itoa(n)
}

func intsText(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
