package redisio

import (
	"fmt"
	"strings"
)

// CheckDistinct checks that the lists of several kinds can work side by
// side in one Redis; kinds[i] names the kind whose lists are lists[i]. It
// returns one error per conflict, each naming both kinds (or the kind twice)
// and both roles:
//
//   - every list name is unique across kinds and roles (input, output,
//     dead): a dead list that is another kind's output list makes messages
//     go round forever, and an output list read by two kinds dead-letters
//     the results of the other kind as unknown models;
//   - no list name starts with an output list's name and ":", which begins
//     the keys derived from it (processing lists, heartbeats, batch tokens,
//     see Lists.Processing): such a list would be taken for one of them, and
//     Recover would move a kind's unacknowledged results to another kind;
//   - likewise no list name starts with an input list's name and ":", which
//     begins the keys of that kind's pauses, throttle holds, incident
//     window and gauges (Lists.KindPause and the others).
//
// Empty names are skipped (Drain refuses them).
func CheckDistinct(kinds []string, lists []Lists) []error {
	type use struct {
		kind, role, name string
	}
	var uses []use
	for i, l := range lists {
		for _, u := range []use{{kinds[i], "input", l.Input}, {kinds[i], "output", l.Output}, {kinds[i], "dead", l.Dead}} {
			if u.name != "" {
				uses = append(uses, u)
			}
		}
	}
	var errs []error
	for i, a := range uses {
		for _, b := range uses[i+1:] {
			switch {
			case a.name == b.name && a.kind == b.kind:
				errs = append(errs, fmt.Errorf("kind %s uses the list %q as its %s and its %s list: give each role its own list", a.kind, a.name, a.role, b.role))
			case a.name == b.name:
				errs = append(errs, fmt.Errorf("kinds %s and %s share the list %q (as %s and %s list): every kind needs lists of its own", a.kind, b.kind, a.name, a.role, b.role))
			}
		}
		for _, b := range uses {
			if derived := derivedKeys[b.role]; derived != "" && strings.HasPrefix(a.name, b.name+":") {
				errs = append(errs, fmt.Errorf("the %s list %q of kind %s starts with %q, which begins the %s keys of kind %s's %s list: rename it",
					a.role, a.name, a.kind, b.name+":", derived, b.kind, b.role))
			}
		}
	}
	return errs
}

// derivedKeys names, by role, the keys derived from a list of that role.
var derivedKeys = map[string]string{
	"output": "processing and heartbeat",
	"input":  "pause, throttle, incident and gauge",
}
