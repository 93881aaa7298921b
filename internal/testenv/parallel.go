package testenv

import (
	"flag"
	"strconv"
	"testing"
)

// RunParallel runs m's tests with up to n parallel tests at once (the
// tests that call t.Parallel) unless -test.parallel is given, and returns
// m.Run's exit code. For a TestMain of a package whose tests mostly wait on
// the servers and on the loops under test: go test's default of
// GOMAXPROCS parallel tests (2 on a small machine) then leaves the cores
// idle.
func RunParallel(m *testing.M, n int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic("testenv: set -test.parallel: " + err.Error())
		}
	}
	return m.Run()
}
