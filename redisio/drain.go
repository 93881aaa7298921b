package redisio

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/jsontext"
)

// DefaultHeartbeatTTL is the default lifetime of an instance's heartbeat key.
const DefaultHeartbeatTTL = 30 * time.Second

// MinHeartbeatTTL is the shortest heartbeat TTL a Drain accepts: one blocking
// step of Fetch. A shorter TTL would let the processing list of a live but
// waiting instance look abandoned.
const MinHeartbeatTTL = time.Second

// blockStep is how long one BLMOVE waits. go-redis rounds blocking timeouts
// below 1 s up to 1 s and does not interrupt a BLMOVE when ctx is cancelled
// (unless ContextTimeoutEnabled), so Fetch waits in steps of 1 s and checks
// ctx between them.
const blockStep = time.Second

// ErrRecovered is returned (wrapped) by Ack when the batch is no longer in
// this instance's processing list: the heartbeat expired (the instance was
// paused longer than the heartbeat TTL) and Recover, of another instance or of
// this one, moved the batch back to the output list. Nothing is lost; the
// results come back and are applied again, which changes nothing (see
// Drain). Log it as a warning; a heartbeat TTL shorter than the time a batch
// takes to apply causes it.
var ErrRecovered = errors.New("batch was taken back from the processing list before it was acknowledged")

// Message is one result taken from an output list.
type Message struct {
	// Raw is the message exactly as the worker pushed it.
	Raw []byte
	// Result is the decoded message; zero when Err is set by decoding.
	Result Result
	// Err is why the message cannot be applied: a decode error (wrapping
	// ErrInvalidResult) set by Fetch. The caller may set its own (e.g. unknown
	// model) before passing the message as dead to Ack.
	Err error

	batch uint64 // token counter of the Fetch that returned it
}

// Drain takes results off one output list reliably, for one instance. It
// is an at-least-once queue:
//
//   - Fetch moves results atomically from the output list to this instance's
//     processing list (Lists.Processing) and returns them; a result is always
//     in exactly one of the two lists.
//   - The caller applies them and commits the database transaction, then
//     calls Ack, which removes exactly that batch from the processing list
//     and pushes the dead letters in one atomic step.
//   - Fetch (and Heartbeat) keep a heartbeat key with a TTL alive. Recover
//     moves the processing lists of instances whose heartbeat expired, and
//     this instance's own processing list left from a previous run or from a
//     batch that was not acknowledged, back to the head of the output list in
//     their original order, so the next Fetch (of any instance) applies them
//     first.
//
// A poller killed at any instant therefore leaves every result either applied
// or in Redis. A result can be applied twice (killed after the commit and
// before Ack), and that is harmless: applying a result ends its attempt
// (success and failure clear the attempt UID; a retry starts a new one), so
// when the same result comes again its attempt UID is no longer the model's
// current one and it is dropped as stale. A status result applied twice
// writes the same text twice. Exactly-once would need Redis and the database
// in one transaction; at-least-once plus the attempt UID gives the same
// outcome.
//
// Instance IDs must be unique among running instances and should be stable
// across restarts (e.g. the host or pod name), so that a restarted instance
// finds its own processing list at once instead of after the TTL.
//
// Fetch, Ack and Recover must be called from one goroutine (the poller);
// Heartbeat may be called from any goroutine.
type Drain struct {
	c      *Client
	lists  Lists
	id     string
	ttl    time.Duration
	err    error  // configuration error, returned by every method
	token  string // random per Drain; with seq it names a batch
	seq    uint64 // counter of the batch in flight (0: none)
	inBtch int    // number of messages of the batch in flight
	keys   drainKeys
}

type drainKeys struct{ output, processing, heartbeat, batch, dead string }

// Drain returns the drain of lists.Output for instance instanceID.
// heartbeatTTL is how long the instance counts as alive after its last Fetch
// or Heartbeat; 0 means DefaultHeartbeatTTL (30 s), and it must be at least
// MinHeartbeatTTL (1 s). lists.Output and lists.Dead and instanceID must not
// be empty. A configuration error is returned by every method of the Drain.
func (c *Client) Drain(lists Lists, instanceID string, heartbeatTTL time.Duration) *Drain {
	if heartbeatTTL == 0 {
		heartbeatTTL = DefaultHeartbeatTTL
	}
	d := &Drain{c: c, lists: lists, id: instanceID, ttl: heartbeatTTL}
	var errs []error
	if lists.Output == "" {
		errs = append(errs, errors.New("output list name is empty"))
	}
	if lists.Dead == "" {
		errs = append(errs, errors.New("dead-letter list name is empty"))
	}
	if instanceID == "" {
		errs = append(errs, errors.New("instance ID is empty (use a stable, unique name such as the host name)"))
	}
	if heartbeatTTL < MinHeartbeatTTL {
		errs = append(errs, fmt.Errorf("heartbeat TTL %s is shorter than %s", heartbeatTTL, MinHeartbeatTTL))
	}
	if len(errs) > 0 {
		d.err = fmt.Errorf("invalid drain of %q for instance %q: %w", lists.Output, instanceID, errors.Join(errs...))
		return d
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:]) // never fails (crypto/rand)
	d.token = hex.EncodeToString(tok[:])
	d.keys = drainKeys{
		output:     lists.Output,
		processing: lists.Processing(instanceID),
		heartbeat:  lists.Heartbeat(instanceID),
		batch:      lists.batchKey(instanceID),
		dead:       lists.Dead,
	}
	return d
}

// fetchScript refreshes the heartbeat, marks a new batch and tops the
// processing list up to max from the head of the output list, then returns
// the first max messages of the processing list: what a previous Fetch left
// unacknowledged first, then new ones. It moves messages in slices of up to
// 1000 (LRANGE, LTRIM, RPUSH: three commands per slice instead of one LMOVE
// per message; 1000 stays well within Lua's stack for unpack).
//
// KEYS: output, processing, heartbeat, batch. ARGV: max, ttl ms, batch token.
var fetchScript = redis.NewScript(`
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
local max = tonumber(ARGV[1])
local n = redis.call('LLEN', KEYS[2])
while n < max do
  local want = math.min(max - n, 1000)
  local items = redis.call('LRANGE', KEYS[1], 0, want - 1)
  if #items == 0 then break end
  redis.call('LTRIM', KEYS[1], #items, -1)
  redis.call('RPUSH', KEYS[2], unpack(items))
  n = n + #items
  if #items < want then break end
end
if n == 0 then return {} end
redis.call('SET', KEYS[4], ARGV[3])
return redis.call('LRANGE', KEYS[2], 0, max - 1)
`)

// ackScript removes the first n messages of the processing list and pushes
// the dead letters, if the batch is still the one in flight.
//
// KEYS: processing, batch, dead. ARGV: n, batch token, dead letters...
var ackScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
if redis.call('LLEN', KEYS[1]) < tonumber(ARGV[1]) then return 0 end
redis.call('LTRIM', KEYS[1], ARGV[1], -1)
redis.call('DEL', KEYS[2])
for i = 3, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
return 1
`)

// recoverScript moves a processing list back to the head of the output list
// in its order, unless ARGV[1] is "1" and the heartbeat still exists.
//
// KEYS: processing, heartbeat, output, batch. ARGV: check heartbeat.
var recoverScript = redis.NewScript(`
if ARGV[1] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local n = 0
while redis.call('LMOVE', KEYS[1], KEYS[3], 'RIGHT', 'LEFT') do n = n + 1 end
redis.call('DEL', KEYS[4])
return n
`)

// Fetch returns the next batch of at most max results (max >= 1) and keeps
// them in this instance's processing list until Ack. Each Message carries
// the raw bytes and the decoded Result, or the decode error in Err.
//
// If the processing list is not empty (a batch that was fetched but not
// acknowledged), Fetch returns those messages again first; a new Fetch
// abandons the previous batch, whose messages are part of the new one.
//
// When the output list is empty, Fetch waits up to block for a result, in
// blocking steps of 1 s (so a block below 1 s waits up to 1 s and ctx is
// checked about once a second), and returns the result that arrived together
// with any that are queued behind it. block <= 0 does not wait. It returns no
// messages and a nil error when nothing arrived in time; ctx's error when ctx
// ends first.
//
// The first message costs one Lua round trip (or a BLMOVE and a Lua round
// trip when it had to wait); the rest of the batch comes in the same script.
func (d *Drain) Fetch(ctx context.Context, max int, block time.Duration) ([]Message, error) {
	if d.err != nil {
		return nil, d.err
	}
	if max < 1 {
		return nil, fmt.Errorf("fetch from %q: max is %d, want at least 1", d.lists.Output, max)
	}
	d.seq++ // abandons the previous batch, if any
	d.inBtch = 0
	msgs, err := d.fetchOnce(ctx, max)
	if err != nil || len(msgs) > 0 || block <= 0 {
		return msgs, err
	}
	deadline := time.Now().Add(block)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fetch from %q: %w", d.lists.Output, err)
		}
		// The heartbeat covers the message BLMOVE may move into the
		// processing list before the next fetchOnce.
		if err := d.Heartbeat(ctx); err != nil {
			return nil, fmt.Errorf("fetch from %q: %w", d.lists.Output, err)
		}
		err := d.c.rdb.BLMove(ctx, d.keys.output, d.keys.processing, "LEFT", "RIGHT", blockStep).Err()
		switch {
		case errors.Is(err, redis.Nil):
			if !time.Now().Before(deadline) {
				return nil, nil
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("wait for results on %q: %w", d.lists.Output, err)
		}
		return d.fetchOnce(ctx, max)
	}
}

func (d *Drain) fetchOnce(ctx context.Context, max int) ([]Message, error) {
	res, err := fetchScript.Run(ctx, d.c.rdb,
		[]string{d.keys.output, d.keys.processing, d.keys.heartbeat, d.keys.batch},
		max, d.ttl.Milliseconds(), d.batchToken()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("fetch up to %d results from %q: %w", max, d.lists.Output, err)
	}
	if len(res) == 0 {
		return nil, nil
	}
	msgs := make([]Message, len(res))
	for i, s := range res {
		m := Message{Raw: []byte(s), batch: d.seq}
		m.Result, m.Err = DecodeResultLimit(m.Raw, d.c.cfg.MaxResultBytes)
		msgs[i] = m
	}
	d.inBtch = len(msgs)
	return msgs, nil
}

func (d *Drain) batchToken() string {
	return d.token + "-" + strconv.FormatUint(d.seq, 10)
}

// Ack removes the batch of the last Fetch from the processing list after the
// caller committed it, and in the same atomic step pushes one dead letter per
// message of dead to the dead-letter list:
//
//	{"error":"<Err>","list":"<output list>","message":"<Raw as a string>","at":"2026-11-21T14:00:00Z"}
//
// ("message_base64" is added when Raw is not valid UTF-8, since JSON strings
// cannot hold it exactly). msgs must be every message the last Fetch
// returned; dead is the subset that cannot be applied (decode errors, unknown
// models), each with Err set. Ack of an abandoned batch (Fetch or Recover was
// called since) is an error and changes nothing. If the batch was taken back
// by Recover meanwhile, Ack changes nothing and returns ErrRecovered (the
// dead letters are written when the batch is fetched again).
//
// When Ack fails, the batch stays in the processing list: the next Fetch
// returns it again, or Recover moves it back to the output list.
func (d *Drain) Ack(ctx context.Context, msgs, dead []Message) error {
	if d.err != nil {
		return d.err
	}
	if len(msgs) == 0 {
		if len(dead) > 0 {
			return errors.New("ack: dead messages given without the batch (pass every fetched message as msgs)")
		}
		return nil
	}
	seq := d.seq
	if d.inBtch == 0 {
		return fmt.Errorf("ack %d results of %q: no batch in flight (Fetch, then Ack once)", len(msgs), d.lists.Output)
	}
	if len(msgs) != d.inBtch {
		return fmt.Errorf("ack %d results of %q: the last Fetch returned %d; pass every fetched message, dead ones included", len(msgs), d.lists.Output, d.inBtch)
	}
	for _, m := range msgs {
		if m.batch != seq {
			return fmt.Errorf("ack results of %q: a message is from an abandoned batch (Fetch or Recover was called since)", d.lists.Output)
		}
	}
	args := make([]any, 0, 2+len(dead))
	args = append(args, len(msgs), d.batchToken())
	at := d.c.cfg.Now().UTC().Format(time.RFC3339)
	for _, m := range dead {
		if m.batch != seq {
			return fmt.Errorf("ack results of %q: a dead message is not from the batch in flight", d.lists.Output)
		}
		if m.Err == nil {
			return fmt.Errorf("ack results of %q: a dead message has no Err (say why it cannot be applied)", d.lists.Output)
		}
		args = append(args, deadLetter(m, d.lists.Output, at))
	}
	ok, err := ackScript.Run(ctx, d.c.rdb, []string{d.keys.processing, d.keys.batch, d.keys.dead}, args...).Int()
	if err != nil {
		return fmt.Errorf("ack %d results of %q (%d dead): %w", len(msgs), d.lists.Output, len(dead), err)
	}
	d.inBtch = 0
	if ok == 0 {
		return fmt.Errorf("ack %d results of %q: %w", len(msgs), d.lists.Output, ErrRecovered)
	}
	return nil
}

// deadLetter encodes the dead-letter list entry of m.
func deadLetter(m Message, list, at string) []byte {
	b := make([]byte, 0, len(m.Raw)+256)
	b = append(b, `{"error":`...)
	b = jsontext.AppendString(b, m.Err.Error())
	b = append(b, `,"list":`...)
	b = jsontext.AppendString(b, list)
	b = append(b, `,"message":`...)
	b = jsontext.AppendString(b, string(m.Raw))
	if !utf8.Valid(m.Raw) {
		b = append(b, `,"message_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, m.Raw)
		b = append(b, '"')
	}
	b = append(b, `,"at":`...)
	b = jsontext.AppendString(b, at)
	return append(b, '}')
}

// Heartbeat tells other instances that this one is alive for the heartbeat
// TTL (SET with PX). Fetch refreshes it too; the poller calls Heartbeat on
// every loop, and often enough (e.g. every TTL/3) while a batch is applied.
func (d *Drain) Heartbeat(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	if err := d.c.rdb.Set(ctx, d.keys.heartbeat, "1", d.ttl).Err(); err != nil {
		return fmt.Errorf("refresh heartbeat of instance %q on %q: %w", d.id, d.lists.Output, err)
	}
	return nil
}

// Recover moves results that were taken but never acknowledged back to the
// head of the output list, in their original order, and returns how many it
// moved:
//
//   - this instance's own processing list (left by a previous run with the
//     same instance ID, or a batch that was not acknowledged; the batch in
//     flight, if any, is abandoned), and
//   - the processing list of every other instance of this output list whose
//     heartbeat key has expired (found with SCAN).
//
// Each list moves in one Lua script that checks the heartbeat, so a list is
// moved whole or not at all, and never while its instance is alive. Call it
// at start and about once per heartbeat TTL.
func (d *Drain) Recover(ctx context.Context) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	d.seq++ // abandons the batch in flight: its messages go back
	d.inBtch = 0
	total, err := d.recoverList(ctx, d.id, false)
	if err != nil {
		return total, err
	}
	iter := d.c.rdb.Scan(ctx, 0, d.lists.processingPattern(), 100).Iterator()
	prefix := d.lists.Output + processingInfix
	for iter.Next(ctx) {
		id, ok := strings.CutPrefix(iter.Val(), prefix)
		if !ok || id == d.id {
			continue
		}
		n, err := d.recoverList(ctx, id, true)
		total += n
		if err != nil {
			return total, err
		}
	}
	if err := iter.Err(); err != nil {
		return total, fmt.Errorf("scan processing lists of %q: %w", d.lists.Output, err)
	}
	return total, nil
}

func (d *Drain) recoverList(ctx context.Context, id string, checkHeartbeat bool) (int, error) {
	check := "0"
	if checkHeartbeat {
		check = "1"
	}
	keys := []string{d.lists.Processing(id), d.lists.Heartbeat(id), d.lists.Output, d.lists.batchKey(id)}
	n, err := recoverScript.Run(ctx, d.c.rdb, keys, check).Int()
	if err != nil {
		return 0, fmt.Errorf("move results of instance %q back to %q: %w", id, d.lists.Output, err)
	}
	return max(n, 0), nil
}
