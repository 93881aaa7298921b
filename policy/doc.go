// Package policy is the pure core of refresher: retry policies (failure n ->
// delay or give up) and the transitions of SPEC section 3 (start, success, failure, timeout, status,
// disable, enable). A schedule reaches the transitions through the Nexter
// interface; package schedule implements it for RFC 5545 rules.
//
// Everything here is a pure function of its inputs and of a `now` passed in:
// nothing reads the wall clock, does I/O or logs. The shell (package
// refresher) asks policy for a decision and applies it to MySQL and Redis.
// policy imports nothing else of this module.
package policy
