// Package worker is the reference worker of refresher: the worked example to
// copy when writing a worker in another language. It uses nothing but the
// documented protocol (docs/protocol.md):
//
//  1. pop a JSON job from the kind's input list (default "<kind>-input"):
//     BLPOP with a 1 s timeout, then LPOP with a count for the rest of the
//     free slots, so a busy worker takes jobs in batches (in a script that
//     keeps what it popped under a receipt, so that the LPOP sent again
//     after a lost reply returns the same jobs: popScript; a plain LPOP
//     when Redis refuses scripts);
//  2. drop a job whose timeout_at has passed: the service has already
//     counted that attempt as timed out, so its result would be stale;
//  3. do the job: an HTTP GET of payload.input_url with a time limit and a
//     body size limit (Fetch), turned into a result by the pure function
//     Classify. input_url is end-user input: the GET connects only to
//     public addresses unless the configuration allows others (see
//     AddressPolicy). While the GET runs, ask the service for more time
//     every Lease/3 (keepLease), and drop the job if it answers that the
//     attempt is over;
//  4. push the JSON result onto the kind's output list (default
//     "<kind>-output") with RPUSH.
//
// A job that cannot be decoded is logged and skipped. A job is in the hands
// of the worker from its pop to the push of its result: a worker killed in
// between loses it, and the service notices at the job's timeout_at and
// retries. That is why a worker stops gracefully: when its context is
// cancelled (SIGTERM), Run stops popping, finishes the jobs in hand, pushes
// their results and returns.
package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/redisio"
)

// Defaults of Config.
const (
	ConcurrencyDefault  = 4
	HTTPTimeoutDefault  = 30 * time.Second
	MaxBodyBytesDefault = 100 << 20 // 100 MB
)

// pollTimeout is the BLPOP timeout. go-redis does not interrupt a blocking
// call when its context is cancelled, so the loop waits at most this long
// before it sees a cancellation. Redis counts BLPOP timeouts in whole seconds
// through go-redis, so 1 s is the shortest.
const pollTimeout = time.Second

// pushAttempts is how often a result push is tried, one second apart, while
// the job's timeout_at has not passed.
const pushAttempts = 5

// Config configures a Worker.
type Config struct {
	// Kind is the kind whose jobs this worker does, e.g. "big_tables".
	// Required.
	Kind string
	// Redis is the client of the service's Redis. Required by Run; leave its
	// ContextTimeoutEnabled off (the default), the worker relies on blocking
	// calls returning on their own timeout.
	Redis redis.UniversalClient
	// Input is the list jobs are popped from. Default "<Kind>-input".
	Input string
	// PriorityInputs are the kind's priority lanes' lists
	// (redisio.Lists.Inputs without Input: "<input>:p<N>", most urgent
	// first). Each pop tries them, in order, before Input, so a job
	// triggered at a high priority does not wait behind the queued ones.
	// Default none.
	PriorityInputs []string
	// Output is the list results are pushed to. Default "<Kind>-output".
	Output string
	// ThrottleGroup is the kind's throttle_group: the payload column that
	// names a job's throttle group (a host, a credential id). When set, a
	// failure with a Retry-After carries the group as throttle_key, so the
	// service holds every row of the group; and a job whose group is held
	// (redisio.Lists.Throttle) is answered as throttled ("scope":"group")
	// without a request. Default "": no groups.
	ThrottleGroup string
	// Lease is how long a job whose work runs asks for at each request for
	// more time, every Lease/3 of the wall clock (docs/protocol.md,
	// "Leases"): the kind's timeout. Default 0: the time the job has left
	// (by Now) when its work begins. Negative: never ask.
	Lease time.Duration
	// Concurrency is the number of jobs done at once. Default 4.
	Concurrency int
	// HTTPTimeout limits one GET, body included. Default 30s.
	HTTPTimeout time.Duration
	// MaxBodyBytes limits the size of one response body: a larger one is a
	// failure. Default MaxBodyBytesDefault (100 MB).
	MaxBodyBytes int64
	// AllowPrivateNetworks and AllowNetworks let the default HTTPClient
	// connect to addresses that are not public (see AddressPolicy). By
	// default every such address is refused: input_url is end-user input.
	AllowPrivateNetworks bool
	AllowNetworks        []netip.Prefix
	// HTTPClient does the GETs; its own Timeout should be zero (HTTPTimeout
	// applies). Default: a client whose transport is NewTransport with the
	// AddressPolicy of AllowPrivateNetworks and AllowNetworks. A client
	// given here is used as it is: build its transport with NewTransport to
	// keep the address checks.
	HTTPClient *http.Client
	// Now is the clock that decides whether a job expired and reads
	// Retry-After dates. Default time.Now.
	Now func() time.Time
	// Logger receives one line per job and every error. Default
	// slog.Default().
	Logger *slog.Logger
	// Tracer makes a span per job, the child of the job's traceparent,
	// and sends its trace context back with the result (docs/protocol.md,
	// "Traces"). Default nil: no spans, and the job's traceparent is sent
	// back as it is, so that the service's trace stays whole.
	Tracer *tracing.Tracer
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	lists := redisio.DefaultLists(c.Kind)
	c.Input = cmp.Or(c.Input, lists.Input)
	c.Output = cmp.Or(c.Output, lists.Output)
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.HTTPTimeout = cmp.Or(c.HTTPTimeout, HTTPTimeoutDefault)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, MaxBodyBytesDefault)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: NewTransport(c.addressPolicy())}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) addressPolicy() AddressPolicy {
	return AddressPolicy{AllowPrivateNetworks: c.AllowPrivateNetworks, AllowNetworks: c.AllowNetworks}
}

func (c Config) validate() error {
	switch {
	case c.Kind == "":
		return errors.New("worker: Kind is required")
	case c.Concurrency < 1:
		return fmt.Errorf("worker: Concurrency must be at least 1, not %d", c.Concurrency)
	case c.HTTPTimeout < 0:
		return fmt.Errorf("worker: HTTPTimeout must be positive, not %s", c.HTTPTimeout)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("worker: MaxBodyBytes must be positive, not %d", c.MaxBodyBytes)
	}
	return nil
}

// Stats counts what a Worker did since it was made.
type Stats struct {
	Done      int64 // results pushed
	Expired   int64 // jobs dropped because their timeout_at had passed
	Malformed int64 // messages skipped because they were not a job
	Lost      int64 // results that could not be pushed
}

// Worker does the jobs of one kind. Make one with New.
type Worker struct {
	cfg                            Config
	done, expired, malformed, lost atomic.Int64
	popper                         string // random, names its pops' receipts
	// popMu guards the pops' state: pops counts the pops that took more
	// jobs, receipt is the last one's whose reply came (see popScript), and
	// plainPop is set once Redis refused the script for good.
	popMu    sync.Mutex
	pops     uint64
	receipt  string
	plainPop bool
}

// New checks cfg, fills in its defaults and returns a worker.
func New(cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, popper: rand.Text()}, nil
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{Done: w.done.Load(), Expired: w.expired.Load(), Malformed: w.malformed.Load(), Lost: w.lost.Load()}
}

// Run pops and does jobs until ctx is cancelled, then finishes the jobs in
// hand, pushes their results and returns nil. Redis errors are logged and
// retried with a backoff of 1 s doubling up to 30 s; they do not end Run.
func (w *Worker) Run(ctx context.Context) error {
	if w.cfg.Redis == nil {
		return errors.New("worker: Redis is required to run (pass a client from redisio.Open or redis.NewClient in Config.Redis)")
	}
	log := w.cfg.Logger.With("kind", w.cfg.Kind)
	log.Info("worker started", "input", w.cfg.Input, "output", w.cfg.Output, "concurrency", w.cfg.Concurrency)

	// slots holds one token per job in hand; its capacity is the concurrency.
	slots := make(chan struct{}, w.cfg.Concurrency)
	var inHand sync.WaitGroup
	backoff := time.Duration(0)
	for {
		// Wait for a free slot, then take every other free slot too.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		free := 1
		for free < w.cfg.Concurrency && tryAcquire(slots) {
			free++
		}
		// Popped jobs are in hand whatever happens to ctx, so the pop itself
		// must not be cut short by a cancellation.
		msgs, err := w.pop(context.WithoutCancel(ctx), free)
		for range free - len(msgs) {
			<-slots
		}
		for _, msg := range msgs {
			inHand.Go(func() {
				defer func() { <-slots }()
				w.handle(context.WithoutCancel(ctx), log, msg)
			})
		}
		if err != nil {
			backoff = min(max(2*backoff, time.Second), 30*time.Second)
			log.Error("pop jobs", "list", w.cfg.Input, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
	}
	log.Info("worker stopping: finishing jobs in hand")
	inHand.Wait()
	log.Info("worker stopped", "done", w.done.Load(), "expired", w.expired.Load(), "malformed", w.malformed.Load(), "lost", w.lost.Load())
	return nil
}

func tryAcquire(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// handle does one message from the input list, start to finish.
func (w *Worker) handle(ctx context.Context, log *slog.Logger, msg string) {
	var job redisio.Job
	if err := json.Unmarshal([]byte(msg), &job); err != nil {
		w.malformed.Add(1)
		log.Error("skip message that is not a job", "err", err, "message", truncate(redact.Text(msg), 200))
		return
	}
	log = log.With("uid", job.UID, "attempt_uid", job.AttemptUID)
	start := w.cfg.Now()
	ctx, span, trace := w.cfg.Tracer.Work(ctx, tracing.Job{Kind: job.Kind, Key: job.UID, AttemptUID: job.AttemptUID, AttemptNo: job.AttemptNo},
		tracing.Context{Parent: job.TraceParent, State: job.TraceState})
	defer span.End()
	job.TraceParent = trace.Parent // what the results say, the requests for more time too
	res, ok, leaseEnd := w.process(ctx, job)
	if !ok {
		w.expired.Add(1)
		span.Outcome("dropped")
		log.Warn("drop expired job", "timeout_at", job.TimeoutAt)
		return
	}
	res.TraceParent = trace.Parent
	span.ResultType(res.Type)
	if res.Type == redisio.ResultFailure {
		span.Fail(res.Reason) // without the URL's secrets (Classify)
	}
	log = log.With("type", res.Type, "reason", res.Reason, "status", res.Status, "took", w.cfg.Now().Sub(start))
	if leaseEnd.After(job.TimeoutAt) {
		job.TimeoutAt = leaseEnd // an extended attempt: the result is on time until its lease's end
	}
	if err := w.push(ctx, job, res); err != nil {
		w.lost.Add(1)
		log.Error("lose result: cannot push it", "err", err)
		return
	}
	w.done.Add(1)
	log.Info("job done")
}

// Process does one job: it returns the result to push, or ok == false when
// the job's timeout_at has passed and it must be dropped, or the service
// answered, while the work ran, that its attempt is over. While the GET
// runs, it asks the service for more time (keepLease). With Config.Redis
// nil it touches no Redis. A job without timeout_at never expires. A payload without a
// string input_url is a malformed URL: a permanent failure.
func (w *Worker) Process(ctx context.Context, job redisio.Job) (res redisio.Result, ok bool) {
	res, ok, _ = w.process(ctx, job)
	return res, ok
}

// process is Process, and says until when the result may be pushed when
// the service extended the attempt (see keepLease; the zero time when it
// did not say).
func (w *Worker) process(ctx context.Context, job redisio.Job) (res redisio.Result, ok bool, leaseEnd time.Time) {
	if !job.TimeoutAt.IsZero() && !w.cfg.Now().Before(job.TimeoutAt) {
		return redisio.Result{}, false, time.Time{}
	}
	group := w.group(job)
	if until := w.heldUntil(ctx, group); !until.IsZero() {
		wait := max(until.Sub(w.cfg.Now()), time.Second)
		return redisio.Result{
			UID: job.UID, AttemptUID: job.AttemptUID, Type: redisio.ResultFailure,
			Reason:            fmt.Sprintf("throttle group %s is held until %s; not requested", group, until.UTC().Format(time.RFC3339)),
			Scope:             redisio.ScopeGroup,
			ThrottleKey:       group,
			RetryAfterSeconds: int((wait + time.Second - 1) / time.Second),
		}, true, time.Time{}
	}
	rawURL, _ := job.Payload["input_url"].(string)
	fctx, cancel := context.WithCancel(ctx)
	stop := w.keepLease(ctx, job, cancel)
	o := w.Fetch(fctx, rawURL)
	over, leaseEnd := stop()
	cancel()
	if over {
		return redisio.Result{}, false, time.Time{}
	}
	res = Classify(o, w.cfg.Now())
	res.UID, res.AttemptUID = job.UID, job.AttemptUID
	if group != "" && res.Type == redisio.ResultFailure && !res.Permanent && res.RetryAfterSeconds > 0 {
		res.ThrottleKey = group // the service holds the whole group
	}
	return res, true, leaseEnd
}

// group returns the job's throttle group: its ThrottleGroup payload value
// as text; "" when there is none.
func (w *Worker) group(job redisio.Job) string {
	if w.cfg.ThrottleGroup == "" {
		return ""
	}
	v, ok := job.Payload[w.cfg.ThrottleGroup]
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// heldUntil returns when the hold of group ends, or the zero time when the
// group is not held (or Redis cannot say: the job is then done as usual).
func (w *Worker) heldUntil(ctx context.Context, group string) time.Time {
	if group == "" || w.cfg.Redis == nil {
		return time.Time{}
	}
	ms, err := w.cfg.Redis.ZScore(ctx, redisio.Lists{Input: w.cfg.Input}.Throttle(), group).Result()
	if err != nil {
		return time.Time{}
	}
	until := time.UnixMilli(int64(ms))
	if !until.After(w.cfg.Now()) {
		return time.Time{}
	}
	return until
}

// Fetch GETs rawURL within the HTTP timeout and reads the whole body, up
// to MaxBodyBytes. It does not send a request to a URL that ValidateURL
// rejects. A connection the address policy refuses ends the GET with a
// *NotAllowedError (logged with its address; users never see it).
func (w *Worker) Fetch(ctx context.Context, rawURL string) (o Outcome) {
	o = Outcome{URL: rawURL, Timeout: w.cfg.HTTPTimeout}
	if ValidateURL(rawURL) != nil {
		return o // Classify reports the malformed URL
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.HTTPTimeout)
	defer cancel()
	// Note whether any hop (redirects included) was served from a
	// non-public address the policy allowed: such a response's size is not
	// shown to users.
	var nonPublic atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err != nil || AddressClass(ap.Addr()) != "" {
			nonPublic.Store(true)
		}
	}})
	defer func() { o.NonPublic = nonPublic.Load() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		o.Err = err
		return o
	}
	req.Header.Set("User-Agent", "refresher-worker/1")
	resp, err := w.cfg.HTTPClient.Do(req)
	if err != nil {
		o.Err = err
		var refused *NotAllowedError
		if errors.As(err, &refused) {
			w.cfg.Logger.Warn("refuse to connect to a non-public address", "url", redact.URL(rawURL), "addr", refused.Addr, "class", refused.Class)
		}
		return o
	}
	defer resp.Body.Close()
	o.StatusCode, o.Status, o.RetryAfter = resp.StatusCode, resp.Status, resp.Header.Get("Retry-After")
	// The size limit applies to the body of a success: another status
	// decides the result on its own, so its body is read only up to the
	// limit, and a longer one is not an error.
	success := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if success && resp.ContentLength > w.cfg.MaxBodyBytes {
		o.Err = &BodyTooLargeError{Limit: w.cfg.MaxBodyBytes}
		return o
	}
	o.Bytes, err = io.Copy(io.Discard, io.LimitReader(resp.Body, w.cfg.MaxBodyBytes+1))
	switch {
	case err != nil:
		o.Err = fmt.Errorf("read body: %w", err)
	case success && o.Bytes > w.cfg.MaxBodyBytes:
		o.Err = &BodyTooLargeError{Limit: w.cfg.MaxBodyBytes}
	}
	return o
}

// push RPUSHes the result, retrying a failed push up to pushAttempts times
// while the job has not expired (job.TimeoutAt: the lease's end when the
// service extended the attempt, see handle).
func (w *Worker) push(ctx context.Context, job redisio.Job, res redisio.Result) error {
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	for attempt := 1; ; attempt++ {
		err = w.cfg.Redis.RPush(ctx, w.cfg.Output, data).Err()
		expired := !job.TimeoutAt.IsZero() && !w.cfg.Now().Before(job.TimeoutAt)
		if err == nil || attempt == pushAttempts || expired {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return fmt.Errorf("RPUSH %s: %w", w.cfg.Output, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
