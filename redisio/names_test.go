package redisio

import (
	"slices"
	"testing"
)

// TestPriorityInputs: the lanes' lists derive from the input list (so they
// share its Redis Cluster hash tag), and a worker pops them first.
func TestPriorityInputs(t *testing.T) {
	t.Parallel()
	l := Lists{Input: "{big}-input"}
	if got := l.PriorityInput(-5); got != "{big}-input:p-5" {
		t.Fatalf("PriorityInput(-5) = %q", got)
	}
	if got, want := l.Inputs([]int{0, 5}), []string{"{big}-input:p0", "{big}-input:p5", "{big}-input"}; !slices.Equal(got, want) {
		t.Fatalf("Inputs = %q, want %q", got, want)
	}
	if got := l.Inputs(nil); !slices.Equal(got, []string{"{big}-input"}) {
		t.Fatalf("Inputs(nil) = %q", got)
	}
}
