package redisio

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

func result(i int) string {
	return fmt.Sprintf(`{"uid":"%d","attempt_uid":"a%d","type":"success"}`, i, i)
}

// pushResults pushes results 0..n-1 to the output list, as workers do.
func pushResults(t *testing.T, b *bundle, n int) {
	t.Helper()
	vals := make([]any, n)
	for i := range vals {
		vals[i] = result(i)
	}
	require.NoError(t, b.rdb.RPush(t.Context(), b.lists.Output, vals...).Err())
}

func uidsOf(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Result.UID
		if m.Err != nil {
			out[i] = "!" + string(m.Raw)
		}
	}
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// requireList checks the whole content of a Redis list.
func requireList(t *testing.T, b *bundle, key string, want ...string) {
	t.Helper()
	got, err := b.rdb.LRange(t.Context(), key, 0, -1).Result()
	require.NoError(t, err)
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.Equal(t, want, got, "list %s", key)
}

// requireNoBatchInFlight checks that instance id has no batch in flight:
// its batch key holds only the mark of its last Ack, which expires.
func requireNoBatchInFlight(t *testing.T, b *bundle, id string) {
	t.Helper()
	ttl := b.rdb.PTTL(t.Context(), b.lists.batchKey(id)).Val()
	require.True(t, ttl > 0 && ttl <= ackMarkTTL, "the batch key of %s lives %s", id, ttl)
}

func results(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, result(i))
	}
	return out
}

func TestDrainValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.client.Drain(Lists{}, "", 500*time.Millisecond)
	want := `invalid drain of "" for instance "": output list name is empty
dead-letter list name is empty
instance ID is empty (use a stable, unique name such as the host name)
heartbeat TTL 500ms is shorter than 1s`
	_, err := d.Fetch(t.Context(), 1, 0)
	require.EqualError(t, err, want)
	require.EqualError(t, d.Ack(t.Context(), []Message{{}}, nil), want)
	require.EqualError(t, d.Heartbeat(t.Context()), want)
	_, err = d.Recover(t.Context())
	require.EqualError(t, err, want)

	t.Run("Defaults", func(t *testing.T) {
		d := b.client.Drain(b.lists, "A", 0)
		require.NoError(t, d.err)
		require.Equal(t, DefaultHeartbeatTTL, d.ttl)
	})
}

func TestFetchAndAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)
	hook := &counter{}
	b.rdb.AddHook(hook)

	// Empty, no block: nothing, no error.
	msgs, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 0)

	pushResults(t, b, 5)
	hook.trips.Store(0)
	msgs, err = d.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 3), uidsOf(msgs))
	require.Equal(t, Result{UID: "0", AttemptUID: "a0", Type: ResultSuccess}, msgs[0].Result)
	require.Equal(t, result(0), string(msgs[0].Raw))
	require.True(t, hook.trips.Load() <= 2, "fetch of 3 took %d round trips", hook.trips.Load()) // EVALSHA (+EVAL once)

	// Moved, not copied; the heartbeat is alive.
	requireList(t, b, b.lists.Processing("A"), results(0, 3)...)
	requireList(t, b, b.lists.Output, results(3, 5)...)
	ttl := b.rdb.PTTL(ctx, b.lists.Heartbeat("A")).Val()
	require.True(t, ttl > 25*time.Second && ttl <= 30*time.Second, "heartbeat TTL %s", ttl)

	// Pushed after the fetch: stays in the output list through the ack.
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, result(5)).Err())
	require.NoError(t, d.Ack(ctx, msgs, nil))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output, results(3, 6)...)
	require.Equal(t, int64(0), b.rdb.Exists(ctx, b.lists.Dead).Val())

	// Ack twice: no batch in flight.
	require.EqualError(t, d.Ack(ctx, msgs, nil), `ack 3 results of "`+b.lists.Output+`": no batch in flight (Fetch, then Ack once)`)

	msgs, err = d.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Equal(t, seq(3, 6), uidsOf(msgs))
	require.EqualError(t, d.Ack(ctx, msgs[:2], nil), `ack 2 results of "`+b.lists.Output+`": the batch has 3 messages; pass every fetched message, dead ones included`)
	require.EqualError(t, d.Ack(ctx, msgs, msgs[:1]), `ack results of "`+b.lists.Output+`": a dead message has no Err (say why it cannot be applied)`)
	require.NoError(t, d.Ack(ctx, msgs, nil))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output)
	requireNoBatchInFlight(t, b, "A")
}

// A Fetch that is not acknowledged is returned again by the next Fetch,
// topped up with new results; an Ack of the abandoned batch is refused.
func TestFetchRedeliversUnacked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)
	pushResults(t, b, 6)

	first, err := d.Fetch(ctx, 2, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 2), uidsOf(first))
	second, err := d.Fetch(ctx, 4, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 4), uidsOf(second))

	require.EqualError(t, d.Ack(ctx, first, nil), `ack results of "`+b.lists.Output+`": a message is from an abandoned batch (Fetch or Recover was called since)`)
	third, err := d.Fetch(ctx, 2, 0) // smaller than what is in processing
	require.NoError(t, err)
	require.Equal(t, seq(0, 2), uidsOf(third))
	require.EqualError(t, d.Ack(ctx, first, nil), `ack results of "`+b.lists.Output+`": a message is from an abandoned batch (Fetch or Recover was called since)`)
	require.NoError(t, d.Ack(ctx, third, nil))
	requireList(t, b, b.lists.Processing("A"), results(2, 4)...)

	rest, err := d.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, seq(2, 6), uidsOf(rest))
	require.NoError(t, d.Ack(ctx, rest, nil))
	requireList(t, b, b.lists.Processing("A"))
}

func TestFetchBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)

	// Nothing arrives: returns empty after the block, not before.
	start := time.Now()
	msgs, err := d.Fetch(ctx, 10, time.Second)
	require.NoError(t, err)
	require.Len(t, msgs, 0)
	require.True(t, time.Since(start) >= time.Second, "returned after %s", time.Since(start))

	// A result that arrives while Fetch waits is returned with those queued
	// behind it (one BLMOVE, then the script).
	other := redis.NewClient(b.rdb.Options())
	t.Cleanup(func() { _ = other.Close() })
	done := make(chan []Message, 1)
	go func() {
		msgs, err := d.Fetch(ctx, 10, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- msgs
	}()
	// Wait until the Fetch is blocked (its client shows in CLIENT LIST as blmove).
	testenv.Eventually(t, 5*time.Second, "the Fetch blocks", func() bool {
		return strings.Contains(b.rdb.ClientList(ctx).Val(), "cmd=blmove")
	})
	require.NoError(t, other.RPush(ctx, b.lists.Output, result(0), result(1), result(2)).Err())
	select {
	case msgs = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Fetch did not return after a result arrived")
	}
	require.Equal(t, seq(0, 3), uidsOf(msgs))
	require.NoError(t, d.Ack(ctx, msgs, nil))

	// A cancelled context ends the wait within about one blocking step.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = d.Fetch(cctx, 10, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, time.Since(start) < 3*time.Second, "took %s", time.Since(start))
}

type deadLetterEntry struct {
	Error         string `json:"error"`
	List          string `json:"list"`
	Size          int    `json:"size"`
	SHA1          string `json:"sha1"`
	Truncated     bool   `json:"truncated"`
	Message       string `json:"message"`
	MessageBase64 string `json:"message_base64"`
	At            string `json:"at"`
}

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// Garbage goes to the dead-letter list with the error, atomically with the
// ack, and the good results around it are still fetched.
func TestGarbageGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)

	huge := `{"uid":"9","attempt_uid":"a9","type":"success","x":"` + strings.Repeat("x", 1<<20) + `"}`
	garbage := []string{
		"not json at all",
		`{"uid":7,"attempt_uid":"a7","type":"success"}`,
		`{"uid":"8","attempt_uid":"a8","type":"exploded"}`,
		huge,
		"binary \xff\xfe",
	}
	vals := []any{result(0)}
	for _, g := range garbage {
		vals = append(vals, g)
	}
	vals = append(vals, result(1), `{"uid":"404","attempt_uid":"a","type":"success"}`)
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, vals...).Err())

	msgs, err := d.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 8)
	var dead []Message
	for _, m := range msgs {
		if m.Err != nil {
			require.ErrorIs(t, m.Err, ErrInvalidResult)
			dead = append(dead, m)
		}
	}
	require.Len(t, dead, 5)
	require.Equal(t, "0", msgs[0].Result.UID)
	require.Equal(t, "1", msgs[6].Result.UID)
	unknown := msgs[7]
	unknown.Err = errors.New(`unknown model: no row with uid "404"`) // set by the caller
	dead = append(dead, unknown)

	require.NoError(t, d.Ack(ctx, msgs, dead))
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output)

	entries, err := b.rdb.LRange(ctx, b.lists.Dead, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, entries, 6)
	wantErrs := []string{
		"invalid result: message is not JSON: invalid character 'o' in literal null (expecting 'u')",
		`invalid result: "uid" is a number, want a string`,
		`invalid result: "type" is "exploded", want "success", "failure", "status" or "extend"`,
		fmt.Sprintf("invalid result: message is %d bytes, the limit is 65536", len(huge)),
		"invalid result: message is not JSON: invalid character 'b' looking for beginning of value",
		`unknown model: no row with uid "404"`,
	}
	for i, raw := range entries {
		var e deadLetterEntry
		require.NoError(t, json.Unmarshal([]byte(raw), &e), raw)
		require.True(t, strings.HasPrefix(e.Error, wantErrs[i]), "entry %d error %q", i, e.Error)
		require.Equal(t, b.lists.Output, e.List)
		require.Equal(t, "2026-11-21T14:00:00Z", e.At)
		var raw string
		switch i {
		case 3: // over the limit: never left Redis whole
			raw = huge
			require.Equal(t, huge[:ExcerptBytes], e.Message)
			require.True(t, e.Truncated)
			require.Less(t, len(entries[i]), 8<<10)
		case 4:
			raw = "binary \xff\xfe"
			require.Equal(t, "binary \ufffd\ufffd", e.Message)
			require.Equal(t, "YmluYXJ5IP/+", e.MessageBase64)
		default:
			raw = string(dead[i].Raw)
			require.Equal(t, raw, e.Message)
			require.Equal(t, "", e.MessageBase64)
			require.False(t, e.Truncated)
		}
		require.Equal(t, len(raw), e.Size, "entry %d", i)
		require.Equal(t, sha1hex(raw), e.SHA1, "entry %d", i)
	}
	require.True(t, strings.HasPrefix(entries[0], `{"error":"invalid result: message is not JSON`), entries[0])
	require.True(t, strings.HasSuffix(entries[0], `,"list":"`+b.lists.Output+`","size":15,"sha1":"`+sha1hex("not json at all")+
		`","truncated":false,"message":"not json at all","at":"2026-11-21T14:00:00Z"}`), entries[0])

	// The pipeline goes on.
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, result(2)).Err())
	msgs, err = d.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"2"}, uidsOf(msgs))
}

// The size limit is configurable.
func TestMaxResultBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := NewWithConfig(b.rdb, Config{MaxResultBytes: 50})
	require.NoError(t, err)
	d := c.Drain(b.lists, "A", 0)
	require.NoError(t, b.rdb.RPush(t.Context(), b.lists.Output, result(1), result(12345678)).Err())
	msgs, err := d.Fetch(t.Context(), 10, 0)
	require.NoError(t, err)
	require.NoError(t, msgs[0].Err)
	require.ErrorContains(t, msgs[1].Err, "invalid result: message is 61 bytes, the limit is 50 (")
}

// Instance A fetches and dies; its heartbeat expires; B's Recover puts the
// results back at the head of the output list in order, and B fetches them
// before the newer ones. A live instance is never robbed.
func TestRecoverFromDeadInstance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	a := b.client.Drain(b.lists, "A", time.Second)
	bd := b.client.Drain(b.lists, "B", 0)
	pushResults(t, b, 6)

	msgs, err := a.Fetch(ctx, 4, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 4), uidsOf(msgs))

	n, err := bd.Recover(ctx) // A is alive
	require.NoError(t, err)
	require.Equal(t, 0, n)
	requireList(t, b, b.lists.Processing("A"), results(0, 4)...)

	// A dies: nobody refreshes its heartbeat. Wait until Redis expires it.
	testenv.Eventually(t, 5*time.Second, "A's heartbeat expired", func() bool { return b.rdb.Exists(ctx, b.lists.Heartbeat("A")).Val() == 0 })
	n, err = bd.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output, results(0, 6)...)

	got, err := bd.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 6), uidsOf(got))
	require.NoError(t, bd.Ack(ctx, got, nil))

	// A comes back from a long pause and acknowledges its old batch: nothing
	// changes, and it is told so.
	err = a.Ack(ctx, msgs, nil)
	require.ErrorIs(t, err, ErrRecovered)
	requireList(t, b, b.lists.Output)
}

// RecoverOthers, called with batches in flight, takes over a dead
// instance's list and leaves this instance's batches alone: both are still
// acknowledged, and the dead instance's results come next.
func TestRecoverOthersKeepsBatchesInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	pushResults(t, b, 6)
	dead := b.client.Drain(b.lists, "A", time.Second)
	lost, err := dead.Fetch(ctx, 2, 0)
	require.NoError(t, err)
	bd := b.client.Drain(b.lists, "B", 0)
	first, err := bd.Fetch(ctx, 2, 0)
	require.NoError(t, err)
	ahead, err := bd.Next(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, seq(2, 6), append(uidsOf(first), uidsOf(ahead)...))

	testenv.Eventually(t, 5*time.Second, "A's heartbeat expired", func() bool { return b.rdb.Exists(ctx, b.lists.Heartbeat("A")).Val() == 0 })
	n, err := bd.RecoverOthers(ctx)
	require.NoError(t, err)
	require.Equal(t, len(lost), n)
	requireList(t, b, b.lists.Processing("A"))
	requireList(t, b, b.lists.Output, results(0, 2)...)

	require.NoError(t, bd.Ack(ctx, first, nil))
	require.NoError(t, bd.Ack(ctx, ahead, nil))
	requireList(t, b, b.lists.Processing("B"))
	got, err := bd.Fetch(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 2), uidsOf(got))
}

// A restarted instance with the same ID takes back its own processing list
// at once, without waiting for the old heartbeat to expire.
func TestRecoverOwnListAfterRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	pushResults(t, b, 5)
	old := b.client.Drain(b.lists, "A", 0)
	msgs, err := old.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, result(5)).Err())

	restarted := b.client.Drain(b.lists, "A", 0)
	n, err := restarted.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	requireList(t, b, b.lists.Output, results(0, 6)...)
	got, err := restarted.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 6), uidsOf(got))

	// The old incarnation's late Ack (its token) changes nothing.
	require.ErrorIs(t, old.Ack(ctx, msgs, nil), ErrRecovered)
	requireList(t, b, b.lists.Processing("A"), results(0, 6)...)
	require.NoError(t, restarted.Ack(ctx, got, nil))
	requireList(t, b, b.lists.Processing("A"))
}

// killer is a go-redis hook that "kills" the process at the n-th command:
// that command and every later one fail. With afterExec the n-th command
// reaches Redis and only its reply is lost.
type killer struct {
	left      atomic.Int64
	afterExec bool
}

var errKilled = errors.New("killed")

func (k *killer) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook counts a pipeline (a transaction: the read-back of a
// native move) as one step.
func (k *killer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		switch left := k.left.Add(-1); {
		case left > 0:
			return next(ctx, cmds)
		case left == 0 && k.afterExec:
			_ = next(ctx, cmds)
		}
		for _, c := range cmds {
			c.SetErr(errKilled)
		}
		return errKilled
	}
}
func (k *killer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch left := k.left.Add(-1); {
		case left > 0:
			return next(ctx, cmd)
		case left == 0 && k.afterExec:
			_ = next(ctx, cmd)
		}
		cmd.SetErr(errKilled)
		return errKilled
	}
}

// The poller is killed at every command of a fetch/commit/ack sequence,
// before or after the command reached Redis. Another instance (or the same
// one restarted) then recovers and drains: every result is applied at least
// once, the rest in push order, and garbage is dead-lettered exactly once.
func TestKilledAtEveryStep(t *testing.T) {
	t.Parallel()
	// Seven messages in batches of 3: Fetch, Ack, Fetch, Ack, Fetch, Ack,
	// Fetch (empty) is 7 commands; step 8 is the run without a kill.
	for step := 1; step <= 8; step++ {
		for _, afterExec := range []bool{false, true} {
			for _, sameID := range []bool{false, true} {
				name := fmt.Sprintf("step%d/afterExec=%v/sameID=%v", step, afterExec, sameID)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					b := setup(t)
					ctx := t.Context()
					vals := []any{result(0), result(1), "garbage", result(3), result(4), result(5), result(6)}
					require.NoError(t, b.rdb.RPush(ctx, b.lists.Output, vals...).Err())

					k := &killer{afterExec: afterExec}
					k.left.Store(int64(step))
					dying := redis.NewClient(b.rdb.Options())
					dying.AddHook(k)
					t.Cleanup(func() { _ = dying.Close() })
					dc := New(dying)
					a := dc.Drain(b.lists, "A", 0)

					applied := map[string]int{}
					commit := func(msgs []Message) (dead []Message) {
						for _, m := range msgs {
							if m.Err != nil {
								dead = append(dead, m)
								continue
							}
							applied[m.Result.UID]++
						}
						return dead
					}
					for {
						msgs, err := a.Fetch(ctx, 3, 0)
						if err != nil {
							require.ErrorIs(t, err, errKilled)
							break
						}
						if len(msgs) == 0 {
							break // the whole sequence ran before the kill
						}
						dead := commit(msgs)
						if err := a.Ack(ctx, msgs, dead); err != nil {
							require.ErrorIs(t, err, errKilled)
							break
						}
					}

					// Recovery: the same instance restarted, or another one
					// once A's heartbeat has expired (deleted here).
					id := "B"
					if sameID {
						id = "A"
					} else {
						require.NoError(t, b.rdb.Del(ctx, b.lists.Heartbeat("A")).Err())
					}
					r := b.client.Drain(b.lists, id, 0)
					_, err := r.Recover(ctx)
					require.NoError(t, err)
					var order []string
					for {
						msgs, err := r.Fetch(ctx, 3, 0)
						require.NoError(t, err)
						if len(msgs) == 0 {
							break
						}
						for _, m := range msgs {
							if m.Err == nil {
								order = append(order, m.Result.UID)
							}
						}
						require.NoError(t, r.Ack(ctx, msgs, commit(msgs)))
					}

					for _, uid := range []string{"0", "1", "3", "4", "5", "6"} {
						require.True(t, applied[uid] >= 1, "result %s was lost (applied %v)", uid, applied)
					}
					// What the recovering instance saw is a tail of the push
					// order: nothing reordered.
					all := []string{"0", "1", "3", "4", "5", "6"}
					if len(order) > 0 {
						require.Equal(t, all[len(all)-len(order):], order)
					}
					require.Len(t, b.rdb.LRange(ctx, b.lists.Dead, 0, -1).Val(), 1)
					requireList(t, b, b.lists.Output)
					requireList(t, b, b.lists.Processing("A"))
					requireList(t, b, b.lists.Processing("B"))
				})
			}
		}
	}
}

const childEnv = "REDISIO_KILL_CHILD"

// TestKilledProcessChild is the child of TestKilledProcess: it fetches a
// batch, says so on stdout and waits to be killed.
func TestKilledProcessChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("runs only as the child of TestKilledProcess")
	}
	output, dead, _ := strings.Cut(spec, "|")
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	c := New(rdb)
	d := c.Drain(Lists{Output: output, Dead: dead}, "child", time.Second)
	msgs, err := d.Fetch(context.Background(), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("fetched %d\n", len(msgs))
	time.Sleep(time.Minute) // killed long before
}

// A real poller process is SIGKILLed after it took results; nothing is
// lost: after its heartbeat expires, another instance recovers and applies
// everything in order.
func TestKilledProcess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	pushResults(t, b, 10)

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKilledProcessChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+b.lists.Output+"|"+b.lists.Dead)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	fetched := false
	for sc.Scan() {
		if sc.Text() == "fetched 4" {
			fetched = true
			break
		}
	}
	require.True(t, fetched, "child did not fetch")
	requireList(t, b, b.lists.Processing("child"), results(0, 4)...)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	testenv.Eventually(t, 5*time.Second, "child's heartbeat expired", func() bool { return b.rdb.Exists(ctx, b.lists.Heartbeat("child")).Val() == 0 })
	r := b.client.Drain(b.lists, "parent", 0)
	n, err := r.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	msgs, err := r.Fetch(ctx, 100, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 10), uidsOf(msgs))
	require.NoError(t, r.Ack(ctx, msgs, nil))
	requireList(t, b, b.lists.Processing("child"))
	requireList(t, b, b.lists.Output)
}

// Batches larger than the script's slice of 1000 move in order, exactly
// max at a time, and a partial batch left in the processing list is topped
// up to max.
func TestFetchLargeBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d := b.client.Drain(b.lists, "A", 0)
	pushResults(t, b, 4500)

	msgs, err := d.Fetch(ctx, 2200, 0)
	require.NoError(t, err)
	require.Equal(t, seq(0, 2200), uidsOf(msgs))
	require.Equal(t, int64(2300), b.rdb.LLen(ctx, b.lists.Output).Val())
	require.NoError(t, d.Ack(ctx, msgs, nil))

	// Not acknowledged: the next, larger Fetch returns it again and more.
	msgs, err = d.Fetch(ctx, 1500, 0)
	require.NoError(t, err)
	require.Equal(t, seq(2200, 3700), uidsOf(msgs))
	msgs, err = d.Fetch(ctx, 2500, 0)
	require.NoError(t, err)
	require.Equal(t, seq(2200, 4500), uidsOf(msgs))
	require.Zero(t, b.rdb.LLen(ctx, b.lists.Output).Val())
	require.NoError(t, d.Ack(ctx, msgs, nil))
	requireList(t, b, b.lists.Processing("A"))
}

// An Ack that go-redis sends again (its reply timed out although Redis ran
// it) changes nothing the second time: before, it removed the next batch
// in flight from the processing list, unapplied.
func TestAckRunTwiceRemovesOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	pushResults(t, b, 6)
	d := b.client.Drain(b.lists, "A", 0)
	first, err := d.Fetch(ctx, 3, 0)
	require.NoError(t, err)
	next, err := d.Next(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, seq(3, 6), uidsOf(next))
	// The arguments of the Ack of first, as Ack sends them.
	args := d.ackArgs(len(first), "0", 0)
	require.NoError(t, d.Ack(ctx, first, nil))
	again, err := ackScript.Run(ctx, b.rdb, d.ackKeys(), args...).Int()
	require.NoError(t, err)
	require.Equal(t, 1, again, "the same Ack ran twice: done already")
	requireList(t, b, b.lists.Processing("A"), results(3, 6)...)
	require.NoError(t, d.Ack(ctx, next, nil))
	requireList(t, b, b.lists.Processing("A"))
}
