package policy

import (
	"testing"
	"time"
)

// BenchmarkDue is the dispatcher's transition of one due row that starts an
// attempt, under a policy that has its defaults already (as the dispatcher
// passes it), in both forms: it runs for every row of every claimed batch
// (the dispatcher's is DueInPlace).
func BenchmarkDue(b *testing.B) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	p := Policy{Kind: "models"}.WithDefaults()
	s := State{RefreshAt: now.Add(-time.Second), AttemptNo: 2, LastSuccessAt: now.Add(-time.Hour)}
	sched := &fixedNext{now.Add(time.Hour)}
	b.Run("Due", func(b *testing.B) {
		for b.Loop() {
			out, d := p.Due(s, now, sched, nil, "d4n0q4a5n1p0bb6b6h20", 0.5)
			if d.Action != DueStarted || out.AttemptNo != 3 {
				b.Fatal(d.Action)
			}
		}
	})
	b.Run("DueInPlace", func(b *testing.B) {
		var d DueDecision
		for b.Loop() {
			out := s
			p.DueInPlace(&out, now, sched, nil, "d4n0q4a5n1p0bb6b6h20", 0.5, &d)
			if d.Action != DueStarted || out.AttemptNo != 3 {
				b.Fatal(d.Action)
			}
		}
	})
}

type fixedNext struct{ t time.Time }

func (f *fixedNext) Next(time.Time) time.Time { return f.t }
