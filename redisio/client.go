package redisio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMaxBatchBytes is the default bound of the bytes one Fetch returns
// (Config.MaxBatchBytes): 8 MiB.
const DefaultMaxBatchBytes = 8 << 20

// Config configures a Client. The zero Config is valid.
type Config struct {
	// MaxResultBytes is the size limit of one result message; larger ones go
	// to the dead-letter list. Default DefaultMaxResultBytes (64 KiB).
	MaxResultBytes int
	// MaxBatchBytes bounds the bytes of the results one Fetch returns,
	// whatever its max count: a fetch stops before the result that would
	// exceed it (it always returns at least one). Default
	// DefaultMaxBatchBytes (8 MiB); never below MaxResultBytes.
	MaxBatchBytes int
	// Now is the clock that stamps dead letters ("at"). Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, DefaultMaxResultBytes)
	c.MaxBatchBytes = cmp.Or(c.MaxBatchBytes, DefaultMaxBatchBytes)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.MaxResultBytes < 0 {
		return fmt.Errorf("MaxResultBytes is %d, want 0 (default %d) or more", c.MaxResultBytes, DefaultMaxResultBytes)
	}
	if c.MaxBatchBytes < 0 {
		return fmt.Errorf("MaxBatchBytes is %d, want 0 (default %d) or more", c.MaxBatchBytes, DefaultMaxBatchBytes)
	}
	return nil
}

// Client is refresher's access to one Redis. It is safe for concurrent use.
//
// redisio does not retry: every method makes one attempt (plus whatever
// retries the go-redis client itself is configured for, MaxRetries) and
// returns a wrapped error when Redis is unreachable. The caller decides when
// to try again. Timeouts come from ctx and from the go-redis options
// (DialTimeout, ReadTimeout, ContextTimeoutEnabled).
type Client struct {
	rdb redis.UniversalClient
	cfg Config
	// fastMove says whether fetches may move results natively
	// (fastMoveMin): fastMoveUnknown, fastMoveOn or fastMoveOff.
	fastMove atomic.Int32
}

// New returns a Client with the default Config that talks through rdb (one
// server, a cluster or a Sentinel set; see Open), which the caller owns and
// closes. It panics if rdb is nil (a wiring bug). A kind's keys are used
// together in Lua scripts and transactions, so on a Redis Cluster its lists
// must share one hash tag (see Lists.CheckTag).
func New(rdb redis.UniversalClient) *Client {
	c, err := NewWithConfig(rdb, Config{})
	if err != nil {
		panic(err)
	}
	return c
}

// NewWithConfig is New with a Config; it fails when rdb is nil or cfg is
// invalid.
func NewWithConfig(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("redisio.New: nil Redis client (pass one from redisio.Open)")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("redisio.New: %w", err)
	}
	return &Client{rdb: rdb, cfg: cfg}, nil
}

// Push appends jobs to the right of list (RPUSH) in one command, so that
// either all of them are queued or, when Redis answers with an error, none.
// Workers pop from the left, so jobs are served in the order given. It
// returns the length of the list after the push, which the dispatcher uses
// for backpressure without a separate LLEN. No jobs: no command, 0 and nil.
//
// When the connection breaks after the command was sent, Push cannot know
// whether Redis executed it and returns an error; the caller undoes the
// attempts, and a job that was queued anyway produces a result with an
// attempt UID that is no longer current, which changes nothing.
func (c *Client) Push(ctx context.Context, list string, jobs []Job) (queued int64, err error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	e := newEncoded()
	defer e.free()
	if err := e.add(list, jobs); err != nil {
		return 0, err
	}
	return c.PushRaw(ctx, list, e.vals...)
}

// encoded is the messages of one push, encoded into one buffer. It is
// reused (see newEncoded): a dispatcher pushes a batch of about the same
// size every pass, and the buffer need not be allocated and zeroed each
// time.
type encoded struct {
	buf  []byte
	msgs []rawMessage // views of buf
	vals []any        // &msgs[i], the commands' arguments
	at   timeText     // the last timeout_at encoded
}

// rawMessage is one encoded message as a command argument: go-redis writes
// it through MarshalBinary. A pointer in an interface costs no allocation,
// where a []byte would cost one per message.
type rawMessage []byte

// MarshalBinary implements encoding.BinaryMarshaler.
func (m *rawMessage) MarshalBinary() ([]byte, error) { return *m, nil }

// encodedFree holds encodeds for reuse: a bounded free list, not a
// sync.Pool. A pool keeps what a goroutine puts back in its processor's
// private slot, where the next pass, on another processor after its
// network waits, does not look: about half the pushes allocated and zeroed
// a new buffer (a fifth of a dispatcher pass's bytes).
var encodedFree struct {
	sync.Mutex
	list  []*encoded
	bytes int // the buffers' capacity in list
}

// maxFreeEncodedBytes bounds the buffers the free list keeps: a few
// dispatchers' batches of jobs (192 kB for 1000 typical jobs), or two
// of the largest an encoded keeps (maxPooledBytes).
const maxFreeEncodedBytes = 8 << 20

// newEncoded returns an empty encoded, reused when the free list has one;
// free puts it back once the commands that hold its arguments are done.
func newEncoded() *encoded {
	encodedFree.Lock()
	defer encodedFree.Unlock()
	n := len(encodedFree.list)
	if n == 0 {
		return new(encoded)
	}
	e := encodedFree.list[n-1]
	encodedFree.list[n-1] = nil
	encodedFree.list = encodedFree.list[:n-1]
	encodedFree.bytes -= cap(e.buf)
	return e
}

// maxPooledBytes bounds the buffer one encoded keeps in the free list: a
// push of unusually large jobs does not pin its memory for ever.
const maxPooledBytes = 4 << 20

func (e *encoded) free() {
	if cap(e.buf) > maxPooledBytes {
		return
	}
	clear(e.vals) // the list must not keep the views alive
	clear(e.msgs)
	e.buf, e.msgs, e.vals = e.buf[:0], e.msgs[:0], e.vals[:0]
	encodedFree.Lock()
	defer encodedFree.Unlock()
	if encodedFree.bytes+cap(e.buf) <= maxFreeEncodedBytes {
		encodedFree.list = append(encodedFree.list, e)
		encodedFree.bytes += cap(e.buf)
	}
}

// add encodes jobs for one RPUSH to list and appends them to e.msgs, and
// their arguments to e.vals.
func (e *encoded) add(list string, jobs []Job) error {
	if e.buf == nil {
		e.buf = make([]byte, 0, 192*len(jobs))
	}
	first := len(e.msgs)
	for _, j := range jobs {
		start := len(e.buf)
		var err error
		if e.buf, err = appendJob(e.buf, j, &e.at); err != nil {
			e.msgs = e.msgs[:first]
			return fmt.Errorf("push %d jobs to %q: %w", len(jobs), list, err)
		}
		// A slice of buf: later appends may move buf, not this view.
		e.msgs = append(e.msgs, rawMessage(e.buf[start:len(e.buf):len(e.buf)]))
	}
	// Taken once all are in: appends may move msgs too.
	e.vals = e.vals[:0]
	for i := range e.msgs {
		e.vals = append(e.vals, &e.msgs[i])
	}
	return nil
}

// PushRaw appends already encoded messages (string or []byte) to the right
// of list in one RPUSH and returns the list's length after it. No messages:
// no command, 0 and nil.
func (c *Client) PushRaw(ctx context.Context, list string, msgs ...any) (queued int64, err error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	if list == "" {
		return 0, errors.New("push to Redis: list name is empty")
	}
	n, err := c.rdb.RPush(ctx, list, msgs...).Result()
	if err != nil {
		return 0, fmt.Errorf("push %d messages to %q: %w", len(msgs), list, err)
	}
	return n, nil
}

// Len returns the number of messages in list (0 when it does not exist), for
// backpressure: the dispatcher stops while the input list is too long.
func (c *Client) Len(ctx context.Context, list string) (int64, error) {
	n, err := c.rdb.LLen(ctx, list).Result()
	if err != nil {
		return 0, fmt.Errorf("read length of %q: %w", list, err)
	}
	return n, nil
}
