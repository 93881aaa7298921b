package refresher

import (
	"context"
	"log/slog"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/redisio"
)

// kindRunner holds what the dispatcher and poller of one kind share.
type kindRunner struct {
	cfg     Config
	kind    Kind
	store   models.Store
	rdb     *redisio.Client
	clock   Clock
	log     *slog.Logger
	metrics *Metrics
	hooks   Hooks
	// activity sums the kind's work for its periodic log line.
	activity *activity
	// fatal stops the service and makes Run return err: for an error no
	// retry can fix (see Service). Outages are retried, never fatal.
	fatal func(err error)
}

// rand returns the jitter draw for one failure.
func (r *kindRunner) rand() float64 { return r.cfg.Rand() }

// batchContext returns the context for the I/O of one batch: it is not
// cancelled with ctx, so a batch in hand finishes on shutdown, and it is
// bounded by OpTimeout so nothing hangs.
func (r *kindRunner) batchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.OpTimeout)
}
