// Package refresher is the service's shell: the one package with goroutines.
// It asks package policy for decisions and applies them to MySQL (package
// models) and Redis (package redisio).
//
// Per configured kind, a Service runs two loops:
//
//   - the dispatcher claims due rows (FOR UPDATE SKIP LOCKED), takes the
//     timeout transition for rows whose attempt timed out, starts attempts,
//     commits, and only then pushes the jobs; a failed push undoes its
//     attempts without counting them;
//   - the poller drains the kind's output list reliably (results move to this
//     instance's processing list first), applies success, failure and status
//     results in one transaction per batch, drops stale ones, sends garbage to
//     the dead-letter list, and removes the batch from Redis only after the
//     commit.
//
// Ownership and shutdown: Run owns both loops of every kind. Cancelling Run's
// context stops each loop between batches; the batch in hand finishes with a
// context that is not cancelled (bounded by OpTimeout). A process killed at
// any instant loses nothing: jobs belong to committed attempts (a job lost
// with its process times out and is retried), and results stay in Redis
// until their batch is committed.
package refresher
