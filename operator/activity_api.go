package operator

import (
	"fmt"
	"net/http"
	"time"

	"github.com/refresher/refresher/refresher"
)

// ActivityPoint is one step of GET /api/v1/kinds/{kind}/activity: what the
// kind did in the minute (or ten minutes) from At.
type ActivityPoint struct {
	At              time.Time `json:"at"`
	Dispatched      int64     `json:"dispatched"`
	Applied         int64     `json:"applied"`
	Failed          int64     `json:"failed"`
	Dead            int64     `json:"dead"`
	Backlog         int64     `json:"backlog"`
	LatenessSeconds int64     `json:"lateness_seconds"`
	Paused          bool      `json:"paused"`
	Incident        bool      `json:"incident"`
}

// apiActivity answers what the dashboard's charts show of kind k, for
// ?span=hour (the default: 60 minutes) or ?span=day (144 ten minutes).
func (s *Server) apiActivity(w http.ResponseWriter, r *http.Request, k *Kind) {
	span := refresher.LastHour
	switch name := r.URL.Query().Get("span"); name {
	case "", refresher.LastHour.Name:
	case refresher.LastDay.Name:
		span = refresher.LastDay
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("span %q: use span=hour (by minute) or span=day (by ten minutes)", name))
		return
	}
	act, err := s.activity(r.Context(), k, span, s.o.Now())
	if err != nil {
		s.internal(w, "reading the activity", err)
		return
	}
	points := make([]ActivityPoint, len(act.Points))
	for i, p := range act.Points {
		points[i] = ActivityPoint{At: act.Start.Add(time.Duration(i) * span.Step), Dispatched: p.Dispatched, Applied: p.Applied,
			Failed: p.Failed, Dead: p.Dead, Backlog: p.Backlog, LatenessSeconds: p.LatenessSeconds, Paused: p.Paused, Incident: p.Incident}
	}
	writeJSON(w, http.StatusOK, map[string]any{"span": span.Name, "step_seconds": int(span.Step / time.Second), "points": points})
}
