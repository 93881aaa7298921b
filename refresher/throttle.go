package refresher

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// throttle is one kind's throttle groups (docs/schedules.md,
// "Throttling shared by a group"): a failure with retry_after_seconds and a throttle_key holds
// its group until then, and the dispatcher starts none of the group's rows
// meanwhile. The holds live in one Redis sorted set per kind
// (redisio.Lists.Throttle), shared by every instance; the set expires by
// itself a second after its last hold ends. The decisions are the policy's
// (policy.Policy.GroupHold, policy.Held); this is their I/O.
type throttle struct {
	rdb *redisio.Client
	key string
	// column is the payload column naming a row's group; "" when the kind
	// names none: holds are still written, and no row is held by them.
	column string
}

func newThrottle(rdb *redisio.Client, k Kind) *throttle {
	return &throttle{rdb: rdb, key: k.Lists.Throttle(), column: k.ThrottleGroup}
}

// groups reports whether the kind names a group column, so that the
// dispatcher's pass reads the holds (with its pauses, in one round trip,
// redisio.Client.ReadDispatchState).
func (t *throttle) groups() bool { return t != nil && t.column != "" }

// until returns the end of the hold of row's group in holds, or zero.
func (t *throttle) until(holds map[string]time.Time, row *models.Row) time.Time {
	if len(holds) == 0 {
		return time.Time{}
	}
	g := groupOf(row.Payload.Get(t.column))
	if g == "" {
		return time.Time{}
	}
	return holds[g]
}

// hold writes the holds a batch of results decided; the later end wins.
// All of a batch's groups go in one round trip.
func (t *throttle) hold(ctx context.Context, holds map[string]time.Time, now time.Time) error {
	return t.rdb.Holds(ctx, t.key, holds, now)
}

// groupOf is a payload value as a group name, as a worker reads it from the
// job's JSON and sends it back in throttle_key: text as it is, numbers in
// decimal; "" (no group) for NULL.
func groupOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}
