// Package schedule evaluates refresh schedules: RFC 5545 text (DTSTART,
// one RRULE, EXDATE and RDATE lines) parsed into a Schedule whose
// Next(after) returns the first occurrence strictly after a time, or the zero
// time when there is none. That is the policy.Nexter seam the transitions
// use; this package imports nothing else of this module, and package policy
// does not import it.
//
// Everything here is pure: no wall clock, no I/O. Parse is safe for
// concurrent use and does not cache; callers that parse many rows keep their
// own Cache.
package schedule
