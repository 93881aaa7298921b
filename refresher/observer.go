package refresher

// Observer is told of the loops' passes, for tests and benchmarks that wait
// for passes or count them instead of sleeping. It only observes: it cannot
// change what a pass does. Every field is optional and the zero value costs
// nothing. A func runs on the loop's goroutine: it must return quickly.
type Observer struct {
	// AfterDispatch runs after each dispatcher pass with the number of
	// jobs it pushed (including zero; a full batch's are pushed behind the
	// next pass and counted by it, see pushBehind), and with zero after
	// each look of the due watch at an idle kind that stays parked (see
	// dueWatch).
	AfterDispatch func(kind string, started int)
	// AfterApply runs after each poller pass that fetched results, with the
	// number fetched.
	AfterApply func(kind string, fetched int)
}
