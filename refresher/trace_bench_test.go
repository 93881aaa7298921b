package refresher

import (
	"context"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/refresher/refresher/internal/tracing"
	"github.com/refresher/refresher/redisio"
)

// BenchmarkTraceBatch is the tracing of one batch of 1000 jobs and 1000
// results, as the dispatcher and the poller do it (trace.go), without a
// Tracer ("off": what every service that does not trace pays, which must
// be nothing: 0 allocs/op), with one that samples every trace and
// exports to nowhere ("on"), and with one that samples none ("unsampled":
// OTEL_TRACES_SAMPLER=traceidratio's price for the traces it drops).
func BenchmarkTraceBatch(b *testing.B) {
	const n = 1000
	for _, name := range []string{"off", "on", "unsampled"} {
		var tr *tracing.Tracer
		if name != "off" {
			sampler := sdktrace.AlwaysSample()
			if name == "unsampled" {
				sampler = sdktrace.NeverSample()
			}
			provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(sampler))
			b.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
			tr = tracing.New(provider)
		}
		b.Run(name, func(b *testing.B) {
			r := &kindRunner{cfg: Config{Tracer: tr}, kind: Kind{Name: "items"}}
			d := &dispatcher{kindRunner: r}
			p := &poller{kindRunner: r}
			var batch pushBatch
			msgs := make([]redisio.Message, n)
			at := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
			for i := range n {
				uid := strconv.Itoa(i)
				batch.jobs = append(batch.jobs, redisio.Job{Kind: "items", UID: uid, AttemptUID: "d4n0q4a5n1p0bb6b6h2" + uid, AttemptNo: 1, TimeoutAt: at})
				batch.lists = append(batch.lists, "items-input")
				msgs[i].Result = redisio.Result{UID: uid, AttemptUID: "d4n0q4a5n1p0bb6b6h2" + uid, Type: redisio.ResultSuccess}
			}
			b.ReportAllocs()
			for b.Loop() {
				d.traceJobs(d.traceStart(), &batch)
				d.endJobSpans(&batch, nil)
				start := p.traceStart()
				for _, m := range msgs {
					p.note(m.Result, "applied")
				}
				p.traceApplied(start, msgs, nil)
			}
		})
	}
}
