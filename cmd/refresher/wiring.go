package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/internal/redact"
	"github.com/refresher/refresher/models/stores"
)

// configFlag adds the --config flag of every command that reads the
// service's configuration.
func configFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "config", "", "YAML configuration file (optional when REFRESHER_* variables are set)")
}

// loadAndOpen loads the configuration (file and REFRESHER_* environment) and
// opens and pings the database of every kind, with the driver its URL
// names, each URL once; o says how a SQLite file is opened (its
// MaxConnections comes from the configuration).
func loadAndOpen(ctx context.Context, path string, o stores.Options) (*config.Config, *databases, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	dbs, err := openDatabases(ctx, c, o)
	if err != nil {
		return nil, nil, err
	}
	return c, dbs, nil
}

// openRedis connects to the configured Redis and pings it, with a pool of
// at least poolSize connections.
func openRedis(ctx context.Context, url string, poolSize int) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		// The driver's error may quote the URL: no password in the message.
		return nil, redact.Error(fmt.Errorf("redis URL %q: %w (use e.g. redis://127.0.0.1:6379/0)", redact.String(url), err), url)
	}
	if opt.PoolSize == 0 { // not set in the URL (?pool_size=), which wins
		opt.PoolSize = max(poolSize, 10*runtime.GOMAXPROCS(0)) // go-redis's default
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("connect to Redis at %s: %w (is redis-server running? check `redis:` in the config or REFRESHER_REDIS)", opt.Addr, err)
	}
	return rdb, nil
}
