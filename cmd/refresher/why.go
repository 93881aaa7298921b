package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/refresher"
)

func init() { commands = append(commands, newWhyCmd) }

// whyStore wraps the store `why` reads; tests give it a ledger of their
// own until the drivers keep one.
var whyStore = func(s models.Store) models.Store { return s }

func newWhyCmd() *cobra.Command {
	var path, kind, key, at string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "why --kind KIND --key UID [--at TIME]",
		Short: "Say what happened to a model's run at a time, and why (from the ledger)",
		Long: `Why finds the model's planned occurrence at or nearest --at (default now)
and says in one or two sentences what happened to it and why: dispatched and
its outcome (succeeded, failed and the retry planned, timed out), or not
dispatched and why (paused, held by its throttle group, skipped after
downtime, disabled, busy with the attempt before, its rule invalid or ended).
It reads the ledger of the kind's database, the row and its schedule; times
are shown in the schedule's time zone. The entries the answer is built on
follow it (--all: every entry read).`,
		Example: `  refresher why --kind feeds --key 42 --at 2026-11-25T09:00:00Z
  refresher why --kind feeds --key 42 --at 2026-11-25T10:00:00+01:00 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := refresher.SystemClock{}.Now()
			when := now
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return fmt.Errorf("--at %q: use RFC 3339, e.g. 2026-11-25T09:00:00Z", at)
				}
				when = t
			}
			c, k, store, err := openAdminKind(cmd.Context(), path, kind)
			if err != nil {
				return err
			}
			defer store.Close()
			wk := whyKind(k)
			if c.Ledger.Enabled { // pruned to ledger.max_age by the service
				wk.Keep, wk.RowMax = c.Ledger.MaxAge.D(), c.Ledger.MaxEntries
			}
			wk.LedgerOff = !c.Ledger.Enabled
			ans, err := refresher.NewAdmin(whyStore(store), nil).Why(cmd.Context(), wk, key, when, now)
			if err != nil {
				return fmt.Errorf("why: %w", err)
			}
			if asJSON {
				return writeWhyJSON(cmd.OutOrStdout(), k.Name, key, when, ans)
			}
			printWhy(cmd.OutOrStdout(), ans, all)
			return nil
		},
	}
	configFlag(cmd, &path)
	cmd.Flags().StringVar(&kind, "kind", "", "the kind of the model (required)")
	cmd.Flags().StringVar(&key, "key", "", "the model's key (required)")
	cmd.Flags().StringVar(&at, "at", "", "the time asked about, RFC 3339 (default now)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer and its entries as JSON (as the API answers)")
	cmd.Flags().BoolVar(&all, "all", false, "list every entry read, not only those the answer is built on")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

// whyKind is the kind as Admin.Why reads it.
func whyKind(k *config.Kind) refresher.WhyKind {
	return refresher.WhyKind{Name: k.Name, Table: k.ModelsTable(), ThrottleGroup: k.ThrottleGroup,
		Schedule: k.ScheduleParsed, Policy: k.Policy()}
}

// printWhy prints the sentence, then the entries (cited, or all read) one
// a line in the answer's zone.
func printWhy(w io.Writer, ans refresher.WhyAnswer, all bool) {
	fmt.Fprintln(w, ans.Sentence)
	entries, what := ans.Entries, "entries it is built on"
	if all {
		entries, what = ans.Read, "entries read"
	}
	loc := ans.Loc
	if loc == nil {
		loc = time.UTC
	}
	if len(entries) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (the ledger read from %s to %s, times %s):\n", what,
		ans.From.In(loc).Format("Jan 2 15:04"), ans.To.In(loc).Format("Jan 2 15:04"), loc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.At.In(loc).Format("2006-01-02 15:04:05 MST"), entryKey(e), e.Event, entryDetail(e, loc))
	}
	tw.Flush()
}

// entryKey names whose entry e is: "(kind)" for the whole kind's,
// "(empty key)" for a row whose key is the empty string.
func entryKey(e policy.Entry) string {
	switch {
	case e.Whole:
		return "(kind)"
	case e.Key == "":
		return "(empty key)"
	}
	return e.Key
}

// entryDetail is the fields of an entry its event uses, as words.
func entryDetail(e policy.Entry, loc *time.Location) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	// A time on another day than the entry's says its date ("next" of a
	// daily rule is tomorrow).
	day := e.At.In(loc).Format("2006-01-02")
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		t = t.In(loc)
		if t.Format("2006-01-02") != day {
			return t.Format("2006-01-02T15:04:05")
		}
		return t.Format("15:04:05")
	}
	add("attempt", e.Attempt)
	add("planned", tm(e.Planned))
	add("next", tm(e.Next))
	add("bound", e.Bound)
	add("until", tm(e.Until))
	add("reason", e.Reason)
	if e.Disabled {
		parts = append(parts, "disabled")
	}
	if e.Priority != nil {
		add("priority", fmt.Sprint(*e.Priority))
	}
	add("by", e.By)
	add("note", e.Note)
	add("group", e.Group)
	if e.Event == policy.EventRoutine {
		add("count", fmt.Sprint(e.Count))
		add("dispatched", tm(e.Dispatched)+"-"+tm(e.DispatchedLast))
	}
	return strings.Join(parts, " ")
}

func writeWhyJSON(w io.Writer, kind, key string, at time.Time, ans refresher.WhyAnswer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ans.Report(kind, key, at))
}
