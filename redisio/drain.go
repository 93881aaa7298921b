package redisio

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
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

// ErrRecovered is returned (wrapped) by Ack and by Next when the batches in
// flight are no longer in this instance's processing list: the heartbeat
// expired (the instance was paused longer than the heartbeat TTL) and
// Recover, of another instance or of this one, moved them back to the
// output list. Nothing is lost; the results come back and are applied
// again, which changes nothing (see Drain). Log it as a warning; a
// heartbeat TTL shorter than the time a batch takes to apply causes it.
var ErrRecovered = errors.New("batch was taken back from the processing list before it was acknowledged")

// Message is one result taken from an output list.
type Message struct {
	// Raw is the message exactly as the worker pushed it; when the message
	// is longer than the size limit, only its first ExcerptBytes (and a
	// byte more, so that a cut character can be recognised): such a message
	// is never copied whole out of Redis, and Err says it is too long.
	// Read it, do not modify it: it is the reply's own memory (replyBytes).
	Raw []byte
	// Size is the length of the whole message in bytes (len(Raw) unless the
	// message is over the limit).
	Size int
	// Result is the decoded message; zero when Err is set by decoding.
	Result Result
	// Err is why the message cannot be applied: a decode error (wrapping
	// ErrInvalidResult) set by Fetch. The caller may set its own (e.g. unknown
	// model) before passing the message as dead to Ack.
	Err error

	batch uint64 // counter of the Fetch or Next that returned it
	sha1  string // hex SHA-1 of the whole message, set for an oversized one
}

// Drain takes results off one output list reliably, for one instance. It
// is an at-least-once queue:
//
//   - Fetch moves results atomically from the output list to this instance's
//     processing list (Lists.Processing; a batch fetched ahead may go to the
//     ahead list behind it, Lists.Ahead) and returns them; a result is
//     always in exactly one of the output list and those.
//   - The caller applies them and commits the database transaction, then
//     calls Ack, which removes exactly that batch from the processing list
//     and pushes the dead letters in one atomic step.
//   - Next fetches the following batch while earlier ones are still in
//     flight (being applied), so that a poller can read, and stub, the next
//     batch while its database applies the current one; Ack then takes the
//     batches in the order they were fetched.
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
// Fetch, Next, Ack and Recover must not be called concurrently (one
// goroutine, or several that hand over with a happens-before edge, such as
// a channel); Heartbeat may be called from any goroutine.
type Drain struct {
	c       *Client
	lists   Lists
	id      string
	ttl     time.Duration
	limit   int // size limit of one result
	maxDead int
	err     error  // configuration error, returned by every method
	token   string // random per Drain; with epoch it names the batches in flight
	// epoch changes when the batches in flight are abandoned (Fetch,
	// Recover, or Redis says they were taken back): the batch key holds
	// token-epoch while they are in flight.
	epoch  uint64
	seq    uint64   // counter of the last batch fetched
	acks   uint64   // Acks done: part of the batch token (batchToken)
	flight []flight // the batches fetched and not acknowledged, oldest first
	keys   drainKeys
	// beatAt is when the heartbeat was last refreshed (unix nanoseconds,
	// by Heartbeat or the fetch script); Fetch's wait skips the refresh
	// while the key has long enough to live (see Fetch).
	beatAt atomic.Int64
}

type drainKeys struct {
	output, processing, heartbeat, batch, dead string
	ahead, aheadBeat, scratch                  string // see Lists.Ahead
}

// flight is a batch fetched and not yet acknowledged: its counter and its
// number of messages (its place in the processing list follows the earlier
// batches in flight).
type flight struct {
	seq uint64
	n   int
}

// inFlight returns the number of messages of the batches in flight.
func (d *Drain) inFlight() int {
	n := 0
	for _, f := range d.flight {
		n += f.n
	}
	return n
}

// abandon forgets the batches in flight: their messages stay in the
// processing list (a Fetch returns them again) or were moved back to the
// output list (Recover).
func (d *Drain) abandon() {
	d.epoch++
	d.flight = d.flight[:0]
}

// Drain returns the drain of lists.Output for instance instanceID.
// heartbeatTTL is how long the instance counts as alive after its last Fetch
// or Heartbeat; 0 means DefaultHeartbeatTTL (30 s), and it must be at least
// MinHeartbeatTTL (1 s). lists.Output and lists.Dead and instanceID must not
// be empty, and lists.MaxDead and lists.MaxResultBytes must not be negative
// (0 means their defaults). A configuration error is returned by every
// method of the Drain.
func (c *Client) Drain(lists Lists, instanceID string, heartbeatTTL time.Duration) *Drain {
	if heartbeatTTL == 0 {
		heartbeatTTL = DefaultHeartbeatTTL
	}
	d := &Drain{c: c, lists: lists, id: instanceID, ttl: heartbeatTTL,
		limit: cmp.Or(lists.MaxResultBytes, c.cfg.MaxResultBytes), maxDead: cmp.Or(lists.MaxDead, DefaultMaxDead)}
	var errs []error
	if lists.Output == "" {
		errs = append(errs, errors.New("output list name is empty"))
	}
	if lists.Dead == "" {
		errs = append(errs, errors.New("dead-letter list name is empty"))
	}
	if err := CheckInstanceID(instanceID); err != nil {
		errs = append(errs, err)
	}
	if lists.MaxDead < 0 {
		errs = append(errs, fmt.Errorf("MaxDead is %d, want 0 (default %d) or more", lists.MaxDead, DefaultMaxDead))
	}
	if lists.MaxResultBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxResultBytes is %d, want 0 (default %d) or more", lists.MaxResultBytes, c.cfg.MaxResultBytes))
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
		ahead:      lists.Ahead(instanceID),
		aheadBeat:  lists.Heartbeat(instanceID + aheadSuffix),
		scratch:    lists.scratchKey(instanceID),
	}
	return d
}

// fetchScript refreshes the heartbeats (the instance's, and its ahead
// list's, see Lists.Ahead), marks the batches in flight and returns the
// next batch. The instance's results are the processing list followed by
// the ahead list; the script reads first what of them follows the first
// ARGV[9] (the batches still in flight, which Next skips; after them, what
// a previous Fetch left unacknowledged, read in place with LINDEX), then
// messages read from the head of the output list and moved to the tail of
// those lists (the ahead list when it holds any, else the processing
// list), until the batch holds max messages or the next one would take it
// over ARGV[5] bytes.
//
// A batch of only new messages, of at least ARGV[10] (0: never), moves
// natively when the ahead list is empty: COPY and LTRIM (or, when the
// output list is long enough that copying all of it costs more, SORT ...
// BY nosort LIMIT STORE) copy it into the processing list when that is empty, else into
// the ahead list, LTRIM cuts it from the output list, and the script
// returns its count (negative: in the ahead list) instead of the
// messages, which Fetch reads with LRANGE (in MULTI/EXEC, so from the
// master even where reads may go to replicas). The move
// is kept only when the batch's memory (MEMORY USAGE, of the batch or of
// slices of it copied into a scratch key) proves that no message is over
// the size limit and that all of them fit ARGV[5] bytes; else the copy is
// deleted and the messages move through Lua as below. This spares Redis
// turning each message into a Lua string, pushing it back and returning it
// (about 0.4 µs of Redis CPU per result).
//
// Otherwise the output list is read in slices of up to 1000 (LRANGE) when
// all of it takes at most ARGV[6] bytes of memory (MEMORY USAGE), else one
// message at a time (LINDEX), so that no read copies much more than one
// message over the limit.
//
// A message longer than the size limit ARGV[4] is never returned, nor moved:
// the script replaces it by a stub, ARGV[8] followed by "<size> <sha1 hex>
// <first ARGV[7] bytes>", which takes its place in the processing list (and
// back in the output list, should Recover move it there) until the batch is
// acknowledged. Fetch turns a stub into a Message with a decode error, so the
// poller dead-letters it with its Ack like any other invalid result. Reading
// and hashing a huge message blocks Redis for a while, so the script stops
// after the oversized message that brings their total to ARGV[6] bytes.
//
// When ARGV[9] is not 0 and the batch key no longer holds ARGV[3] (Recover
// of another instance took the batches in flight back), or the two lists
// hold fewer than ARGV[9] messages, the script changes nothing but the
// heartbeats and returns the error RECOVERED.
//
// Under maxmemory the first write (the heartbeat's SET) is refused and the
// script changes nothing; after it Redis lets every write of the script
// through, so it never stops half-way. Each message is pushed to the
// processing (or ahead) list before it is trimmed from the output list.
//
// KEYS: output, processing, heartbeat, batch, ahead, ahead's heartbeat,
// scratch. ARGV: max, ttl ms, batch token, size limit, batch bytes,
// oversized bytes, excerpt bytes, stub prefix, messages in flight, least
// native move.
var fetchScript = redis.NewScript(`
redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
redis.call('SET', KEYS[6], '1', 'PX', ARGV[2])
local skip = tonumber(ARGV[9])
local np, nq = redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[5])
if skip > 0 and (redis.call('GET', KEYS[4]) ~= ARGV[3] or np + nq < skip) then
  return redis.error_reply('RECOVERED the batches in flight were taken back from the processing list')
end
local max, limit, budget = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5])
local bigmax, excerpt, least = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[10])
local out, bytes, big = {}, 0, 0
local function stub(e)
  big = big + #e
  return ARGV[8] .. #e .. ' ' .. redis.sha1hex(e) .. ' ' .. string.sub(e, 1, excerpt)
end
-- oversized(e) says whether e is over the limit and not already a stub (a
-- stub is longer than a small limit).
local function oversized(e)
  return #e > limit and string.sub(e, 1, #ARGV[8]) ~= ARGV[8]
end
-- fits says whether a message of n bytes may join the batch (a stub always
-- joins while the batch has room and the oversized bytes are under bigmax).
local function fits(n)
  return #out < max and (#out == 0 or bytes + n <= budget) and big < bigmax
end
-- The i-th message (from 0) of the processing list then the ahead list.
local function at(i)
  if i < np then return redis.call('LINDEX', KEYS[2], i) end
  return redis.call('LINDEX', KEYS[5], i - np)
end
local function put(i, e)
  if i < np then redis.call('LSET', KEYS[2], i, e) else redis.call('LSET', KEYS[5], i - np, e) end
end
-- proven says whether the k messages of list key are each at most limit
-- bytes long and together at most budget: a list's memory (SAMPLES 0
-- weighs every node) is at least the length of each of its messages, and
-- of their sum less 20 bytes each (a number is stored in fewer bytes than
-- its text, which is at most 20 long). A batch that weighs more than limit
-- is weighed in slices, each about half the limit, copied to the scratch
-- key (COPY, then LTRIM: a copy of the list's nodes, no work per message);
-- each slice copies the whole batch, so one heavier than 4 limits (more
-- than 8 slices) is left to the Lua path. A command Redis refuses (an ACL
-- that denies COPY or MEMORY) proves nothing: pcall, and false, so that
-- the caller deletes its copy and the Lua path moves the batch (a script's
-- writes are not undone when it stops on an error).
local function proven(key, k)
  local u = redis.pcall('MEMORY', 'USAGE', key, 'SAMPLES', '0')
  if type(u) ~= 'number' or limit < 32 or u + 20 * k > budget or u > 4 * limit then return false end
  if u <= limit then return true end
  local m = math.max(1, math.floor(k / math.ceil(2 * u / limit)))
  local ok = true
  for off = 0, k - 1, m do
    if redis.pcall('COPY', key, KEYS[7], 'REPLACE') ~= 1 then ok = false break end
    redis.call('LTRIM', KEYS[7], off, off + m - 1)
    local s = redis.pcall('MEMORY', 'USAGE', KEYS[7], 'SAMPLES', '0')
    if type(s) ~= 'number' or s > limit then ok = false break end
  end
  redis.call('DEL', KEYS[7])
  return ok
end
local n = np + nq
local i = skip
while i < n and fits(0) do
  local e = at(i)
  if oversized(e) then
    e = stub(e)
    put(i, e)
  elseif not fits(#e) then
    break
  end
  out[#out + 1] = e
  bytes = bytes + #e
  i = i + 1
end
if i == n then
  -- SAMPLES 0 counts every element; an embedded server that does not know
  -- the option (miniredis, for refresher demo) counts them all anyway.
  -- A Redis that refuses MEMORY (an ACL) gets no usage: one message at a
  -- time (LINDEX), below.
  local usage = redis.pcall('MEMORY', 'USAGE', KEYS[1], 'SAMPLES', '0')
  if type(usage) == 'table' then usage = redis.pcall('MEMORY', 'USAGE', KEYS[1]) end
  if type(usage) ~= 'number' then usage = nil end
  if least > 0 and #out == 0 and nq == 0 and usage and usage <= bigmax then
    local total = redis.call('LLEN', KEYS[1])
    local k = math.min(max, total)
    local dest, sign = KEYS[2], 1
    if np > 0 then dest, sign = KEYS[5], -1 end
    -- Not tried when the batch, weighed as its share of the output list,
    -- is too heavy for the proof: the copy would be wasted.
    if k >= least and usage * k <= 4 * limit * total then
      -- dest is empty (no key). COPY copies the output list's nodes whole
      -- and LTRIM cuts the copy to the batch: its cost follows the list's
      -- memory, about 0.23 µs of Redis per KiB. SORT copies just the
      -- batch, message by message: about 0.2 µs per message plus 0.9 per
      -- KiB of them. So COPY while usage <= k * (800 + 3 * the bytes of
      -- a message): a list of up to about 12 batches of the small results
      -- a bench's workers send, under 4 of 1 KiB results
      -- (BenchmarkNativeMoveCopyOrSort).
      local copied
      if usage <= k * (800 + 3 * usage / total) then
        copied = redis.pcall('COPY', KEYS[1], dest)
        if copied == 1 then
          -- The copy keeps the output list's TTL, if it has one: a
          -- processing list must not expire. Refused, the copy goes.
          if type(redis.pcall('PERSIST', dest)) == 'number' then
            redis.call('LTRIM', dest, 0, k - 1)
            copied = k
          else
            redis.call('DEL', dest)
            copied = 0
          end
        end
      else
        copied = redis.pcall('SORT', KEYS[1], 'BY', 'nosort', 'LIMIT', 0, k, 'STORE', dest)
      end
      if copied == k and proven(dest, k) then
        redis.call('LTRIM', KEYS[1], k, -1)
        redis.call('SET', KEYS[4], ARGV[3])
        return sign * k
      end
      if type(copied) == 'number' and copied > 0 then redis.call('DEL', dest) end
    end
  end
  local tail = KEYS[2]
  if nq > 0 then tail = KEYS[5] end
  local moved = {}
  local function flush()
    if #moved > 0 then
      redis.call('RPUSH', tail, unpack(moved))
      redis.call('LTRIM', KEYS[1], #moved, -1)
      moved = {}
    end
  end
  -- When the whole output list takes no more memory than the oversized
  -- bytes one fetch may read, it is read in slices (LRANGE): fast, and no
  -- slice can hold more than that. Otherwise one message at a time.
  while usage and usage <= bigmax and fits(0) do
    local want = math.min(max - #out, 1000)
    local items = redis.call('LRANGE', KEYS[1], 0, want - 1)
    -- The slice is checked in place (fits and oversized written out, as
    -- this loop runs for every result): a stub replaces its message in
    -- items, and the first take messages are moved and returned from items
    -- itself, without copying each into other tables.
    local full, take, count = false, 0, #out
    for j = 1, #items do
      local e = items[j]
      local size = #e
      if size > limit and oversized(e) then
        e = stub(e)
        items[j] = e
        size = #e
      elseif not (count < max and (count == 0 or bytes + size <= budget) and big < bigmax) then
        full = true
        break
      end
      take = j
      count = count + 1
      bytes = bytes + size
      if not (count < max and bytes <= budget and big < bigmax) then
        full = true
        break
      end
    end
    if take > 0 then
      redis.call('RPUSH', tail, unpack(items, 1, take))
      redis.call('LTRIM', KEYS[1], take, -1)
      if #out == 0 and take == #items then
        out = items
      else
        local o = #out
        for j = 1, take do out[o + j] = items[j] end
      end
    end
    if full or #items < want then break end
  end
  while fits(0) do
    local e = redis.call('LINDEX', KEYS[1], #moved)
    if not e then break end
    if oversized(e) then
      flush()
      e = stub(e)
      redis.call('RPUSH', tail, e)
      redis.call('LTRIM', KEYS[1], 1, -1)
    else
      if not fits(#e) then break end
      moved[#moved + 1] = e
      if #moved == 1000 then flush() end
    end
    out[#out + 1] = e
    bytes = bytes + #e
  end
  flush()
end
if #out == 0 then return {} end
redis.call('SET', KEYS[4], ARGV[3])
return out
`)

// ackScript, if the batches in flight are still this instance's (the batch
// key holds their token), pushes the dead letters and caps the dead-letter
// list, then removes the first n messages of the processing list followed
// by the ahead list (the oldest batches), renames the ahead list to the
// processing list when that empties, and sets the batch key to ARGV[5],
// the next token: the token of the batches left in flight, or, when
// ARGV[4] is "1" (no other batch in flight), a mark that expires after
// ARGV[6] ms. So the script is done at most once, and says so each time
// it is sent: go-redis sends a command again when its reply was lost
// (MaxRetries), although Redis ran it; the second run finds the next
// token, changes nothing and returns 1, where it would remove the next
// batch in flight, unapplied, or, finding no token, report the batch
// taken back (ErrRecovered), and the poller would skip its counts. The
// pushes come first and the type of
// the dead list is checked before any write, so a dead letter that cannot
// be written (the key holds another type, or Redis is at maxmemory, which
// refuses the first write of a script) leaves the batch in the processing
// list.
//
// KEYS: processing, batch, dead, ahead. ARGV: n, batch token, max dead,
// last, the next batch token, the last mark's ttl ms, dead letters...
var ackScript = redis.NewScript(`
local token = redis.call('GET', KEYS[2])
if token == ARGV[5] then return 1 end
if token ~= ARGV[2] then return 0 end
local n, np = tonumber(ARGV[1]), redis.call('LLEN', KEYS[1])
if np + redis.call('LLEN', KEYS[4]) < n then return 0 end
if #ARGV > 6 then
  local t = redis.call('TYPE', KEYS[3]).ok
  if t ~= 'list' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE the dead-letter list ' .. KEYS[3] .. ' holds a ' .. t ..
      ', not a list: rename or delete that key (the batch waits in the processing list until then)')
  end
  for i = 7, #ARGV, 1000 do
    redis.call('RPUSH', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  redis.call('LTRIM', KEYS[3], -tonumber(ARGV[3]), -1)
end
redis.call('LTRIM', KEYS[1], n, -1)
if n >= np then
  if n > np then redis.call('LTRIM', KEYS[4], n - np, -1) end
  if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('RENAME', KEYS[4], KEYS[1]) end
end
if ARGV[4] == '1' then redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6]) else redis.call('SET', KEYS[2], ARGV[5]) end
return 1
`)

// recoverScript moves an instance's ahead list and then its processing list
// back to the head of the output list, so that they come back in their
// order, unless ARGV[1] is "1" and the heartbeat still exists.
//
// KEYS: processing, heartbeat, output, batch, ahead. ARGV: check heartbeat.
var recoverScript = redis.NewScript(`
if ARGV[1] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local n = 0
while redis.call('LMOVE', KEYS[5], KEYS[3], 'RIGHT', 'LEFT') do n = n + 1 end
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
// abandons the batches in flight, whose messages are part of the new one.
// To fetch more while a batch is applied, use Next.
//
// When the output list is empty, Fetch waits up to block for a result, in
// blocking steps of 1 s (so a block below 1 s waits up to 1 s and ctx is
// checked about once a second), and returns the result that arrived together
// with any that are queued behind it. block <= 0 does not wait. It returns no
// messages and a nil error when nothing arrived in time; ctx's error when ctx
// ends first.
//
// The first message costs one Lua round trip (or a BLMOVE and a Lua round
// trip when it had to wait); the rest of the batch comes in the same script,
// or, when the script moved minFastMove results or more natively, with one
// LRANGE more.
func (d *Drain) Fetch(ctx context.Context, max int, block time.Duration) ([]Message, error) {
	if d.err != nil {
		return nil, d.err
	}
	if max < 1 {
		return nil, fmt.Errorf("fetch from %q: max is %d, want at least 1", d.lists.Output, max)
	}
	d.abandon() // the batches in flight, if any, are part of this one
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
		// processing list before the next fetchOnce: it is refreshed unless
		// it lives at least a third of its TTL past this blocking step
		// (so an idle Fetch refreshes it about every TTL/3, not every step).
		if time.Since(time.Unix(0, d.beatAt.Load())) > d.ttl-d.ttl/3-blockStep {
			if err := d.Heartbeat(ctx); err != nil {
				return nil, fmt.Errorf("fetch from %q: %w", d.lists.Output, err)
			}
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

// Next returns the batch that follows the batches in flight (fetched and
// not yet acknowledged), which it leaves in flight: a poller calls it while
// its database applies the current batch, so that reading the next one,
// and stubbing its oversized messages inside Redis, does not wait for the
// database, nor the database for it. It does not wait for results: it
// returns no messages and a nil error when none are queued. Ack takes the
// batches in the order they were fetched. With no batch in flight, Next is
// Fetch without waiting.
//
// If Recover (of another instance, after this one's heartbeat expired)
// took the batches in flight back, Next changes nothing, forgets them and
// returns ErrRecovered; they are applied again when fetched again.
func (d *Drain) Next(ctx context.Context, max int) ([]Message, error) {
	if d.err != nil {
		return nil, d.err
	}
	if max < 1 {
		return nil, fmt.Errorf("fetch from %q: max is %d, want at least 1", d.lists.Output, max)
	}
	return d.fetchOnce(ctx, max)
}

// errRecoveredReply starts the error fetchScript returns when the batches
// in flight were taken back.
const errRecoveredReply = "RECOVERED "

func (d *Drain) fetchOnce(ctx context.Context, most int) ([]Message, error) {
	least, err := d.c.fastMoveMin(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch up to %d results from %q: %w", most, d.lists.Output, err)
	}
	sent := time.Now()
	skip := d.inFlight()
	cmd := fetchScript.Run(ctx, d.c.rdb,
		[]string{d.keys.output, d.keys.processing, d.keys.heartbeat, d.keys.batch, d.keys.ahead, d.keys.aheadBeat, d.keys.scratch},
		most, d.ttl.Milliseconds(), d.batchToken(), d.limit, max(d.c.cfg.MaxBatchBytes, d.limit),
		maxOversizedPerFetch, ExcerptBytes+1, stubPrefix, skip, least)
	var res []string
	moved, err := cmd.Int64()
	if err != nil && cmd.Err() == nil { // not a count: the messages
		res, err = cmd.StringSlice()
	}
	if err != nil && strings.HasPrefix(err.Error(), errRecoveredReply) {
		d.beatAt.Store(sent.UnixNano())
		d.abandon()
		return nil, fmt.Errorf("fetch from %q after %d results in flight: %w", d.lists.Output, skip, ErrRecovered)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch up to %d results from %q: %w", most, d.lists.Output, err)
	}
	d.beatAt.Store(sent.UnixNano()) // the script's first write is the heartbeat
	if moved != 0 {
		// Moved natively: the batch is the whole list it was copied into.
		key := d.keys.processing
		if moved < 0 {
			key, moved = d.keys.ahead, -moved
		}
		// In MULTI/EXEC, which go-redis always sends to the master: a
		// plain LRANGE may go to a replica (a cluster URL's read_only,
		// route_by_latency, route_randomly), which can lag behind the
		// move and still hold the previous batch.
		var lr *redis.StringSliceCmd
		_, err = d.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			lr = p.LRange(ctx, key, 0, moved-1)
			return nil
		})
		if err == nil {
			res, err = lr.Result()
		}
		if err != nil {
			// In the lists, like a batch whose reply was lost: the next
			// Fetch returns it.
			return nil, fmt.Errorf("read the %d results fetched from %q: %w", moved, d.lists.Output, err)
		}
		if len(res) != int(moved) {
			// Taken back between the two calls (only Recover, after the
			// heartbeat expired, takes from these lists).
			d.abandon()
			return nil, fmt.Errorf("fetch from %q after %d results in flight: %w", d.lists.Output, skip, ErrRecovered)
		}
	}
	if len(res) == 0 {
		return nil, nil
	}
	d.seq++
	msgs := make([]Message, len(res))
	for i, s := range res {
		m := Message{batch: d.seq}
		if size, sum, excerpt, ok := parseStub(s); ok {
			m.Raw, m.Size, m.sha1 = []byte(excerpt), size, sum
			m.Err = invalid("message is %d bytes, the limit is %d", size, d.limit)
		} else {
			m.Raw, m.Size = replyBytes(s), len(s)
			m.Result, m.Err = DecodeResultLimit(m.Raw, d.limit)
		}
		msgs[i] = m
	}
	d.flight = append(d.flight, flight{seq: d.seq, n: len(msgs)})
	return msgs, nil
}

// replyBytes returns the bytes of s, a string of a fetch's reply, without
// copying them (one allocation and copy per result less): go-redis reads
// each reply string into a buffer of its own, and fetchOnce drops the
// reply once its messages are built, so nothing else refers to them.
func replyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// ackMarkTTL is how long the batch key keeps the next token after the Ack
// of the last batch in flight, for that Ack sent again (see ackScript): longer
// than go-redis's tries of one command with the options Open gives it (4
// tries, a read timeout of 3 s each).
const ackMarkTTL = time.Minute

// ackKeys and ackArgs are ackScript's keys and its arguments before the
// dead letters (room is made for dead of them), for an Ack of n messages.
func (d *Drain) ackKeys() []string {
	return []string{d.keys.processing, d.keys.batch, d.keys.dead, d.keys.ahead}
}

func (d *Drain) ackArgs(n int, last string, dead int) []any {
	return append(make([]any, 0, 6+dead), n, d.batchToken(), d.maxDead, last, d.tokenOf(d.epoch, d.acks+1), ackMarkTTL.Milliseconds())
}

// batchToken is what the batch key holds while the batches in flight are
// this Drain's: its token, the epoch, and the Acks made so far (each Ack
// moves the key on, see ackScript).
func (d *Drain) batchToken() string { return d.tokenOf(d.epoch, d.acks) }

func (d *Drain) tokenOf(epoch, acks uint64) string {
	return d.token + "-" + strconv.FormatUint(epoch, 10) + "-" + strconv.FormatUint(acks, 10)
}

// Ack removes the oldest batches in flight (of the last Fetch, then of each
// Next) from the processing list after the caller committed them, and in
// the same atomic step pushes one dead letter per message of dead to the
// dead-letter list (see AppendDeadLetter for its format) and drops the
// oldest dead letters beyond Lists.MaxDead. msgs must be every message of
// one or more of those batches, oldest first, as fetched (a poller that
// tops a batch up with Next acknowledges all of it at once); dead is the
// subset that cannot be applied (decode errors, unknown models), each with
// Err set. Ack of an abandoned batch
// (Fetch or Recover was called since) is an error and changes nothing. If
// the batch was taken back by Recover meanwhile, Ack changes nothing,
// forgets every batch in flight and returns ErrRecovered (the dead letters
// are written when the batch is fetched again).
//
// When Ack fails, the batch stays in the processing list: the next Fetch
// returns it again, or Recover moves it back to the output list. That
// includes a dead letter that cannot be written (the dead-letter key holds a
// string, Redis is at maxmemory): no dead letter is ever lost, the batch
// waits.
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
	if len(d.flight) == 0 {
		return fmt.Errorf("ack %d results of %q: no batch in flight (Fetch, then Ack once)", len(msgs), d.lists.Output)
	}
	// msgs must be the oldest k batches in flight, whole and in order.
	n, k := 0, 0
	for n < len(msgs) {
		if k == len(d.flight) {
			return fmt.Errorf("ack %d results of %q: the batches in flight have %d; pass the messages of whole batches, in the order fetched", len(msgs), d.lists.Output, n)
		}
		f := d.flight[k]
		for _, m := range msgs[n:min(n+f.n, len(msgs))] {
			switch {
			case m.batch == f.seq:
			case m.batch > f.seq && m.batch <= d.seq:
				return fmt.Errorf("ack results of %q: a message is from a later batch than the oldest in flight (Ack the batches in the order they were fetched)", d.lists.Output)
			default:
				return fmt.Errorf("ack results of %q: a message is from an abandoned batch (Fetch or Recover was called since)", d.lists.Output)
			}
		}
		if n+f.n > len(msgs) {
			return fmt.Errorf("ack %d results of %q: the batch has %d messages; pass every fetched message, dead ones included", len(msgs), d.lists.Output, f.n)
		}
		n += f.n
		k++
	}
	last := "0"
	if k == len(d.flight) {
		last = "1"
	}
	args := d.ackArgs(len(msgs), last, len(dead))
	at := d.c.cfg.Now().UTC().Format(time.RFC3339)
	for _, m := range dead {
		if m.batch < d.flight[0].seq || m.batch > d.flight[k-1].seq {
			return fmt.Errorf("ack results of %q: a dead message is not from the batches acknowledged", d.lists.Output)
		}
		if m.Err == nil {
			return fmt.Errorf("ack results of %q: a dead message has no Err (say why it cannot be applied)", d.lists.Output)
		}
		args = append(args, AppendDeadLetter(nil, m, d.lists.Output, at))
	}
	ok, err := ackScript.Run(ctx, d.c.rdb, d.ackKeys(), args...).Int()
	if err != nil {
		return fmt.Errorf("ack %d results of %q (%d dead): %w", len(msgs), d.lists.Output, len(dead), err)
	}
	if ok == 0 {
		d.abandon()
		return fmt.Errorf("ack %d results of %q: %w", len(msgs), d.lists.Output, ErrRecovered)
	}
	d.flight = d.flight[k:]
	d.acks++
	return nil
}

// heartbeatScript sets the heartbeat keys of an instance and of its ahead
// list (see Lists.Ahead) in one command.
//
// KEYS: heartbeat, ahead's heartbeat. ARGV: ttl ms.
var heartbeatScript = redis.NewScript(`
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
`)

// Heartbeat tells other instances that this one is alive for the heartbeat
// TTL (SET with PX; also under the name of its ahead list, see
// Lists.Ahead). Fetch refreshes it too; the poller calls Heartbeat on
// every loop, and often enough (e.g. every TTL/3) while a batch is applied.
func (d *Drain) Heartbeat(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	sent := time.Now()
	err := heartbeatScript.Run(ctx, d.c.rdb, []string{d.keys.heartbeat, d.keys.aheadBeat}, d.ttl.Milliseconds()).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("refresh heartbeat of instance %q on %q: %w", d.id, d.lists.Output, err)
	}
	d.beatAt.Store(sent.UnixNano())
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
// at start and about once per heartbeat TTL; while batches are in flight,
// call RecoverOthers instead.
func (d *Drain) Recover(ctx context.Context) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	d.abandon() // the batches in flight: their messages go back
	total, err := d.recoverList(ctx, d.id, false)
	if err != nil {
		return total, err
	}
	n, err := d.RecoverOthers(ctx)
	return total + n, err
}

// RecoverOthers is the second half of Recover: it moves back the processing
// lists of the other instances whose heartbeat has expired, and leaves this
// instance's own list and its batches in flight alone. A busy instance,
// which always has a batch fetched ahead, calls it once per heartbeat TTL,
// so that the results of a dead instance are not left waiting until the
// output list runs dry.
func (d *Drain) RecoverOthers(ctx context.Context) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	total := 0
	// On a Redis Cluster SCAN sees one node's keys: go-redis sends a SCAN
	// whose pattern holds a hash tag to the master of the tag's slot, where
	// every processing list of the drain is (they share the output list's
	// tag, see Lists.CheckTag).
	iter := d.c.rdb.Scan(ctx, 0, d.lists.processingPattern(), 100).Iterator()
	prefix := d.lists.Output + processingInfix
	for iter.Next(ctx) {
		id, ok := strings.CutPrefix(iter.Val(), prefix)
		if !ok || id == d.id || id == d.id+aheadSuffix {
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
	keys := []string{d.lists.Processing(id), d.lists.Heartbeat(id), d.lists.Output, d.lists.batchKey(id), d.lists.Ahead(id)}
	n, err := recoverScript.Run(ctx, d.c.rdb, keys, check).Int()
	if err != nil {
		return 0, fmt.Errorf("move results of instance %q back to %q: %w", id, d.lists.Output, err)
	}
	return max(n, 0), nil
}
