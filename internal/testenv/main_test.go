package testenv

import (
	"flag"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	os.Exit(RunParallel(m, 7))
}

func TestRunParallelSetsTheDefault(t *testing.T) {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.parallel") || strings.HasPrefix(a, "--test.parallel") {
			t.Skip("-test.parallel given")
		}
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != "7" {
		t.Fatalf("-test.parallel is %s, want RunParallel's 7", got)
	}
}
