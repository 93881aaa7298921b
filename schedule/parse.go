package schedule

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/teambition/rrule-go"
)

// Limits that keep every accepted rule cheap to evaluate. Each one is far
// beyond what a refresh schedule needs.
const (
	maxScheduleText = 64 << 10 // bytes of schedule text
	maxCount        = 100000   // COUNT
	maxListLen      = 366      // values in one BYxxx list
	maxDates        = 1000     // EXDATE or RDATE values in total, each
	maxTimesPerDay  = 1440     // |BYHOUR| x |BYMINUTE| x |BYSECOND| for DAILY and coarser
	minYear         = 1900     // earliest year of DTSTART, UNTIL, EXDATE, RDATE
	maxYear         = 9999     // latest such year
	defaultAnchorY  = 2000     // DTSTART when the text has none: 2000-01-01T00:00:00
)

// maxInterval is the largest INTERVAL per FREQ: one period spans at most about
// a hundred years.
var maxInterval = map[rrule.Frequency]int{
	rrule.YEARLY:   100,
	rrule.MONTHLY:  1200,
	rrule.WEEKLY:   5200,
	rrule.DAILY:    36500,
	rrule.HOURLY:   876000,
	rrule.MINUTELY: 1000000,
	rrule.SECONDLY: 1000000,
}

var freqNames = map[string]rrule.Frequency{
	"YEARLY": rrule.YEARLY, "MONTHLY": rrule.MONTHLY, "WEEKLY": rrule.WEEKLY,
	"DAILY": rrule.DAILY, "HOURLY": rrule.HOURLY, "MINUTELY": rrule.MINUTELY,
	"SECONDLY": rrule.SECONDLY,
}

var freqText = map[rrule.Frequency]string{
	rrule.YEARLY: "YEARLY", rrule.MONTHLY: "MONTHLY", rrule.WEEKLY: "WEEKLY",
	rrule.DAILY: "DAILY", rrule.HOURLY: "HOURLY", rrule.MINUTELY: "MINUTELY",
	rrule.SECONDLY: "SECONDLY",
}

var weekdayNames = []string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}

var weekdays = []rrule.Weekday{rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU}

// nthWeekday is one BYDAY value: N is 0 for "every such weekday".
type nthWeekday struct {
	N   int
	Day int // 0 = Monday ... 6 = Sunday
}

// ruleSpec is an RRULE as written, validated, before defaults are filled in.
type ruleSpec struct {
	freq       rrule.Frequency
	interval   int // 1 when not given
	count      int // 0 when not given
	until      time.Time
	untilText  string
	wkst       int // 0 = Monday
	wkstSet    bool
	bymonth    []int
	byweekno   []int
	byyearday  []int
	bymonthday []int
	byday      []nthWeekday
	byeaster   []int
	byhour     []int
	byminute   []int
	bysecond   []int
	bysetpos   []int
	seen       map[string]bool // parts present in the text
}

// parsed is the result of reading the text, before the engine is built.
type parsed struct {
	loc        *time.Location
	zoneName   string // TZID, "" for UTC ("Z") or floating
	floating   bool   // DTSTART without Z or TZID
	hasStart   bool
	startWall  time.Time // DTSTART's wall clock, expressed in UTC
	rule       ruleSpec
	exdates    []time.Time // instants
	rdates     []time.Time // instants
	exdateText []string
	rdateText  []string
}

// splitLines splits on real line breaks and on the two characters `\n`.
func splitLines(text string) []string {
	text = strings.ReplaceAll(text, `\r\n`, "\n")
	text = strings.ReplaceAll(text, `\n`, "\n")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		// RFC 5545 folding: a line that starts with a space continues the last one.
		if len(lines) > 0 && strings.HasPrefix(l, " ") && strings.TrimSpace(l) != "" && !strings.Contains(l, ":") {
			lines[len(lines)-1] += strings.TrimLeft(l, " \t")
			continue
		}
		l = strings.TrimSpace(l)
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func parseText(text string) (*parsed, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("the text is not valid UTF-8; write it as plain text, e.g. DTSTART:20240101T090000Z and RRULE:FREQ=DAILY on two lines")
	}
	if len(text) > maxScheduleText {
		return nil, fmt.Errorf("the text is %d bytes long, more than the %d allowed", len(text), maxScheduleText)
	}
	for _, r := range text {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return nil, fmt.Errorf("the text contains the control character %U; remove it", r)
		}
	}
	lines := splitLines(text)
	if len(lines) == 0 {
		return nil, errors.New("the schedule is empty; give at least an RRULE line, e.g. RRULE:FREQ=DAILY;BYHOUR=14;BYMINUTE=0;BYSECOND=0")
	}
	p := &parsed{loc: time.UTC}
	var ruleText string
	var ruleSeen bool
	type dateLine struct {
		name   string
		params string
		value  string
	}
	var dateLines []dateLine
	for _, line := range lines {
		name, params, value, err := splitContentLine(line)
		if err != nil {
			return nil, err
		}
		switch name {
		case "DTSTART":
			if p.hasStart {
				return nil, errors.New("DTSTART is given twice; keep one DTSTART line")
			}
			if err := p.parseStart(params, value); err != nil {
				return nil, err
			}
		case "RRULE":
			if ruleSeen {
				return nil, errors.New("more than one RRULE line; a schedule has exactly one RRULE (add further times with RDATE)")
			}
			ruleSeen = true
			ruleText = value
		case "EXDATE", "RDATE":
			dateLines = append(dateLines, dateLine{name, params, value})
		case "EXRULE":
			return nil, errors.New("EXRULE is not supported (RFC 5545 deprecated it); list the excluded times with EXDATE")
		default:
			return nil, fmt.Errorf("unknown line %q; use DTSTART, RRULE, EXDATE and RDATE lines, e.g. DTSTART;TZID=Europe/Berlin:20240101T140000 and RRULE:FREQ=DAILY", truncate(line, 40))
		}
	}
	if !ruleSeen {
		return nil, errors.New("no RRULE line; add one, e.g. RRULE:FREQ=DAILY;BYHOUR=14;BYMINUTE=0;BYSECOND=0")
	}
	if !p.hasStart {
		// Anchor at a fixed instant, never at "now" (docs/schedules.md, "Writing a schedule").
		p.startWall = time.Date(defaultAnchorY, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	rule, err := parseRule(ruleText, p)
	if err != nil {
		return nil, err
	}
	p.rule = rule
	for _, dl := range dateLines {
		times, texts, err := p.parseDateList(dl.name, dl.params, dl.value)
		if err != nil {
			return nil, err
		}
		if dl.name == "EXDATE" {
			p.exdates = append(p.exdates, times...)
			p.exdateText = append(p.exdateText, texts...)
			if len(p.exdates) > maxDates {
				return nil, fmt.Errorf("more than %d EXDATE values; narrow the rule with BYxxx parts instead", maxDates)
			}
		} else {
			p.rdates = append(p.rdates, times...)
			p.rdateText = append(p.rdateText, texts...)
			if len(p.rdates) > maxDates {
				return nil, fmt.Errorf("more than %d RDATE values", maxDates)
			}
		}
	}
	return p, nil
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}

// splitContentLine splits `NAME;PARAM=V:VALUE`. A bare `FREQ=...` line is an RRULE.
func splitContentLine(line string) (name, params, value string, err error) {
	if strings.HasPrefix(strings.ToUpper(line), "FREQ=") {
		return "RRULE", "", line, nil
	}
	colon := strings.IndexByte(line, ':')
	if colon < 0 {
		return "", "", "", fmt.Errorf("line %q has no ':'; write NAME:VALUE, e.g. RRULE:FREQ=DAILY or DTSTART:20240101T090000Z", truncate(line, 40))
	}
	head, value := line[:colon], strings.TrimSpace(line[colon+1:])
	name, params, _ = strings.Cut(head, ";")
	name = strings.ToUpper(strings.TrimSpace(name))
	if value == "" {
		return "", "", "", fmt.Errorf("%s has no value after ':'", name)
	}
	return name, params, value, nil
}

// parseParams reads `TZID=Europe/Berlin;VALUE=DATE-TIME`. It returns the zone
// (nil when no TZID), its name, and whether VALUE=DATE was given.
func parseParams(name, params string) (loc *time.Location, zone string, date bool, err error) {
	if params == "" {
		return nil, "", false, nil
	}
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, "", false, fmt.Errorf("%s: parameter %q has no '='; write e.g. %s;TZID=Europe/Berlin:20240101T090000", name, truncate(p, 30), name)
		}
		switch strings.ToUpper(strings.TrimSpace(k)) {
		case "TZID":
			v = strings.Trim(strings.TrimSpace(v), `"`)
			v = strings.TrimPrefix(v, "/")
			l, err := loadLocation(v)
			if err != nil {
				return nil, "", false, fmt.Errorf("%s: unknown time zone TZID=%q; use an IANA name such as Europe/Berlin, America/New_York or UTC", name, truncate(v, 40))
			}
			loc, zone = l, v
		case "VALUE":
			switch strings.ToUpper(strings.TrimSpace(v)) {
			case "DATE-TIME":
			case "DATE":
				date = true
			default:
				return nil, "", false, fmt.Errorf("%s: VALUE=%s is not supported; give a date-time such as 20240101T090000 or, with VALUE=DATE, a date such as 20240101", name, truncate(v, 20))
			}
		default:
			return nil, "", false, fmt.Errorf("%s: unknown parameter %q; only TZID (e.g. TZID=Europe/Berlin) is supported", name, truncate(k, 20))
		}
	}
	return loc, zone, date, nil
}

// parseDateTime reads 20240101T090000 (floating), 20240101T090000Z (UTC) or
// 20240101 (midnight). It returns the wall clock expressed in UTC.
func parseDateTime(name, v string) (wall time.Time, utc bool, err error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	if strings.HasSuffix(s, "Z") {
		utc = true
		s = s[:len(s)-1]
	}
	layout := "20060102T150405"
	if len(s) == 8 {
		layout = "20060102"
	}
	if len(s) != len(layout) || !allDigitsExceptT(s) {
		return time.Time{}, false, fmt.Errorf("%s: %q is not a date-time; write YYYYMMDDTHHMMSS, e.g. 20240131T143000 (add Z for UTC)", name, truncate(v, 30))
	}
	t, perr := time.Parse(layout, s)
	if perr != nil {
		return time.Time{}, false, fmt.Errorf("%s: %q is not a valid date-time (%s); write YYYYMMDDTHHMMSS, e.g. 20240131T143000", name, truncate(v, 30), plainParseError(perr))
	}
	if t.Year() < minYear || t.Year() > maxYear {
		return time.Time{}, false, fmt.Errorf("%s: year %d is out of range; use a year between %d and %d", name, t.Year(), minYear, maxYear)
	}
	return t, utc, nil
}

func allDigitsExceptT(s string) bool {
	for i, r := range s {
		if i == 8 && r == 'T' {
			continue
		}
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func plainParseError(err error) string {
	var pe *time.ParseError
	if errors.As(err, &pe) && pe.Message != "" {
		return strings.TrimPrefix(pe.Message, ": ")
	}
	return "out of range"
}

// checkDate rejects a VALUE=DATE value that is not a plain date. An all-day
// value means midnight (00:00:00) of that date in its TZID, or in the rule's
// zone without one (UTC when the rule is floating); an EXDATE date removes
// the occurrence at that instant only, not the whole day.
func checkDate(name, v string, date bool) error {
	if date && len(strings.TrimSpace(v)) != 8 {
		return fmt.Errorf("%s: VALUE=DATE needs a date such as 20240101, not %q", name, truncate(v, 30))
	}
	return nil
}

func (p *parsed) parseStart(params, value string) error {
	loc, zone, date, err := parseParams("DTSTART", params)
	if err != nil {
		return err
	}
	if err := checkDate("DTSTART", value, date); err != nil {
		return err
	}
	wall, utc, err := parseDateTime("DTSTART", value)
	if err != nil {
		return err
	}
	switch {
	case utc && loc != nil:
		return errors.New("DTSTART has both TZID and a trailing Z; drop the Z to give a local time in that zone, or drop TZID for UTC")
	case loc != nil:
		p.loc, p.zoneName = loc, zone
	case utc:
		p.loc = time.UTC
	default:
		p.loc, p.floating = time.UTC, true
	}
	p.hasStart = true
	p.startWall = wall
	return nil
}

// parseDateList reads an EXDATE or RDATE value list and returns instants.
func (p *parsed) parseDateList(name, params, value string) ([]time.Time, []string, error) {
	loc, zone, date, err := parseParams(name, params)
	if err != nil {
		return nil, nil, err
	}
	var out []time.Time
	var texts []string
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if err := checkDate(name, v, date); err != nil {
			return nil, nil, err
		}
		wall, utc, err := parseDateTime(name, v)
		if err != nil {
			return nil, nil, err
		}
		if utc && loc != nil {
			return nil, nil, fmt.Errorf("%s: %q has a trailing Z although TZID is given; drop one of them", name, v)
		}
		var inst time.Time
		var text string
		switch {
		case utc:
			inst, text = wall, wall.Format("20060102T150405Z")
		case loc != nil:
			inst, _ = wallToInstant(wall, loc)
			text = "TZID=" + zone + ":" + wall.Format("20060102T150405")
		default: // floating: read in the rule's zone
			inst, _ = wallToInstant(wall, p.loc)
			text = wall.Format("20060102T150405")
			if p.zoneName != "" {
				text = "TZID=" + p.zoneName + ":" + text
			} else if !p.floating {
				text = inst.Format("20060102T150405Z")
			}
		}
		out = append(out, inst.UTC())
		texts = append(texts, text)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s has no dates; list them comma-separated, e.g. %s:20240101T090000Z,20240102T090000Z", name, name)
	}
	return out, texts, nil
}

func parseRule(text string, p *parsed) (ruleSpec, error) {
	r := ruleSpec{interval: 1, seen: map[string]bool{}}
	for _, part := range strings.Split(text, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.ToUpper(strings.TrimSpace(k))
		v = strings.ToUpper(strings.TrimSpace(v))
		if !ok || v == "" {
			return r, fmt.Errorf("RRULE: part %q has no value; write NAME=VALUE, e.g. FREQ=DAILY", truncate(part, 30))
		}
		if r.seen[k] {
			return r, fmt.Errorf("RRULE: %s is given twice; keep one", k)
		}
		r.seen[k] = true
		part, ok := rulePartByName(k)
		if !ok {
			return r, fmt.Errorf("RRULE: unknown part %q (use %s)", truncate(k, 20), rulePartNames())
		}
		err := part.parse(&r, v)
		if err != nil {
			return r, err
		}
	}
	if !r.seen["FREQ"] {
		return r, errors.New("RRULE: FREQ is missing; start the rule with FREQ=, e.g. RRULE:FREQ=DAILY;BYHOUR=14")
	}
	if r.untilText != "" {
		if r.count != 0 {
			return r, errors.New("RRULE: COUNT and UNTIL cannot both be given; keep one of them")
		}
		wall, utc, err := parseDateTime("RRULE: UNTIL", r.untilText)
		if err != nil {
			return r, err
		}
		if len(r.untilText) == 8 { // a date: the whole day is included
			wall = wall.Add(24*time.Hour - time.Second)
		}
		if utc {
			r.until = wall
		} else {
			r.until, _ = wallToInstant(wall, p.loc)
			r.until = r.until.UTC()
		}
	}
	if err := r.validate(); err != nil {
		return r, err
	}
	return r, nil
}

func parsePositive(k, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("RRULE: %s=%q must be a whole number of at least 1", k, truncate(v, 20))
	}
	return n, nil
}

func parseIntList(k, v string, lo, hi int, signed bool, want string) ([]int, error) {
	fields := strings.Split(v, ",")
	if len(fields) > maxListLen {
		return nil, fmt.Errorf("RRULE: %s has %d values; at most %d are allowed", k, len(fields), maxListLen)
	}
	var out []int
	for _, f := range fields {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		ok := err == nil && ((n >= lo && n <= hi) || (signed && n <= -lo && n >= -hi))
		if !ok {
			return nil, fmt.Errorf("RRULE: %s value %q is out of range; use %s", k, truncate(f, 20), want)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

func parseByDay(v string) ([]nthWeekday, error) {
	fields := strings.Split(v, ",")
	if len(fields) > maxListLen {
		return nil, fmt.Errorf("RRULE: BYDAY has %d values; at most %d are allowed", len(fields), maxListLen)
	}
	var out []nthWeekday
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if len(f) < 2 {
			return nil, fmt.Errorf("RRULE: BYDAY value %q is not a weekday; use MO, TU, WE, TH, FR, SA, SU, optionally with a number such as 1MO (first Monday) or -1FR (last Friday)", truncate(f, 10))
		}
		day := slices.Index(weekdayNames, f[len(f)-2:])
		n := 0
		var err error
		if num := f[:len(f)-2]; num != "" {
			n, err = strconv.Atoi(num)
			if err == nil && n == 0 {
				err = errors.New("zero")
			}
		}
		if day < 0 || err != nil {
			return nil, fmt.Errorf("RRULE: BYDAY value %q is not a weekday; use MO, TU, WE, TH, FR, SA, SU, optionally with a number such as 1MO (first Monday) or -1FR (last Friday)", truncate(f, 10))
		}
		wd := nthWeekday{N: n, Day: day}
		if !slices.Contains(out, wd) {
			out = append(out, wd)
		}
	}
	return out, nil
}

// validate rejects combinations RFC 5545 forbids and those the library
// would panic or loop forever on.
func (r *ruleSpec) validate() error {
	f := freqText[r.freq]
	if r.interval > maxInterval[r.freq] {
		return fmt.Errorf("RRULE: INTERVAL=%d is too large for FREQ=%s; use at most %d", r.interval, f, maxInterval[r.freq])
	}
	if len(r.byweekno) > 0 && r.freq != rrule.YEARLY {
		return fmt.Errorf("RRULE: BYWEEKNO only works with FREQ=YEARLY, not FREQ=%s", f)
	}
	if len(r.byyearday) > 0 && (r.freq == rrule.DAILY || r.freq == rrule.WEEKLY || r.freq == rrule.MONTHLY) {
		return fmt.Errorf("RRULE: BYYEARDAY cannot be used with FREQ=%s; use FREQ=YEARLY (or BYMONTH with BYMONTHDAY)", f)
	}
	if len(r.bymonthday) > 0 && r.freq == rrule.WEEKLY {
		return errors.New("RRULE: BYMONTHDAY cannot be used with FREQ=WEEKLY; use FREQ=MONTHLY or FREQ=DAILY with BYMONTHDAY")
	}
	if len(r.byeaster) > 0 && r.freq != rrule.YEARLY {
		return fmt.Errorf("RRULE: BYEASTER only works with FREQ=YEARLY, not FREQ=%s", f)
	}
	if len(r.byeaster) > 0 {
		numbered := slices.ContainsFunc(r.byday, func(d nthWeekday) bool { return d.N != 0 })
		if len(r.byweekno) > 0 || len(r.byyearday) > 0 || len(r.bysetpos) > 0 || numbered {
			return errors.New("RRULE: BYEASTER cannot be combined with BYWEEKNO, BYYEARDAY, BYSETPOS or a numbered BYDAY; use BYMONTH, BYMONTHDAY, BYDAY without a number and the times of day")
		}
	}
	for _, d := range r.byday {
		if d.N == 0 {
			continue
		}
		name := strconv.Itoa(d.N) + weekdayNames[d.Day]
		switch {
		case r.freq != rrule.MONTHLY && r.freq != rrule.YEARLY:
			return fmt.Errorf("RRULE: BYDAY=%s: a numbered weekday only works with FREQ=MONTHLY or FREQ=YEARLY; write the weekday without a number (e.g. %s)", name, weekdayNames[d.Day])
		case r.freq == rrule.YEARLY && len(r.byweekno) > 0:
			return fmt.Errorf("RRULE: BYDAY=%s: a numbered weekday cannot be combined with BYWEEKNO; drop the number", name)
		case (r.freq == rrule.MONTHLY || len(r.bymonth) > 0) && (d.N > 5 || d.N < -5):
			return fmt.Errorf("RRULE: BYDAY=%s: a month has at most 5 of each weekday; use 1 to 5 or -5 to -1 (e.g. 2MO, -1FR)", name)
		case d.N > 53 || d.N < -53:
			return fmt.Errorf("RRULE: BYDAY=%s: a year has at most 53 of each weekday; use 1 to 53 or -53 to -1", name)
		}
	}
	if len(r.bysetpos) > 0 {
		if !r.seen["BYMONTH"] && !r.seen["BYWEEKNO"] && !r.seen["BYYEARDAY"] && !r.seen["BYMONTHDAY"] &&
			!r.seen["BYDAY"] && !r.seen["BYHOUR"] && !r.seen["BYMINUTE"] && !r.seen["BYSECOND"] && !r.seen["BYEASTER"] {
			return errors.New("RRULE: BYSETPOS needs another BYxxx part to pick from, e.g. FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1 (last workday)")
		}
	}
	if r.freq <= rrule.DAILY {
		n := max(len(r.byhour), 1) * max(len(r.byminute), 1) * max(len(r.bysecond), 1)
		if n > maxTimesPerDay {
			return fmt.Errorf("RRULE: BYHOUR, BYMINUTE and BYSECOND give %d times per day, more than %d; use FREQ=MINUTELY or FREQ=HOURLY for dense schedules", n, maxTimesPerDay)
		}
	}
	return nil
}

// text returns the rule in normalized form: its parts in the order of
// ruleParts, each as written by the part's text function.
func (r *ruleSpec) text(floating bool) string {
	var parts []string
	for _, p := range ruleParts {
		if v := p.text(r, floating); v != "" {
			parts = append(parts, p.name+"="+v)
		}
	}
	return strings.Join(parts, ";")
}
