package main

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/redisio"
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

// openRedis connects to the configured Redis (one server, a cluster or a
// Sentinel set, see redisio.Open) and pings it, with a pool of at least
// poolSize connections.
func openRedis(ctx context.Context, url string, poolSize int) (redis.UniversalClient, error) {
	return redisio.Open(ctx, url, redisio.Options{PoolSize: poolSize})
}
