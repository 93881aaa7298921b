package redisio

import "strings"

// Lists names the three Redis lists of one kind (SPEC section 5).
type Lists struct {
	// Input is where the dispatcher pushes jobs; workers pop from its left
	// (LPOP/BLPOP), so jobs are served first in, first out.
	Input string
	// Output is where workers push results (RPUSH) and the poller drains them.
	Output string
	// Dead receives every result that cannot be applied, with the reason.
	Dead string
}

// DefaultLists returns the default list names of a kind:
// "<kind>-input", "<kind>-output" and "<kind>-dead".
func DefaultLists(kind string) Lists {
	return Lists{Input: kind + "-input", Output: kind + "-output", Dead: kind + "-dead"}
}

// Processing returns the key of the processing list that holds the results
// instance instanceID took from the output list but has not acknowledged yet:
// "<output>:processing:<instanceID>".
//
// All keys of a drain derive from the output list name, so in Redis Cluster
// they share a hash slot when the output list name carries a hash tag, e.g.
// "{big_tables}-output" (name the dead list "{big_tables}-dead" too).
func (l Lists) Processing(instanceID string) string {
	return l.Output + processingInfix + instanceID
}

// Heartbeat returns the key whose existence says that instance instanceID is
// alive: "<output>:heartbeat:<instanceID>". It expires after the drain's
// heartbeat TTL unless refreshed.
func (l Lists) Heartbeat(instanceID string) string {
	return l.Output + ":heartbeat:" + instanceID
}

// batchKey holds the token of the batch an instance has in flight; an Ack
// with another token (a delayed Ack of a batch that was recovered meanwhile)
// changes nothing.
func (l Lists) batchKey(instanceID string) string {
	return l.Output + ":batch:" + instanceID
}

const processingInfix = ":processing:"

// processingPattern is the SCAN pattern of every processing list of the
// output list, with glob characters of the list name escaped.
func (l Lists) processingPattern() string {
	var b strings.Builder
	for _, r := range l.Output {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString(processingInfix)
	b.WriteByte('*')
	return b.String()
}
