package refresher

import (
	"fmt"
	"slices"

	"github.com/refresher/refresher/models"
)

// inputList returns the list the job of a row claimed at priority p goes
// to: the kind's input list for the kind's level or any less urgent one
// (or when the kind has no lanes); otherwise the list of the least urgent
// lane at or above p's urgency (the most urgent lane when p is more
// urgent than every lane). A level between two lanes thus shares the more
// urgent lane: it was claimed before the less urgent one's rows, and its
// worker should take it first too.
func (k *Kind) inputList(p models.Priority) string {
	if len(k.Lanes) == 0 || p.Level >= k.Table.Priority {
		return k.Lists.Input
	}
	lane := k.Lanes[0]
	for _, l := range k.Lanes {
		if l <= p.Level {
			lane = l
		}
	}
	return k.Lists.PriorityInput(lane)
}

// checkLanes says what is wrong with a kind's lanes: they must be
// ascending, distinct and more urgent than the kind's priority.
func checkLanes(k Kind) error {
	if !slices.IsSorted(k.Lanes) || len(slices.Compact(slices.Clone(k.Lanes))) != len(k.Lanes) {
		return fmt.Errorf("kind %s: lanes %v must be distinct and ascending", k.Name, k.Lanes)
	}
	if n := len(k.Lanes); n > 0 && k.Lanes[n-1] >= k.Table.Priority {
		return fmt.Errorf("kind %s: lane %d is not more urgent than the kind's priority %d", k.Name, k.Lanes[n-1], k.Table.Priority)
	}
	return nil
}
