package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/refresher/refresher/internal/tracing"
)

// tracingFlushTimeout bounds the send of the last spans at exit.
const tracingFlushTimeout = 5 * time.Second

// startTracing returns the process's tracer as the OTEL_* environment
// asks (tracing.Setup; nil when off) and the function that sends its last
// spans, to call at exit.
func startTracing(ctx context.Context, service string, log *slog.Logger) (*tracing.Tracer, func(), error) {
	tr, err := tracing.Setup(ctx, service, log)
	if err != nil || tr == nil {
		return nil, func() {}, err
	}
	return tr, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			log.Warn("tracing: cannot send the last spans", "err", err)
		}
	}, nil
}
