// Package redisio is everything refresher says to Redis: list names, the JSON
// codec of jobs and results (docs/protocol.md), pipelined pushes of jobs, and a
// reliable drain of result lists (results are moved atomically to a
// processing list of this instance and removed only after they were applied).
// It knows nothing of MySQL or of the transitions.
package redisio
