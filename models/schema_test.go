package models_test

import (
	. "github.com/refresher/refresher/models"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/refresher/refresher/policy"
)

// TestREADMEColumnsMatchSchema checks that the README's table under "The
// columns" lists Schema's columns in order, with their MySQL definitions
// and meanings.
func TestREADMEColumnsMatchSchema(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../README.md")
	must(t, err)
	_, section, ok := strings.Cut(string(text), "### The columns\n")
	if !ok {
		t.Fatal(`README.md has no "### The columns" section`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (.*?) \\| (.*) \\|$")
	var got, want [][3]string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got = append(got, [3]string{m[1], m[2], m[3]})
	}
	for _, c := range Schema {
		typ := mysqlDefinition(c)
		if c.Indexed {
			typ += ", indexed"
		}
		want = append(want, [3]string{c.Name, typ, c.Meaning})
	}
	eq(t, got, want, "README's column table (name, type, meaning) against models.Schema")
}

// mysqlDefinition is c's type with its nullability and default in MySQL,
// as in ADD COLUMN: "DATETIME(6) NULL", "INT NOT NULL DEFAULT 0".
func mysqlDefinition(c Column) string {
	if c.Kind == IntColumn {
		return c.Type.MySQL + " NOT NULL DEFAULT 0"
	}
	return c.Type.MySQL + " NULL"
}

// TestRefreshTagsMatchSchema checks the GORM struct against Schema: one
// field per column in order, with the column's name, MySQL type, NOT NULL
// DEFAULT 0 for integers and an index where Schema has one, of the Go type
// of the column's kind; and that State and SetState move each column's
// value to the field Schema's accessor names.
func TestRefreshTagsMatchSchema(t *testing.T) {
	t.Parallel()
	rt := reflect.TypeFor[Refresh]()
	eq(t, rt.NumField(), len(Schema), "fields of Refresh")
	goType := map[ColumnKind]reflect.Type{
		TimeColumn: reflect.TypeFor[*time.Time](),
		TextColumn: reflect.TypeFor[*string](),
		IntColumn:  reflect.TypeFor[int](),
	}
	for i, c := range Schema {
		f := rt.Field(i)
		tag := map[string]string{}
		for _, part := range strings.Split(f.Tag.Get("gorm"), ";") {
			k, v, _ := strings.Cut(part, ":")
			tag[k] = v
		}
		eq(t, tag["column"], c.Name, f.Name, " column")
		typ := strings.ToUpper(tag["type"])
		if typ == "INTEGER" { // GORM's spelling of INT; see Refresh
			typ = "INT"
		}
		if typ == "" && tag["precision"] == "6" { // each dialect's own time type
			typ = "DATETIME(6)"
		}
		eq(t, typ, c.Type.MySQL, f.Name, " type")
		_, notNull := tag["not null"]
		eq(t, notNull, c.Kind == IntColumn, f.Name, " not null")
		eq(t, tag["default"] == "0", c.Kind == IntColumn, f.Name, " default 0")
		_, indexed := tag["index"]
		eq(t, indexed, c.Indexed, f.Name, " index")
		eq(t, f.Type, goType[c.Kind], f.Name, " Go type")
		eq(t, strings.Split(f.Tag.Get("json"), ",")[0], c.Name, f.Name, " json name")

		if !c.InState() {
			continue
		}
		// A value set through the accessor arrives in this field.
		var s policy.State
		want := setDistinct(&c, &s, i)
		var r Refresh
		r.SetState(s)
		v := reflect.ValueOf(r).Field(i)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				t.Fatalf("%s: SetState left %s nil, the accessor set it", f.Name, c.Name)
			}
			v = v.Elem()
		}
		eq(t, v.Interface(), want, f.Name, " holds the accessor's field")
		eq(t, r.State(), s, f.Name, " State reads it back")
	}
}

// setDistinct sets column c of s to a value particular to i and returns it.
func setDistinct(c *Column, s *policy.State, i int) any {
	switch c.Kind {
	case TimeColumn:
		v := time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
		*c.Time(s) = v
		return v
	case TextColumn:
		v := "text " + c.Name
		*c.Text(s) = v
		return v
	}
	*c.Int(s) = i + 1
	return i + 1
}

// TestStateColumnsCoverState checks that the accessors of StateColumns name
// every field of policy.State once, so Save writes all of the state.
func TestStateColumnsCoverState(t *testing.T) {
	t.Parallel()
	eq(t, len(StateColumns), reflect.TypeFor[policy.State]().NumField(), "state columns against policy.State's fields")
	var s policy.State
	for i := range StateColumns {
		before := s
		setDistinct(&StateColumns[i], &s, i)
		if s == before {
			t.Fatalf("%s: the accessor changed nothing", StateColumns[i].Name)
		}
	}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("no state column sets policy.State.%s", v.Type().Field(i).Name)
		}
	}
}

func TestColumnFit(t *testing.T) {
	var status, rule *Column
	for i := range Schema {
		switch Schema[i].Name {
		case ColStatus:
			status = &Schema[i]
		case ColRRule:
			rule = &Schema[i]
		}
	}
	long := strings.Repeat("é", 300)
	eq(t, status.Fit(long), strings.Repeat("é", 254)+"…", "cut by policy.Truncate's rule")
	eq(t, status.Fit(long), policy.Truncate(long, policy.MaxStatusLen))
	eq(t, status.Fit("bad \xff"), "bad \uFFFD")
	eq(t, rule.Fit(long), long, "no limit")
	fits := "fetched 1234 bytes"
	if n := testing.AllocsPerRun(100, func() { _ = status.Fit(fits) }); n != 0 {
		t.Fatalf("Fit allocates %v times for a text that fits", n)
	}
	var s policy.State
	ps := &s
	if n := testing.AllocsPerRun(100, func() {
		for c := range StateColumns {
			StateColumns[c].Same(ps, ps)
		}
	}); n != 0 {
		t.Fatalf("Same allocates %v times", n)
	}
}

// TestSameTimeAsTruncated: SameTime agrees with comparing the times
// truncated to microseconds, in any zone, before 1970 and across second
// boundaries.
func TestSameTimeAsTruncated(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 5*3600+1800)
	bases := []time.Time{
		time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999500, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 3, 4, 5, 6, 7, 999999999, east),
	}
	deltas := []time.Duration{0, 1, 499, 500, 999, 1000, 1001, time.Second - 1, time.Second, -1, -1000, -time.Second}
	for _, a := range bases {
		for _, d := range deltas {
			for _, b := range []time.Time{a.Add(d), a.Add(d).In(east), a.Add(d).UTC()} {
				if b.IsZero() {
					continue // NULL: SameTime's own case
				}
				want := a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
				if got := SameTime(a, b); got != want {
					t.Errorf("SameTime(%v, %v) = %v, want %v", a, b, got, want)
				}
			}
		}
	}
}
