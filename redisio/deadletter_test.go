package redisio

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A dead letter stays under 8 KiB as written, escapes included, whatever
// the message (50 MB of control characters, invalid UTF-8, quotes) and
// however long its error; its excerpt is still a true beginning of the
// message.
func TestDeadLetterBoundedWithEscapes(t *testing.T) {
	t.Parallel()
	const size = 50 << 20
	for name, unit := range map[string]string{
		"text": "a", "control": "\x01", "invalid": "\xff", "quote": `"`, "mixed": "\x00\xfe\"é\u2028",
	} {
		raw := bytes.Repeat([]byte(unit), size/len(unit))
		m := Message{Raw: raw, Err: errors.New("invalid result: " + strings.Repeat("\x02", 10_000))}
		entry := AppendDeadLetter(nil, m, "big_tables-output", "2026-11-21T14:00:00Z")
		require.Less(t, len(entry), 8<<10, "%s: dead letter of %d bytes", name, len(entry))
		var e deadLetterEntry
		require.NoError(t, json.Unmarshal(entry, &e), name)
		require.Equal(t, len(raw), e.Size, name)
		require.True(t, e.Truncated, name)
		require.Equal(t, sha1hex(string(raw)), e.SHA1, name)
		kept := []byte(e.Message)
		if e.MessageBase64 != "" {
			var err error
			kept, err = base64.StdEncoding.DecodeString(e.MessageBase64)
			require.NoError(t, err)
		}
		require.NotEmpty(t, kept, name)
		require.True(t, bytes.HasPrefix(raw, kept), "%s: the excerpt is the message's beginning", name)
		if name == "text" {
			require.Len(t, kept, ExcerptBytes, "plain text keeps its whole excerpt")
		}
	}
}
