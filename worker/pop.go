package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/redisio"
)

// popScript pops up to ARGV[1] jobs from the list KEYS[1] and keeps them
// under KEYS[2], the pop's receipt (redisio.PopReceipt), for ARGV[2] ms.
// When the receipt holds jobs already, it returns them and pops nothing:
// that is the same pop sent again after its reply was lost (by go-redis,
// MaxRetries, or by popMore), whose jobs would otherwise be in no list and
// in no worker's hands, lost until their attempts time out. KEYS[3], the
// receipt of the worker's previous pop, whose reply came, is deleted.
var popScript = redis.NewScript(`
redis.call('DEL', KEYS[3])
local kept = redis.call('LRANGE', KEYS[2], 0, -1)
if #kept > 0 then return kept end
local jobs = redis.call('LPOP', KEYS[1], ARGV[1])
if not jobs then return {} end
for i = 1, #jobs, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(jobs, i, math.min(i + 999, #jobs)))
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return jobs
`)

// popReceiptTTL is how long a pop's receipt lives when no later pop
// deletes it. popMore asks again for a receipt's jobs for half of it.
const popReceiptTTL = time.Minute

// popRetryMax bounds the wait between popMore's tries.
const popRetryMax = 2 * time.Second

// pop takes up to n messages from the first of the priority lists and the
// input list that has one (one BLPOP on all of them: Redis checks the keys
// in order): it waits up to pollTimeout for the first one, and takes the
// others from the same list only if they are already there (popMore). A
// lost reply of the BLPOP loses its job (see docs/protocol.md, "When a
// reply is lost").
func (w *Worker) pop(ctx context.Context, n int) ([]string, error) {
	lists := append(w.cfg.PriorityInputs[:len(w.cfg.PriorityInputs):len(w.cfg.PriorityInputs)], w.cfg.Input)
	kv, err := w.cfg.Redis.BLPop(ctx, pollTimeout, lists...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("BLPOP %s: %w", strings.Join(lists, " "), err)
	}
	list, msgs := kv[0], kv[1:] // BLPOP answers [list, element]
	if n > 1 {
		more, err := w.popMore(ctx, list, n-1)
		msgs = append(msgs, more...)
		if err != nil {
			return msgs, fmt.Errorf("pop more jobs from %s: %w", list, err)
		}
	}
	return msgs, nil
}

// popMore takes up to n jobs from list if they are there, with popScript
// under a new receipt. When no reply comes (go-redis gave up), the script
// may have run: popMore sends it again with the same receipt, which
// returns the jobs it kept, for up to half of popReceiptTTL; only a
// receipt whose reply came is taken for the previous pop's (and deleted by
// the next). A Redis that refuses the script (an ACL without EVAL, a
// server without Lua) gets a plain LPOP with a count, whose lost reply
// loses its jobs; a refusal for good (redisio.RefusedForGood: NOPERM, an
// unknown command, not OOM) makes that the worker's way from then on.
func (w *Worker) popMore(ctx context.Context, list string, n int) ([]string, error) {
	w.popMu.Lock()
	defer w.popMu.Unlock()
	if w.plainPop {
		return w.lpop(ctx, list, n)
	}
	w.pops++
	receipt, last := redisio.PopReceipt(list, w.popper, w.pops), cmp.Or(w.receipt, redisio.PopReceipt(list, w.popper, 0))
	start, wait := time.Now(), 50*time.Millisecond
	for tries := 1; ; tries++ {
		jobs, err := popScript.Run(ctx, w.cfg.Redis, []string{list, receipt, last}, n, popReceiptTTL.Milliseconds()).StringSlice()
		if err == nil || errors.Is(err, redis.Nil) {
			w.receipt = receipt
			return jobs, nil
		}
		var refused redis.Error
		if tries == 1 && errors.As(err, &refused) {
			// Redis answered: the script did not run, nothing was popped.
			if redisio.RefusedForGood(err) {
				w.plainPop = true
				w.cfg.Logger.Warn("Redis refuses the pop script: popping with LPOP, whose lost reply loses its jobs (allow EVAL, EVALSHA and the keys <list>:pop:*; see docs/protocol.md)",
					"list", list, "err", err)
			}
			return w.lpop(ctx, list, n)
		}
		if time.Since(start) > popReceiptTTL/2 {
			return nil, fmt.Errorf("no reply to the pop script in %d tries (its jobs, if it ran, are lost as a killed worker's): %w", tries, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, popRetryMax)
	}
}

// lpop takes up to n jobs from list with one LPOP.
func (w *Worker) lpop(ctx context.Context, list string, n int) ([]string, error) {
	jobs, err := w.cfg.Redis.LPopCount(ctx, list, n).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return jobs, err
}
