package redisio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTagAndCheckTag(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{"{a}-in": "a", "x{b:c}y{d}": "b:c", "{}x": "", "a{b": "", "plain": "", "a}{b}": "b"} {
		require.Equal(t, want, Tag(key), key)
	}
	require.NoError(t, DefaultListsOn(Cluster, "shop:big").CheckTag())
	require.Equal(t, "big-input", DefaultListsOn(Single, "big").Input)
	require.Equal(t, "big-input", DefaultListsOn(Sentinel, "big").Input)
	require.ErrorContains(t, DefaultLists("big").CheckTag(), `input "big-input" (no tag)`)
	require.ErrorContains(t, Lists{Input: "{a}i", Output: "{a}o", Dead: "{b}d"}.CheckTag(), `dead "{b}d" (tag {b})`)
	require.ErrorContains(t, DefaultListsOn(Cluster, "a[1]").CheckTag(), `the hash tag {a[1]} of the list "{a[1]}-input" may not hold`)
}
