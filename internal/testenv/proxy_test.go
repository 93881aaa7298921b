package testenv

import (
	"testing"
)

// parseCommand skips what is not a client's command (a negative or huge
// count, a bad bulk length) instead of panicking in the proxy's goroutine,
// which would end the whole test binary.
func TestParseCommandSkipsWhatIsNotACommand(t *testing.T) {
	for _, in := range []string{"*-1\r\n", "\x00\x01\r\n*-7\r\nxyz", "*99999999999\r\n", "*1\r\n$-5\r\n", "*1\r\n$x\r\n"} {
		var c commands
		if got := c.feed([]byte(in)); len(got) != 0 {
			t.Errorf("feed(%q) = %q, want no command", in, got)
		}
	}
	var c commands
	got := c.feed([]byte("*2\r\n$4\r\nLPOP\r\n$1\r\nk\r\n"))
	if len(got) != 1 || got[0][0] != "lpop" || got[0][1] != "k" {
		t.Errorf("feed of LPOP k = %q", got)
	}
}

// A proxy from NewProxy (in front of a database) does not read its
// clients' streams as commands, and refuses to lose a reply.
func TestLoseReplyNeedsARedisProxy(t *testing.T) {
	p := NewProxy(t, "127.0.0.1:1")
	defer func() {
		if recover() == nil {
			t.Error("LoseReply on a proxy from NewProxy did not panic")
		}
	}()
	p.LoseReply(func([]string) bool { return true })
}
