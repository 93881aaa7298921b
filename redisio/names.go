package redisio

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultMaxDead is the default cap of a dead-letter list (Lists.MaxDead).
const DefaultMaxDead = 10_000

// Lists names the three Redis lists of one kind (docs/protocol.md) and bounds
// what the drain of its output list takes in and keeps.
//
// Every list name must be unique: no two kinds may share a list, and a kind's
// input, output and dead lists must differ. A dead list that is another
// kind's output list makes messages go round forever; an output list shared
// by two kinds dead-letters the other kind's results as unknown models.
type Lists struct {
	// Input is where the dispatcher pushes jobs; workers pop from its left
	// (LPOP/BLPOP), so jobs are served first in, first out.
	Input string
	// Output is where workers push results (RPUSH) and the poller drains them.
	Output string
	// Dead receives every result that cannot be applied, with the reason
	// (see Drain.Ack for the dead-letter format).
	Dead string
	// MaxDead caps the dead-letter list: after each push the oldest entries
	// beyond MaxDead are dropped in the same atomic step. Default
	// DefaultMaxDead (10,000); it must not be negative.
	MaxDead int
	// MaxResultBytes is the size limit of one result on Output; a larger one
	// is never returned whole by Fetch (only its first 4 KiB, size and hash)
	// and goes to the dead-letter list. Default: the Client's
	// Config.MaxResultBytes (64 KiB); it must not be negative.
	MaxResultBytes int
}

// DefaultLists returns the default list names of a kind:
// "<kind>-input", "<kind>-output" and "<kind>-dead".
func DefaultLists(kind string) Lists {
	return Lists{Input: kind + "-input", Output: kind + "-output", Dead: kind + "-dead"}
}

// DefaultListsOn returns the default list names of a kind on a Redis of
// topology t: DefaultLists on one server or a Sentinel set (the names are
// unchanged), and on a Redis Cluster the name as a hash tag,
// "{<kind>}-input", "{<kind>}-output" and "{<kind>}-dead", so that every key
// of the kind lives in one slot (see CheckTag) and each kind in its own.
func DefaultListsOn(t Topology, kind string) Lists {
	if t == Cluster {
		return DefaultLists("{" + kind + "}")
	}
	return DefaultLists(kind)
}

// Tag returns the hash tag of key as Redis Cluster reads it: the text
// between the first '{' and the first '}' after it, when not empty; "" when
// key has none (Redis Cluster then hashes the whole key).
func Tag(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	if !ok {
		return ""
	}
	tag, _, ok := strings.Cut(rest, "}")
	if !ok {
		return ""
	}
	return tag
}

// CheckTag checks that the lists share one hash tag, as a Redis Cluster
// needs: a kind's Lua scripts and transactions touch keys derived from its
// input, output and dead lists together (a fetch, an acknowledgement with
// its dead letters, the incident window), which must all be in one slot.
// Every derived key (processing lists, heartbeats, pauses, throttle holds,
// incident buckets, gauges) starts with a list's name, so it carries the
// list's tag.
func (l Lists) CheckTag() error {
	tag := Tag(l.Input)
	if strings.ContainsAny(tag, `*?[]\`) {
		// Recover finds processing lists with SCAN, whose pattern escapes
		// these: the escaped tag would name another slot.
		return fmt.Errorf("the hash tag {%s} of the list %q may not hold * ? [ ] or \\: rename it", tag, l.Input)
	}
	if tag != "" && Tag(l.Output) == tag && Tag(l.Dead) == tag {
		return nil
	}
	return fmt.Errorf("on a Redis Cluster a kind's lists must share one hash tag, so that its keys stay in one slot: "+
		"input %q (%s), output %q (%s) and dead %q (%s) do not; name them like %q, %q and %q "+
		"(or leave them unset: the defaults on a cluster are tagged so)",
		l.Input, tagText(l.Input), l.Output, tagText(l.Output), l.Dead, tagText(l.Dead),
		"{big_tables}-input", "{big_tables}-output", "{big_tables}-dead")
}

func tagText(key string) string {
	if t := Tag(key); t != "" {
		return "tag {" + t + "}"
	}
	return "no tag"
}

// Processing returns the key of the processing list that holds the results
// instance instanceID took from the output list but has not acknowledged yet:
// "<output>:processing:<instanceID>".
//
// All keys of a drain derive from the output list name, so in Redis Cluster
// they share its hash tag (see CheckTag).
func (l Lists) Processing(instanceID string) string {
	return l.Output + processingInfix + instanceID
}

// Ahead returns the key of the list that holds, behind the processing
// list, the batches instance instanceID fetched ahead while the processing
// list held batches in flight: "<output>:processing:<instanceID>:ahead".
// Together, the processing list then this one hold the instance's results
// in the order taken; when the processing list empties, this list becomes
// it (RENAME). To the SCAN of processing lists it looks like the processing
// list of an instance "<instanceID>:ahead", and the instance keeps that
// name's heartbeat alive too, so that a service of an earlier version, which
// knows only processing lists, recovers it when the instance dies and not
// before.
func (l Lists) Ahead(instanceID string) string {
	return l.Processing(instanceID + aheadSuffix)
}

// aheadSuffix turns an instance ID into the name under which its ahead list
// appears among the processing lists (see Ahead).
const aheadSuffix = ":ahead"

// CheckInstanceID says what is wrong with an instance ID: it must not be
// empty, and it must not end in ":ahead", the suffix that names another
// instance's ahead list (see Ahead).
func CheckInstanceID(id string) error {
	switch {
	case id == "":
		return errors.New("instance ID is empty (use a stable, unique name such as the host name)")
	case strings.HasSuffix(id, aheadSuffix):
		return fmt.Errorf("instance ID %q ends in %q, which names the ahead list of instance %q in Redis; choose another name", id, aheadSuffix, strings.TrimSuffix(id, aheadSuffix))
	}
	return nil
}

// scratchKey is the key the fetch script copies slices of a batch into to
// weigh them (MEMORY USAGE); it never outlives one script.
func (l Lists) scratchKey(instanceID string) string {
	return l.Output + ":scratch:" + instanceID
}

// Heartbeat returns the key whose existence says that instance instanceID is
// alive: "<output>:heartbeat:<instanceID>". It expires after the drain's
// heartbeat TTL unless refreshed.
func (l Lists) Heartbeat(instanceID string) string {
	return l.Output + ":heartbeat:" + instanceID
}

// Lease returns the key of the service's answer to the last request for
// more time of attempt attemptUID (a LeaseAnswer as JSON), which its worker
// reads: "<output>:lease:<attemptUID>".
func (l Lists) Lease(attemptUID string) string {
	return l.Output + ":lease:" + attemptUID
}

// batchKey holds the token of the batch an instance has in flight; an Ack
// with another token (a delayed Ack of a batch that was recovered meanwhile)
// changes nothing. With no batch in flight it holds, for a minute, the
// token the last Ack set (see ackScript).
func (l Lists) batchKey(instanceID string) string {
	return l.Output + ":batch:" + instanceID
}

const processingInfix = ":processing:"

// The keys below derive from the input list's name, so they share its Redis
// Cluster hash tag, if any, and two deployments whose lists differ never
// share one (docs/operating.md lists every key the service writes).

// PriorityInput returns the input list of the jobs of one priority level
// that has a list of its own (a lane): "<input>:p<level>", e.g.
// "big_tables-input:p0" ("<input>:p-5" for level -5). Workers pop the
// lanes before the input list (see Inputs).
func (l Lists) PriorityInput(level int) string {
	return l.Input + ":p" + strconv.Itoa(level)
}

// Inputs returns the lists a worker pops, in the order it must try them:
// the lanes' lists (PriorityInput) in the order of lanes, most urgent
// first, then Input. One BLPOP on all of them takes the first job of the
// first list that has one.
func (l Lists) Inputs(lanes []int) []string {
	out := make([]string, 0, len(lanes)+1)
	for _, lane := range lanes {
		out = append(out, l.PriorityInput(lane))
	}
	return append(out, l.Input)
}

// PopReceipt returns the key where a worker's pop of more jobs from list
// keeps what it took, so that the pop sent again after its reply was lost
// returns the same jobs (see the reference worker's popScript):
// "<list>:pop:<popper>:<seq>", popper unique to the worker and seq to its
// pop. It shares list's hash tag.
func PopReceipt(list, popper string, seq uint64) string {
	return list + ":pop:" + popper + ":" + strconv.FormatUint(seq, 10)
}

// KindPause returns the key whose existence pauses the whole kind (the
// operator's pause, a PauseInfo as JSON): "<input>:paused".
func (l Lists) KindPause() string { return l.Input + ":paused" }

// PausedModels returns the hash of the kind's paused models (model key ->
// PauseInfo as JSON): "<input>:paused-models".
func (l Lists) PausedModels() string { return l.Input + ":paused-models" }

// Throttle returns the sorted set of the kind's throttle holds (member: the
// group, score: the hold's end in Unix ms): "<input>:throttle". Workers read
// it too, to answer a held group's jobs without a request.
func (l Lists) Throttle() string { return l.Input + ":throttle" }

// IncidentBucket returns the hash that counts the kind's results and
// failures in the minute unixMinute (Unix seconds / 60) of the incident
// window: "<input>:incident:<unixMinute>".
func (l Lists) IncidentBucket(unixMinute int64) string {
	return l.Input + ":incident:" + strconv.FormatInt(unixMinute, 10)
}

// IncidentWorker returns the key set for one window by a result with
// "scope":"worker": "<input>:incident:worker".
func (l Lists) IncidentWorker() string { return l.Input + ":incident:worker" }

// GaugeLock returns the key whose holder counts the kind's alert gauges for
// one interval: "<input>:gauges:lock".
func (l Lists) GaugeLock() string { return l.Input + ":gauges:lock" }

// GaugeSnapshot returns the key of the kind's last counted gauges, which
// every instance reports: "<input>:gauges:snapshot".
func (l Lists) GaugeSnapshot() string { return l.Input + ":gauges:snapshot" }

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

// StatsMinute returns the hash of the kind's activity in the minute
// unixMinute (Unix seconds / 60), which the dashboard's charts read:
// "<input>:stats:<unixMinute>" (see StatsAdd and StatsSample).
func (l Lists) StatsMinute(unixMinute int64) string {
	return l.Input + ":stats:" + strconv.FormatInt(unixMinute, 10)
}

// StatsTen returns the hash of the kind's activity in the ten minutes
// unixTen (Unix seconds / 600), the coarser series of the day's charts:
// "<input>:stats10:<unixTen>".
func (l Lists) StatsTen(unixTen int64) string {
	return l.Input + ":stats10:" + strconv.FormatInt(unixTen, 10)
}
