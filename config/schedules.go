package config

import (
	"fmt"
	"time"

	"github.com/refresher/refresher/policy"
)

// MinSpread is the shortest spread accepted: offsets have a resolution of
// one second, so a shorter window would give every row the same offset.
const MinSpread = 2 * time.Second

// validateSchedulePolicy checks spread, catchup_window and misfire; each
// error starts with its key.
func (k *Kind) validateSchedulePolicy() []error {
	var errs []error
	switch {
	case k.Spread == zeroWritten:
		errs = append(errs, fmt.Errorf("spread: 0s is not allowed: leave it out for no spreading, or write a window such as 10m"))
	case k.Spread != 0 && k.Spread.D() < MinSpread:
		errs = append(errs, fmt.Errorf("spread: %s is too short to spread anything (offsets have 1 s resolution; use at least %s, e.g. 10m)", k.Spread, MinSpread))
	}
	if k.SpreadOwnRules != nil && k.Spread == 0 {
		errs = append(errs, fmt.Errorf("spread_own_rules: set without spread (add spread, e.g. spread: 10m, or remove spread_own_rules)"))
	}
	if k.CatchupWindow == zeroWritten || k.CatchupWindow.D() < 0 {
		errs = append(errs, fmt.Errorf("catchup_window: %s is not allowed: leave it out for unlimited, or write how late a row may still start, e.g. 1h", k.CatchupWindow))
	}
	if _, err := policy.ParseMisfire(k.Misfire); err != nil {
		errs = append(errs, fmt.Errorf("misfire: %w", err))
	} else if k.Misfire != "" && k.CatchupWindow == 0 {
		errs = append(errs, fmt.Errorf("misfire: %s has no effect without catchup_window (add one, e.g. catchup_window: 1h; without it every row due starts once)", k.Misfire))
	}
	return errs
}

// SpreadPolicy is the kind's load spreading as the policy takes it.
func (k *Kind) SpreadPolicy() policy.Spread {
	if k.Spread <= 0 {
		return policy.Spread{}
	}
	return policy.Spread{Window: k.Spread.D(), SkipOwnRules: k.SpreadOwnRules != nil && !*k.SpreadOwnRules}
}

// CatchupPolicy is the kind's catchup window and misfire setting as the
// policy takes them.
func (k *Kind) CatchupPolicy() policy.Catchup {
	m, _ := policy.ParseMisfire(k.Misfire) // validated
	return policy.Catchup{Window: max(k.CatchupWindow.D(), 0), Misfire: m}
}
