package policy

import (
	"fmt"
	"time"
)

// Misfire is what Due does with a row that has been due for longer than the
// kind's catchup window, typically after the service was down over several
// of its occurrences (docs/schedules.md, "Missed runs after downtime"). Missed
// occurrences are never run one by one, whatever the setting.
type Misfire string

// The misfire settings.
const (
	// MisfireSkip (the default): the row is not started late; refresh_at
	// moves to its next occurrence after now.
	MisfireSkip Misfire = "skip"
	// MisfireRunOnce: the row starts once now, as it would within the
	// window.
	MisfireRunOnce Misfire = "run_once"
)

// Misfires lists the settings, for help texts and the metric's labels.
var Misfires = []Misfire{MisfireSkip, MisfireRunOnce}

// ParseMisfire parses a misfire setting; "" is MisfireSkip.
func ParseMisfire(s string) (Misfire, error) {
	switch Misfire(s) {
	case "", MisfireSkip:
		return MisfireSkip, nil
	case MisfireRunOnce:
		return MisfireRunOnce, nil
	}
	return "", fmt.Errorf("%q is not a misfire setting (use skip, the default, or run_once)", s)
}

// Catchup is a kind's handling of rows due for too long.
type Catchup struct {
	// Window is how long a row may have been due and still start: a row
	// due for longer (now - refresh_at > Window) misfires. Default 0:
	// unlimited, a row due for any time starts once.
	Window time.Duration
	// Misfire is what a misfired row does. Default "": MisfireSkip.
	Misfire Misfire
}

// Validate reports an invalid field of c.
func (c Catchup) Validate() error {
	if c.Window < 0 {
		return fmt.Errorf("catchup window cannot be negative (got %s; leave it out for unlimited)", c.Window)
	}
	if _, err := ParseMisfire(string(c.Misfire)); err != nil {
		return fmt.Errorf("misfire: %w", err)
	}
	return nil
}

// Misfired reports whether s misfires at now, and with which setting: it is
// not running, something is planned, and it has been due for longer than
// the window (strictly: a row due for exactly Window still starts). A
// running attempt whose timeout_at is long past never misfires: its
// timeout is declared as usual (Due). Unlimited windows never misfire.
func (c Catchup) Misfired(s State, now time.Time) (Misfire, bool) {
	if c.Window <= 0 || s.Running() || s.RefreshAt.IsZero() || now.Sub(s.RefreshAt) <= c.Window {
		return "", false
	}
	if c.Misfire == "" {
		return MisfireSkip, true
	}
	return c.Misfire, true
}
