package redisio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A list whose name begins with another kind's input or output list and
// ":" would be taken for one of the keys derived from it: refused, naming
// both kinds.
func TestCheckDistinctDerivedKeys(t *testing.T) {
	t.Parallel()
	ok := CheckDistinct([]string{"a", "b"}, []Lists{DefaultLists("a"), DefaultLists("b")})
	require.Empty(t, ok)

	errs := CheckDistinct([]string{"a", "b"}, []Lists{DefaultLists("a"), {Input: "a-input:throttle", Output: "b-output", Dead: "b-dead"}})
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], `the input list "a-input:throttle" of kind b starts with "a-input:", which begins the pause, throttle, incident and gauge keys of kind a's input list: rename it`)

	errs = CheckDistinct([]string{"a", "b"}, []Lists{DefaultLists("a"), {Input: "b-input", Output: "b-output", Dead: "a-output:heartbeat:x"}})
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], "processing and heartbeat keys of kind a's output list")
}
