// Package policy is the pure core of refresher: schedules (RFC 5545 RRULE ->
// Next(after)), retry policies (failure n -> delay or give up) and the
// transitions of SPEC section 3 (start, success, failure, timeout, status,
// disable, enable).
//
// Everything here is a pure function of its inputs and of a `now` passed in:
// nothing reads the wall clock, does I/O or logs. The shell (package
// refresher) asks policy for a decision and applies it to MySQL and Redis.
// policy imports nothing else of this module.
package policy
