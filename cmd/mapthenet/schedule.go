package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

type scheduleFlags struct {
	Limit    int
	JSON     bool
	Snapshot string
}

func newScheduleCommand(a *app) *cobra.Command {
	var fl scheduleFlags
	cmd := &cobra.Command{
		Use:   "schedule [--limit N] [--json]",
		Short: "Show what the crawl visits next, when and why",
		Long: `schedule lists the current snapshot's schedule (schedule.parquet) in the
order the crawl takes it: soonest first, then most linking domains, then by
name. Each row says when the domain is next due and why:

  new      never visited; followed links from --min-in-domains domains
           (rebuild's, default 1) point to it, or it is a seed
  revisit  visited before: its last visit plus its tier's interval
  retry    its last visit failed: the backoff (1 day for timeouts and
           network errors, an hour or Retry-After when throttled, 90 days
           behind bot protection, doubling up to 365 days)

WHY spells the reason out for this row: the tier and its interval of a
revisit, the failed outcome and how many times in a row of a retry, the
number of linking domains of a new one.

PRIORITY orders domains due at the same time: the number of distinct
domains with a followed link to it (in_domains), most first; then by name.

A row is due when its time is at or before --now. Domains known only
through nofollow links are never scheduled.

--json prints {"snapshot": ID, "as_of": T, "now": T, "total": N, "due": N,
"schedule": [{"domain", "next_visit", "due", "reason", "why", "tier",
"pages", "priority"}]} with RFC 3339 UTC times.`,
		Example: `  mapthenet schedule
  mapthenet schedule --limit 100 --json
  mapthenet schedule --now 2026-12-24T00:00:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runSchedule(cmd, fl)
		},
	}
	addNowFlag(cmd, a)
	f := cmd.Flags()
	f.IntVar(&fl.Limit, "limit", 20, "show the first N rows (0: all)")
	f.BoolVar(&fl.JSON, "json", false, "print one JSON document (shape above)")
	f.StringVar(&fl.Snapshot, "snapshot", "", "read this snapshot id instead of the current one")
	return cmd
}

type scheduleJSON struct {
	Snapshot string             `json:"snapshot"`
	AsOf     time.Time          `json:"as_of"`
	Now      time.Time          `json:"now"`
	Total    int                `json:"total"`
	Due      int                `json:"due"`
	Schedule []scheduleItemJSON `json:"schedule"`
}

type scheduleItemJSON struct {
	Domain    string    `json:"domain"`
	NextVisit time.Time `json:"next_visit"`
	Due       bool      `json:"due"`
	Reason    string    `json:"reason"`
	Why       string    `json:"why"`
	Tier      int32     `json:"tier"`
	Pages     int32     `json:"pages"`
	Priority  int64     `json:"priority"`
}

func (a *app) runSchedule(cmd *cobra.Command, fl scheduleFlags) error {
	now, err := a.now()
	if err != nil {
		return err
	}
	if fl.Limit < 0 {
		return usagef("--limit %d: want 0 (all) or more", fl.Limit)
	}
	s, err := snapshot.Open(a.DataDir, fl.Snapshot)
	if err != nil {
		return err
	}
	rows, err := s.Schedule()
	if err != nil {
		return err
	}
	due := 0
	for _, r := range rows {
		if !r.NextVisit.After(now) {
			due++
		}
	}
	total := len(rows)
	if fl.Limit > 0 && len(rows) > fl.Limit {
		rows = rows[:fl.Limit]
	}
	why, err := scheduleWhy(s, rows)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if fl.JSON {
		out := scheduleJSON{Snapshot: s.ID, AsOf: s.Manifest.AsOf, Now: now, Total: total, Due: due, Schedule: []scheduleItemJSON{}}
		for _, r := range rows {
			out.Schedule = append(out.Schedule, scheduleItemJSON{Domain: r.Domain, NextVisit: r.NextVisit, Due: !r.NextVisit.After(now),
				Reason: r.Reason, Why: why[r.Domain], Tier: r.Tier, Pages: r.Pages, Priority: r.Priority})
		}
		return writeJSONDoc(w, out)
	}
	fmt.Fprintf(w, "snapshot %s (as of %s): %d scheduled, %d due at %s\n", s.ID, snapshotTime(s.Manifest.AsOf), total, due, snapshotTime(now))
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NEXT VISIT\tWHEN\tREASON\tTIER\tPAGES\tPRIORITY\tDOMAIN\tWHY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", snapshotTime(r.NextVisit), dueText(r, now), r.Reason, r.Tier, r.Pages, r.Priority, r.Domain, why[r.Domain])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total > len(rows) {
		fmt.Fprintf(w, "... %d more (--limit 0 shows all)\n", total-len(rows))
	}
	return nil
}

// dueText says when a row is due relative to now, in whole days or hours.
func dueText(r data.ScheduleRow, now time.Time) string {
	d := r.NextVisit.Sub(now)
	if d <= 0 {
		return "due"
	}
	if d < 48*time.Hour {
		return fmt.Sprintf("in %dh", int(d.Hours()+0.999))
	}
	return fmt.Sprintf("in %dd", int(d.Hours()/24+0.999))
}

// scheduleWhy explains each row from its domain's row in domains.parquet,
// read in one pass that keeps only the rows shown.
func scheduleWhy(s *snapshot.Snapshot, rows []data.ScheduleRow) (map[string]string, error) {
	shown := make(map[string]data.ScheduleRow, len(rows))
	for _, r := range rows {
		shown[r.Domain] = r
	}
	why := make(map[string]string, len(rows))
	err := s.EachDomain(func(batch []data.DomainRow) error {
		for i := range batch {
			if r, ok := shown[batch[i].Domain]; ok {
				why[r.Domain] = explainRow(r, &batch[i])
			}
		}
		return nil
	})
	return why, err
}

// explainRow is one row's WHY.
func explainRow(r data.ScheduleRow, d *data.DomainRow) string {
	switch r.Reason {
	case data.ReasonRevisit:
		return fmt.Sprintf("tier %d: every %d days after the last visit", d.Tier, d.RevisitDays)
	case data.ReasonRetry:
		outcome := "a failure"
		if d.LastOutcome != nil {
			outcome = *d.LastOutcome
		}
		if d.Failures > 1 {
			return fmt.Sprintf("retry after %s, %d in a row (the wait doubles each time)", outcome, d.Failures)
		}
		return "retry after " + outcome
	case data.ReasonNew:
		switch r.Priority {
		case 0:
			return "never visited: a seed, or linked to before"
		case 1:
			return "never visited: 1 linking domain"
		}
		return fmt.Sprintf("never visited: %d linking domains", r.Priority)
	}
	return ""
}
