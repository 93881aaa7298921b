package main

import (
	"fmt"
	"strings"

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
kind's existing table, on the kind's own database. Safe to run again: what is there already is left alone.
It never drops or changes the application's own columns. With --print it
shows the SQL for a DBA instead of running it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, dbs, err := loadAndOpen(cmd.Context(), path, stores.Options{CreateSQLite: !print}) // --print changes nothing
			if err != nil {
				return err
			}
			defer dbs.Close()
			// Each database migrates its own kinds' tables, one after the other.
			for _, url := range dbs.order {
				var tables []string
				for i := range c.Kinds {
					if c.KindDatabase(&c.Kinds[i]) == url {
						tables = append(tables, c.Kinds[i].Table)
					}
				}
				if len(dbs.order) > 1 {
					fmt.Fprintf(cmd.OutOrStdout(), "-- the database of kinds %s\n", strings.Join(dbs.kindsOn(url), ", "))
				}
				if _, err := dbs.byURL[url].Migrate(cmd.Context(), tables, cmd.OutOrStdout(), print); err != nil {
					if len(dbs.order) > 1 {
						return fmt.Errorf("database of kinds %s: %w", strings.Join(dbs.kindsOn(url), ", "), err)
					}
					return err
				}
			}
			return nil
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().BoolVar(&print, "print", false, "print the SQL instead of running it")
	return cmd
}
