// Command refresher keeps the rows of an application's tables fresh on an
// RFC 5545 schedule. main only wires: every subcommand lives in its own file
// and its logic in the packages it calls.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// commands lists the constructors of the subcommands; each file adds its own.
var commands []func() *cobra.Command

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "refresher:", err)
		os.Exit(1)
	}
}

// run executes the command line args and returns its error; tests call it
// directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:           "refresher",
		Short:         "Keep rows of your tables fresh on an RFC 5545 schedule",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}
