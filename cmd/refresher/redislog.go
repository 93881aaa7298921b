package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs each failed dial of its pool on its own ("pool.go:770:
// failed to dial after 5 attempts"), before the error reaches the command,
// which says the same once and how to fix it. The short commands silence
// go-redis; run and worker route its lines to their logger instead
// (redisio.LogTo: a failover is worth a line there, a failed dial is a
// debug line).
func init() { redis.SetLogger(quietRedisLog{}) }

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
