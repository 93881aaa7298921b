// Package redisio is everything refresher says to Redis: every key name
// (names.go; all derive from a kind's lists), the JSON codec of jobs and
// results (docs/protocol.md), pipelined
// pushes of jobs, a reliable drain of result lists (results are moved
// atomically to a processing list of this instance and removed only after
// they were applied), the operator's pauses, the throttle holds, the
// incident window, the alert gauges' lock and snapshot, and the operator's
// changes of dead letters. It knows nothing of the database or of the
// transitions.
package redisio
