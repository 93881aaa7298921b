package redisio

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// An operator's change whose reply is lost is sent again by go-redis
// (MaxRetries, see docs/protocol.md, "When a reply is lost"): its second
// run would find its work done and report "nothing done", or, for an
// action that is not idempotent, do it twice. A once script runs its body
// at most once per call: the call names a receipt of its own
// (onceReceipt: the key it acts on, ":once:" and a random word), and the
// body's reply is kept there for onceTTL; the same call sent again finds
// the receipt and returns the first run's reply without running the body.

// onceTTL is how long a once script's receipt answers the same call sent
// again; go-redis's retries of a call end within seconds.
const onceTTL = time.Minute

// onceRefused is a once script's answer when it may not use its receipt:
// no body answers it (each answers a count).
const onceRefused = -2

// onceScript is a body run once per call (once), and the same body run
// alone (plain), for a Redis user that may not write the receipt.
//
// once answers onceRefused, with nothing done, when Redis refuses it the
// receipt inside the script (Redis 7.0 words a command an ACL denies there
// as "ERR ... can't run this command", not NOPERM, and a script cannot
// tell it from other errors but by failing).
type onceScript struct{ once, plain *redis.Script }

// newOnceScript wraps body, a Lua chunk that returns an integer, so that
// it runs once per receipt. A body that fails leaves 0 there (done
// nothing): so each body's commands that can fail come before its first
// write. KEYS[1] is the receipt and ARGV[1] its TTL in ms; body reads its
// own keys from KEYS[2] on and its arguments from ARGV[2] on.
func newOnceScript(body string) onceScript {
	return onceScript{
		once: redis.NewScript(`
local done = redis.pcall('GET', KEYS[1])
if type(done) == 'table' and done.err then return ` + strconv.Itoa(onceRefused) + ` end
if done then return tonumber(done) end
-- Written before the body acts, so that a user who may not write the
-- receipt is refused before anything is done.
local set = redis.pcall('SET', KEYS[1], 0, 'PX', ARGV[1])
if type(set) == 'table' and set.err then return ` + strconv.Itoa(onceRefused) + ` end
local n = (function()
` + body + `
end)()
redis.call('SET', KEYS[1], n, 'PX', ARGV[1])
return n`),
		plain: redis.NewScript(`return (function()
` + body + `
end)()`),
	}
}

// onceReceipt returns a new receipt for a once script that acts on key:
// "<key>:once:<random>", in key's hash slot.
func onceReceipt(key string) string { return key + ":once:" + rand.Text() }

// runOnce runs s on keys (its body's) and args under a new receipt for
// keys[0], and returns the body's reply (errors unwrapped: the caller
// names its action). A Redis user that may not touch the receipt gets the
// body alone, as before the receipts, whose reply sent again after a lost
// one may be wrong (docs/protocol.md, "When a reply is lost"): an ACL that
// names the kind's keys only (NOPERM before the script runs), or one that
// denies GET or SET (once's onceRefused).
func (c *Client) runOnce(ctx context.Context, s onceScript, keys []string, args ...any) (int64, error) {
	n, err := s.once.Run(ctx, c.rdb, append([]string{onceReceipt(keys[0])}, keys...),
		append([]any{onceTTL.Milliseconds()}, args...)...).Int64()
	if !RefusedForGood(err) && (err != nil || n != onceRefused) {
		return n, err
	}
	// KEYS[1] and ARGV[1] are the body's to skip: the key it acts on, and 0.
	return s.plain.Run(ctx, c.rdb, append([]string{keys[0]}, keys...), append([]any{0}, args...)...).Int64()
}
