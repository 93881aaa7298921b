package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/refresher"
)

func init() {
	commands = append(commands,
		func() *cobra.Command {
			return adminCmd("enable", "Re-enable models as if the user had saved them, and refresh them now", (*refresher.Admin).Enable)
		},
		func() *cobra.Command {
			cmd := adminCmd("trigger", "Refresh models now, unless an attempt is running", (*refresher.Admin).Trigger)
			cmd.Flags().String("priority", "", `give the attempt this priority (a level of priorities:, e.g. interactive, or a number; lower runs first): it is claimed and popped before every less urgent job; the row keeps its own priority after`)
			return cmd
		},
	)
}

// adminFunc is an action of refresher.Admin on models (its method
// expression, e.g. (*refresher.Admin).Enable).
type adminFunc func(a *refresher.Admin, ctx context.Context, t models.Table, keys []string, now time.Time) ([]refresher.Change, error)

// adminCmd builds `refresher enable|trigger --kind K UID...`; both print one
// line per model saying what changed.
func adminCmd(name, short string, fn adminFunc) *cobra.Command {
	var path, kind string
	cmd := &cobra.Command{
		Use:   name + " --kind KIND UID...",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, keys []string) error {
			c, k, store, err := openAdminKind(cmd.Context(), path, kind)
			if err != nil {
				return err
			}
			defer store.Close()
			// Enable and trigger change only the table: no Redis.
			admin := refresher.NewAdmin(store, nil)
			if c.Ledger.Enabled {
				admin = admin.Recording(k.Name, "cli", refresher.SystemClock{}.Now)
			}
			run := func(ctx context.Context, t models.Table, keys []string, now time.Time) ([]refresher.Change, error) {
				return fn(admin, ctx, t, keys, now)
			}
			if f := cmd.Flags().Lookup("priority"); f != nil && f.Value.String() != "" {
				level, err := c.PriorityLevel(f.Value.String())
				if err != nil {
					return fmt.Errorf("%s --priority: %w", name, err)
				}
				run = admin.TriggerAt(&level)
			}
			changes, err := run(cmd.Context(), k.ModelsTable(), keys, refresher.SystemClock{}.Now())
			if err != nil {
				return err
			}
			printChanges(cmd.OutOrStdout(), k.Name, changes)
			for _, ch := range changes {
				if !ch.Found {
					return fmt.Errorf("%s: some models were not found", name)
				}
			}
			return nil
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().StringVar(&kind, "kind", "", "the kind of the models (required)")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

func printChanges(w io.Writer, kind string, changes []refresher.Change) {
	for _, ch := range changes {
		fmt.Fprintf(w, "%s %s: %s", kind, ch.Key, ch.Note)
		if ch.Found && ch.Before != ch.After {
			fmt.Fprintf(w, " (refresh_at %s -> %s, attempt_no %d -> %d)",
				fmtTime(ch.Before.RefreshAt), fmtTime(ch.After.RefreshAt), ch.Before.AttemptNo, ch.After.AttemptNo)
		}
		fmt.Fprintln(w)
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "NULL"
	}
	return t.UTC().Format(time.RFC3339)
}

// openAdminKind loads the config at path and opens the database of its
// kind for a command that reads or changes the models table only (no
// Redis), checked as `run` checks it: the same message for a missing
// table or column.
func openAdminKind(ctx context.Context, path, kind string) (*config.Config, *config.Kind, models.Store, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	k, err := c.Kind(kind)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := openKindDatabase(ctx, c, k, stores.Options{AdminSQLite: true})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := store.Check(ctx, k.ModelsTable()); err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("kind %s: %w", k.Name, err)
	}
	return c, k, store, nil
}
