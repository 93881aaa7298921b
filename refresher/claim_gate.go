package refresher

import (
	"context"
	"sync"
)

// claimGate bounds how many dispatchers run a claim transaction at once
// (Config.ClaimConnections), and when more want to, admits the most urgent
// kind first (the lowest Table.Priority; first come among equals): with
// several kinds on one service and connections short, a kind's priority
// decides which dispatcher gets the database first. A free slot costs a
// mutex and no wait.
type claimGate struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiting []*gateWaiter
}

type gateWaiter struct {
	level int
	seq   uint64
	ready chan struct{} // closed when the slot is handed over
}

func newClaimGate(slots int) *claimGate { return &claimGate{free: max(slots, 1)} }

// acquire waits for a slot; it fails only when ctx ends first.
func (g *claimGate) acquire(ctx context.Context, level int) error {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	g.seq++
	w := &gateWaiter{level: level, seq: g.seq, ready: make(chan struct{})}
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, o := range g.waiting {
			if o == w {
				g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed over meanwhile: pass it on.
		g.handOver()
		return ctx.Err()
	}
}

// release gives the slot to the most urgent waiter, or frees it.
func (g *claimGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOver()
}

// handOver passes one slot on; g.mu is held.
func (g *claimGate) handOver() {
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	best := 0
	for i, w := range g.waiting {
		b := g.waiting[best]
		if w.level < b.level || (w.level == b.level && w.seq < b.seq) {
			best = i
		}
	}
	w := g.waiting[best]
	g.waiting = append(g.waiting[:best], g.waiting[best+1:]...)
	close(w.ready)
}
