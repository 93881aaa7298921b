package models

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/refresher/refresher/policy"
)

// Success is one success result that Tx.SaveSuccesses writes without
// reading its row first.
type Success struct {
	// Key names the row, exactly as the database returns its key (as
	// LockByKeys does): a key the database would return spelled otherwise
	// ("042" for 42, "ABC" for "abc" under a case-insensitive collation)
	// matches nothing here.
	Key string
	// AttemptUID is the attempt the result answers; never empty.
	AttemptUID string
	// State is what policy.Succeeded returned; SaveSuccesses writes its
	// SuccessColumns and leaves the others alone.
	State policy.State
}

// SuccessColumns are the state columns a success writes (see
// policy.Succeeded and policy.WithSuccess): all but refresh_attempt_at,
// refresh_disabled_until_update and its reason. A test checks it against
// policy.WithSuccess.
var SuccessColumns = func() ColumnSet {
	s := AllColumns
	for c := range StateColumns {
		switch StateColumns[c].Name {
		case ColAttemptAt, ColDisabledUntil, ColDisabledReason:
			s &^= 1 << c
		}
	}
	return s
}()

// ErrUnmatched is what Tx.SaveSuccesses returns when fewer rows matched
// than it was given and the driver cannot tell which (MariaDB and MySQL
// have no UPDATE ... RETURNING): it may have written some of them, so the
// caller rolls the transaction back and reads the rows instead.
var ErrUnmatched = errors.New("some rows did not match and the store cannot tell which")

// SuccessRows checks SaveSuccesses's arguments (distinct keys, attempt
// UIDs not empty) and returns them as rows with their guards, for
// GroupByID (with all, since SuccessColumns are written whatever the row
// held). The rows' slice comes from ClaimRows: a driver hands it back with
// ReleaseRows once nothing refers to the rows (its statements are sent),
// so that a poller's batch does not allocate and zero half a megabyte of
// rows per 1000 results.
func SuccessRows(t Table, succ []Success) ([]Row, []string, error) {
	seen := borrowKeyIndex()
	defer returnKeyIndex(seen)
	for i := range succ {
		s := &succ[i]
		if s.AttemptUID == "" {
			return nil, nil, fmt.Errorf("save successes of %s: the result for key %q names no attempt", t.Name, s.Key)
		}
		// One hash per key, not a lookup and then an insert: a key
		// seen before leaves the map's size as it was.
		n := len(seen)
		if seen[s.Key] = i; len(seen) == n {
			return nil, nil, fmt.Errorf("save successes of %s: key %q occurs twice; a batch's repeated keys must be read and decided in order", t.Name, s.Key)
		}
	}
	rows := ClaimRows(len(succ))[:len(succ)]
	guard := make([]string, len(succ))
	for i := range succ {
		// ClaimRows's rows are zero (new, or cleared by ReleaseRows): the
		// two fields are all there is to write.
		s, r := &succ[i], &rows[i]
		r.Key, r.State = s.Key, s.State
		guard[i] = s.AttemptUID
	}
	return rows, guard, nil
}

// Written returns, for each of succ, whether its key is in keys (the keys
// a SaveSuccesses statement reports it wrote).
func Written(succ []Success, keys map[string]bool) []bool {
	out := make([]bool, len(succ))
	for i, s := range succ {
		out[i] = keys[s.Key]
	}
	return out
}

// WrittenGroups is Written for the keys of groups, which hold sent rows
// in all: when every one of succ was sent (the common case) it needs no
// set of the keys.
func WrittenGroups(succ []Success, groups []SaveGroup, sent int) []bool {
	if sent == len(succ) {
		out := make([]bool, len(succ))
		for i := range out {
			out[i] = true
		}
		return out
	}
	keys := make(map[string]bool, sent)
	for _, g := range groups {
		for _, k := range g.IDs {
			keys[k] = true
		}
	}
	return Written(succ, keys)
}

// CanonicalInt reports whether key is an integer as every database prints
// one ("42", "-7"; not "042", "+7" nor " 42"): for an integer key column a
// driver's SaveSuccesses can then match the row by value alone, the text
// the database returns for it being key itself, and leave any other
// spelling to LockByKeys (which finds no row under it).
func CanonicalInt(key string) bool {
	// The spelling first (no sign but a minus, no leading zero, no "-0"),
	// then the range: this runs for every key of every batch, and it
	// allocates nothing.
	digits := strings.TrimPrefix(key, "-")
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || len(digits) < len(key))) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	if _, err := strconv.ParseInt(key, 10, 64); err == nil {
		return true
	}
	_, err := strconv.ParseUint(key, 10, 64)
	return err == nil
}
