package refresher

import "errors"

// faults are failures injected by this package's tests (Config.faults,
// unexported, so that no other package can set them): a cut of Redis, a
// crash of the process at a given step. Every field is optional and the
// zero value costs nothing.
type faults struct {
	// beforeReadPauses runs before the dispatcher reads the pauses, in the
	// goroutine of a read beside the claim (tests hold the read here). An
	// error fails the read as Redis would.
	beforeReadPauses func(kind string) error
	// beforePush runs after the dispatcher committed its attempts and
	// before it pushes their jobs (tests cut Redis here).
	beforePush func(kind string)
	// beforeCommit runs inside the poller's transaction, after the results
	// were applied and before the commit. An error aborts the batch and
	// stops the poller as a crash would (errCrashed), leaving the results in
	// the processing list.
	beforeCommit func(kind string) error
	// beforeAck runs after the poller's commit and before it removes the
	// batch from Redis. An error fails the Ack as Redis would: the batch
	// stays in the processing list and its results come back, stale.
	beforeAck func(kind string) error
	// beforeIncidentRead runs before the poller reads the incident
	// window for a batch (tests hold the read here).
	beforeIncidentRead func(kind string)
}

// errCrashed stops a poller as if its process had died (faults.beforeCommit).
var errCrashed = errors.New("poller stopped by test hook before commit")
