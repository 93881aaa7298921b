package main

import (
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/demo"
)

func init() { commands = append(commands, newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop in one process, with nothing to install",
		Long: `Run the whole refresh loop in one process: an embedded SQLite database, an
embedded Redis-protocol server, a local HTTP target, an example table of
about 20 models, the service, the reference worker and the dashboard.

The demo clock runs --speed times faster than the wall clock (default 60:
an hour of schedules in a minute) and starts at 13:50 UTC today. Attempt
timeouts, Retry-After and schedules follow it; the service's pacing, HTTP
requests and Redis key expiry follow the wall clock.

Connect your own worker to the printed Redis port, e.g. redis-cli -p PORT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			return demo.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "directory of the SQLite file (default: a temporary directory, removed at the end)")
	f.StringVar(&o.HTTP, "http", "127.0.0.1:9090", "listen address of the dashboard")
	f.IntVar(&o.RedisPort, "redis-port", 0, "port of the embedded Redis server on 127.0.0.1 (0: a free one)")
	f.Float64Var(&o.Speed, "speed", 60, "how many times faster than the wall clock the demo clock runs")
	f.DurationVar(&o.For, "for", 0, "stop after this long (real time), e.g. 2m; 0 runs until Ctrl-C")
	return cmd
}
