// Package refresher is the service's shell: the loops that run each kind.
// It makes no decision of its own: it loads rows, asks package policy
// (policy.Due for each claimed row, policy.Apply for each result,
// policy.Enable and policy.Trigger for the admin commands), applies the
// returned states in bulk to the database (package models) and Redis
// (package redisio), and counts and logs the returned decisions.
//
// Per configured kind, a Service runs two loops:
//
//   - the dispatcher claims due rows (FOR UPDATE SKIP LOCKED), takes the
//     timeout transition for rows whose attempt timed out, starts attempts,
//     commits, and only then pushes the jobs; a failed push undoes its
//     attempts without counting them;
//   - the poller drains the kind's output list reliably (results move to this
//     instance's processing list first), applies success, failure, status
//     and extend results in one transaction per batch, drops stale ones,
//     ends the attempts of late ones (read at or after timeout_at) as timed
//     out, sends garbage to the dead-letter list, and removes the batch from
//     Redis only after the commit.
//
// Neither loop parses or evaluates a row's own rule while it holds row
// locks: a transaction that meets a rule not parsed yet rolls back, the
// rules are parsed outside it (schedules.go), and it runs again.
//
// Ownership and shutdown: Run owns both loops of every kind, the due watch,
// the activity logs and the alert gauges (Config.Gauges), and waits for all
// of them before it returns. Cancelling Run's context stops each loop
// between batches; the batch in hand finishes with a
// context that is not cancelled (bounded by OpTimeout). A process killed at
// any instant loses nothing: jobs belong to committed attempts (a job lost
// with its process times out and is retried), and results stay in Redis
// until their batch is committed.
package refresher
