package models

// The claim's lean read. A claim reads every row it locks, and most of them
// only start an attempt: policy.Due then reads refresh_at, the attempt UID
// and number and the disabled time, and writes the attempt's columns and
// the status. The rest of the state (the disabled reason, the failing run,
// the last success and the last error, ClaimRest) matters only to a timeout,
// so the claim reads it of running rows only: the other rows' ClaimRest
// travel as NULLs (one byte each, nothing to parse), and Save leaves them
// alone unless the row's new state sets them (an invalid rule's reason).
// Every other transition of a row that is not running (a start, a hold, a
// pause, a disabled row's cleared refresh_at, a misfire skip) writes none of
// ClaimRest or sets them to a value: Due never clears one of a row that is
// not running.

// ClaimRest are the state columns ClaimDue reads of running rows only (see
// Loaded.Unread).
var ClaimRest = columnSet(ColDisabledReason, ColFailingSince, ColLastSuccessAt, ColLastError)

// columnSet is the set of the named state columns.
func columnSet(names ...string) ColumnSet {
	var s ColumnSet
	for _, n := range names {
		for c := range StateColumns {
			if StateColumns[c].Name == n {
				s |= 1 << c
			}
		}
	}
	return s
}

// ClaimColumn is the select expression of state column c of the claim, given
// the attempt UID column and c as selected (each quoted as the driver
// selects them): c itself, or for a column of ClaimRest its value for a
// running row and NULL for the others.
func ClaimColumn(c int, uid, col string) string {
	if !ClaimRest.Has(c) {
		return col
	}
	return "CASE WHEN " + uid + " IS NOT NULL THEN " + col + " END"
}

// MarkClaimed sets Loaded.Unread of the rows a claim read with ClaimColumn:
// ClaimRest of every row that is not running.
func MarkClaimed(rows []Row) {
	for i := range rows {
		if !rows[i].Loaded.State.Running() {
			rows[i].Loaded.Unread = ClaimRest
		}
	}
}

// Unknown returns the state columns of r whose value in r.State is not the
// row's: unread (Loaded.Unread) and not set since (still zero). Save must
// not write them.
func Unknown(r *Row) ColumnSet {
	var u ColumnSet
	if r.Loaded.Unread == 0 {
		return 0
	}
	for c := range StateColumns {
		if r.Loaded.Unread.Has(c) && StateColumns[c].IsZero(&r.State) {
			u |= 1 << c
		}
	}
	return u
}
