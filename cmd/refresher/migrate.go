package main

import (
	"github.com/spf13/cobra"

	"github.com/refresher/refresher/models/stores"
)

func init() { commands = append(commands, newMigrateCmd) }

func newMigrateCmd() *cobra.Command {
	var path string
	var print bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Add the refresh columns and index to each kind's table",
		Long: `Add the refresh_* columns and an index on refresh_at to each configured
kind's existing table. Safe to run again: what is there already is left alone.
It never drops or changes the application's own columns. With --print it
shows the SQL for a DBA instead of running it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, store, err := loadAndOpen(cmd.Context(), path, stores.Options{CreateSQLite: !print}) // --print changes nothing
			if err != nil {
				return err
			}
			defer store.Close()
			tables := make([]string, len(c.Kinds))
			for i := range c.Kinds {
				tables[i] = c.Kinds[i].Table
			}
			_, err = store.Migrate(cmd.Context(), tables, cmd.OutOrStdout(), print)
			return err
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().BoolVar(&print, "print", false, "print the SQL instead of running it")
	return cmd
}
