package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs each failed dial of its pool on its own ("pool.go:770:
// failed to dial after 5 attempts"), before the error reaches the command,
// which says the same once and how to fix it. The commands silence it.
func init() { redis.SetLogger(quietRedisLog{}) }

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
