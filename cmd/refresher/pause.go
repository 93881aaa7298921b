package main

import (
	"context"
	"fmt"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
	"github.com/refresher/refresher/redisio"
	"github.com/refresher/refresher/refresher"
)

// The operator's pause from the command line: the same actions as the
// API's pause and resume (refresher.Admin's Pause, Resume, PauseKind and
// ResumeKind), so a pause made here shows on the dashboard and the reverse
// (see docs/operating.md, "Pause").

func init() {
	commands = append(commands, newPauseCmd, newResumeCmd)
}

// maxPauseNote bounds a pause's note, as the API does.
const maxPauseNote = 1000

func newPauseCmd() *cobra.Command {
	var path, kind, note string
	cmd := &cobra.Command{
		Use:   "pause --kind KIND [--note NOTE] [UID...]",
		Short: "Pause models (or, with no UID, the whole kind): nothing is dispatched until they are resumed",
		Long: `Pause models, or with no UID the whole kind. A paused model is not
dispatched and its refresh_at is cleared; a paused kind is not dispatched by
any instance. Results of attempts already running still apply. The note and
who paused (your OS user name, or "cli") show on the dashboard and the API.`,
		RunE: func(cmd *cobra.Command, keys []string) error {
			note = strings.TrimSpace(note)
			if n := len([]rune(note)); n > maxPauseNote {
				return fmt.Errorf("--note: %d characters; keep it under %d", n, maxPauseNote)
			}
			return withPauseTargets(cmd.Context(), path, kind, len(keys) > 0, func(ctx context.Context, pt pauseTarget) error {
				info := refresher.PauseInfo{Note: note, By: osUser(), At: refresher.SystemClock{}.Now().UTC()}
				out := cmd.OutOrStdout()
				if len(keys) == 0 {
					if err := pt.admin.PauseKind(ctx, pt.lists, info); err != nil {
						return err
					}
					fmt.Fprintf(out, "%s: paused by %s: no instance dispatches %s until `refresher resume --kind %s`; results still apply\n",
						pt.kind.Name, info.By, pt.kind.Name, pt.kind.Name)
					return nil
				}
				changes, err := pt.admin.Pause(ctx, pt.kind.ModelsTable(), pt.lists, keys, info)
				if err != nil {
					return err
				}
				printChanges(out, pt.kind.Name, changes)
				return notFound("pause", changes)
			})
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().StringVar(&kind, "kind", "", "the kind to pause, or of the models to pause (required)")
	cmd.Flags().StringVar(&note, "note", "", "why, for the other operators (at most 1000 characters)")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

func newResumeCmd() *cobra.Command {
	var path, kind string
	cmd := &cobra.Command{
		Use:   "resume --kind KIND [UID...]",
		Short: "Resume paused models (or, with no UID, the whole kind)",
		Long: `Resume paused models, or with no UID the whole kind. A resumed model is
planned at its schedule's next occurrence after now (a running attempt: at
its timeout), never the runs it missed. A resumed kind dispatches what became
due meanwhile, each model once. Resuming a model does not resume its kind.`,
		RunE: func(cmd *cobra.Command, keys []string) error {
			return withPauseTargets(cmd.Context(), path, kind, len(keys) > 0, func(ctx context.Context, pt pauseTarget) error {
				out := cmd.OutOrStdout()
				if len(keys) == 0 {
					was, err := pt.admin.ResumeKind(ctx, pt.lists)
					if err != nil {
						return err
					}
					if !was {
						fmt.Fprintf(out, "%s: was not paused\n", pt.kind.Name)
						return nil
					}
					fmt.Fprintf(out, "%s: resumed: the models that became due meanwhile are dispatched, each once\n", pt.kind.Name)
					return nil
				}
				changes, err := pt.admin.Resume(ctx, pt.kind.ModelsTable(), pt.lists, keys,
					refresher.SystemClock{}.Now(), refresher.ResumeSchedules(pt.kind.Name, pt.kind.ScheduleParsed, pt.kind.SpreadPolicy()))
				if err != nil {
					return err
				}
				printChanges(out, pt.kind.Name, changes)
				return notFound("resume", changes)
			})
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().StringVar(&kind, "kind", "", "the kind to resume, or of the models to resume (required)")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

// pauseTarget is what pause and resume act on.
type pauseTarget struct {
	kind  *config.Kind
	admin *refresher.Admin // without a store for the whole kind
	lists redisio.Lists
}

// withPauseTargets loads the configuration, connects to Redis and, when
// models are named, to the database (checking the table as run does), and
// calls fn.
func withPauseTargets(ctx context.Context, path, kind string, withModels bool, fn func(context.Context, pauseTarget) error) error {
	c, err := config.Load(path)
	if err != nil {
		return err
	}
	k, err := c.Kind(kind)
	if err != nil {
		return err
	}
	var store models.Store
	if withModels {
		store, err = openKindDatabase(ctx, c, k, stores.Options{AdminSQLite: true})
		if err != nil {
			return err
		}
		defer store.Close()
		// The same message as `run` for a missing table or column.
		if err := store.Check(ctx, k.ModelsTable()); err != nil {
			return fmt.Errorf("kind %s: %w", k.Name, err)
		}
	}
	rdb, err := openRedis(ctx, c.Redis, 1)
	if err != nil {
		return err
	}
	defer rdb.Close()
	admin := refresher.NewAdmin(store, redisio.New(rdb))
	if c.Ledger.Enabled {
		admin = admin.Recording(k.Name, "cli", refresher.SystemClock{}.Now)
	}
	return fn(ctx, pauseTarget{kind: k, admin: admin,
		lists: k.Lists()})
}

// notFound is the error of a command some of whose models have no row.
func notFound(name string, changes []refresher.Change) error {
	for _, ch := range changes {
		if !ch.Found {
			return fmt.Errorf("%s: some models were not found", name)
		}
	}
	return nil
}

// osUser names who paused from the command line: the OS user, or "cli"
// when it cannot be told.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "cli"
}
