package refresher

// Hooks are test signals fired by the loops. Every field is optional and the
// zero value costs nothing in production.
type Hooks struct {
	// AfterDispatch runs after each dispatcher pass with the number of
	// attempts started (including zero), and with zero after each look of
	// the due watch at an idle kind that stays parked (see dueWatch).
	AfterDispatch func(kind string, started int)
	// BeforePush runs after the dispatcher committed its attempts and before
	// it pushes their jobs (tests cut Redis here).
	BeforePush func(kind string)
	// AfterApply runs after each poller pass that fetched results, with the
	// number fetched.
	AfterApply func(kind string, fetched int)
	// BeforeCommit runs inside the poller's transaction, after the results
	// were applied and before the commit. An error aborts the batch and stops
	// the poller as a crash would, leaving the results in the processing list.
	BeforeCommit func(kind string) error
	// BeforeAck runs after the poller's commit and before it removes the
	// batch from Redis. An error fails the Ack as Redis would: the batch
	// stays in the processing list and its results come back, stale.
	BeforeAck func(kind string) error
}
