package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/snapshot"
)

type rankFlags struct {
	Top      int
	JSON     bool
	Snapshot string
	Edges    string
	Out      string
	IDs      bool
	Workers  int
}

func newRankCommand(a *app) *cobra.Command {
	var fl rankFlags
	cmd := &cobra.Command{
		Use:   "rank DOMAIN... | rank --top N | rank --edges IN.parquet --out OUT.parquet",
		Short: "Show domains' ranks from the current snapshot, or rank an edge file",
		Long: `rank DOMAIN... shows, from the current snapshot, each domain's rank and its
move since the previous snapshot, score, revisit tier, linking and linked
domains (followed links), its top link words, whether it opted out of
crawling, and a timeline: its recent visits (newest first, up to 10) with
outcome, HTTP status and pages, then its next visit and why. A DOMAIN may
be a host or URL: it is reduced to its registrable domain.

rank --top N lists the N best-ranked domains.

rank --edges IN.parquet --out OUT.parquet ranks any edge list standalone:
IN needs string columns src and dst (and may have a boolean nofollow);
OUT gets domain, rank, score, in_domains, out_domains: ranked domains by
rank, then those with no followed in-link (rank null) by name. Memory:
about 24 bytes an edge row and 140 a domain name (the name table holds a
name in about 90 bytes: a 32-byte slot at 35 to 70% full, its reference and
its bytes; the log's "read edge file" line gives its size). A file whose
rows and names would need more than GOMEMLIMIT (or the machine's memory)
is refused as soon as that shows, before memory runs out, and the error
says so.

An edge file of ids (integer columns src_id and dst_id, and nofollow, as
a snapshot's edges.parquet has: sorted by (src_id, dst_id), each pair
once, no self-loop) is ranked streamed, in two passes over the file, with
no edge list and no names in memory: 4 bytes an edge and 32 a domain at
the peak (PageRank; 40 a domain on a graph that converges slowly enough
for it to extrapolate), plus fixed buffers. Files with only id columns
are read so; --ids reads the ids of a file that has names too. Domains
are the ids 0 to the largest; OUT has id in place of domain (ties and
unranked rows by id). A file that breaks the contract (out of order,
repeated pair, self-loop, negative id) is refused with the row.

--json prints one JSON document instead of text:
  rank DOMAIN...: {"snapshot": ID, "as_of": T, "domains": [{"domain",
    "rank" (null: unranked), "prev_rank", "move" (prev_rank - rank; null
    when either is null), "score", "tier", "revisit_days",
    "pages_per_visit", "in_domains", "out_domains", "opted_out",
    "first_seen", "last_visit", "last_outcome", "last_status", "failures",
    "link_words": [{"word", "sites"}],
    "visits": [{"started_at", "finished_at", "outcome", "http_status",
      "pages", "bytes", "error"}],
    "next_visit": {"at", "reason" (new|revisit|retry), "why", "tier",
      "pages", "priority"} or null}]}
  rank --top N: {"snapshot": ID, "as_of": T, "top": [{"rank", "domain",
    "score", "prev_rank", "move", "in_domains", "out_domains", "tier"}]}
  rank --edges: {"domains", "rows", "followed_edges", "ranked",
    "iterations", "extrapolations", "residual", "out"}
Times are RFC 3339 UTC.`,
		Example: `  mapthenet rank example.com
  mapthenet rank https://www.example.co.uk/page blog.example.org --json
  mapthenet rank --top 20
  mapthenet rank --edges edges.parquet --out ranks.parquet
  mapthenet rank --edges rebuilds/current/edges.parquet --ids --out ranks-by-id.parquet`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRank(cmd, fl, args)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.Top, "top", 0, "list the N best-ranked domains")
	f.BoolVar(&fl.JSON, "json", false, "print one JSON document (shape above)")
	f.StringVar(&fl.Snapshot, "snapshot", "", "read this snapshot id instead of the current one")
	f.StringVar(&fl.Edges, "edges", "", "rank this edge file (Parquet: src/dst or src_id/dst_id columns) standalone")
	f.StringVar(&fl.Out, "out", "", "with --edges: write the ranks to this Parquet file")
	f.BoolVar(&fl.IDs, "ids", false, "with --edges: rank by the src_id and dst_id columns, streamed (no names in memory)")
	f.IntVar(&fl.Workers, "workers", 0, "with --edges: PageRank workers (0: every core)")
	return cmd
}

func (a *app) runRank(cmd *cobra.Command, fl rankFlags, args []string) error {
	w := cmd.OutOrStdout()
	switch {
	case fl.Edges != "" || fl.Out != "":
		if fl.Edges == "" || fl.Out == "" {
			return usagef("--edges and --out go together")
		}
		if len(args) > 0 || fl.Top != 0 {
			return usagef("--edges ranks a file: no DOMAIN or --top with it")
		}
		return a.rankEdgeFile(cmd, fl)
	case fl.IDs:
		return usagef("--ids goes with --edges")
	case fl.Top != 0:
		if fl.Top < 0 {
			return usagef("--top %d: want a positive number", fl.Top)
		}
		if len(args) > 0 {
			return usagef("give DOMAINs or --top, not both")
		}
		return a.rankTop(w, fl)
	case len(args) == 0:
		return usagef("name at least one DOMAIN, or use --top N or --edges")
	}
	names := make([]string, len(args))
	for i, arg := range args {
		n, err := domain.Normalize(arg)
		if err != nil {
			return usagef("%q is not a domain: %v", arg, err)
		}
		names[i] = n
	}
	s, err := snapshot.Open(a.DataDir, fl.Snapshot)
	if err != nil {
		return err
	}
	reps, err := s.Lookup(names)
	if err != nil {
		return err
	}
	if fl.JSON {
		out := rankDomainsJSON{Snapshot: s.ID, AsOf: s.Manifest.AsOf}
		for _, r := range reps {
			out.Domains = append(out.Domains, r.JSON())
		}
		return writeJSONDoc(w, out)
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printDomainReport(w, s, r)
	}
	return nil
}

func (a *app) rankEdgeFile(cmd *cobra.Command, fl rankFlags) error {
	p := rank.DefaultParams
	p.Workers = fl.Workers
	sum, err := rank.RankFile(cmd.Context(), fl.Edges, fl.Out, fl.IDs, p, a.logger)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if fl.JSON {
		return writeJSONDoc(w, map[string]any{
			"domains": sum.Domains, "rows": sum.Rows, "followed_edges": sum.FollowedEdges, "ranked": sum.Ranked,
			"iterations": sum.Iterations, "extrapolations": sum.Extrapolations, "residual": sum.Residual, "out": fl.Out,
		})
	}
	total := 0.0
	for _, s := range sum.Stages {
		total += s.Seconds
	}
	fmt.Fprintf(w, "ranked %s → %s in %.2fs\n", fl.Edges, fl.Out, total)
	fmt.Fprintf(w, "  %d edge rows, %d followed edges, %d domains, %d ranked\n", sum.Rows, sum.FollowedEdges, sum.Domains, sum.Ranked)
	printPageRank(w, sum.Iterations, sum.Extrapolations, sum.Residual)
	return nil
}

func (a *app) rankTop(w io.Writer, fl rankFlags) error {
	s, err := snapshot.Open(a.DataDir, fl.Snapshot)
	if err != nil {
		return err
	}
	top, err := s.Top(fl.Top)
	if err != nil {
		return err
	}
	if fl.JSON {
		out := rankTopJSON{Snapshot: s.ID, AsOf: s.Manifest.AsOf, Top: []topJSON{}}
		for _, r := range top {
			out.Top = append(out.Top, topJSON{Rank: *r.Rank, Domain: r.Domain, Score: r.Score, PrevRank: r.PrevRank,
				Move: rankMove(r.PrevRank, r.Rank), InDomains: r.InDomains, OutDomains: r.OutDomains, Tier: r.Tier})
		}
		return writeJSONDoc(w, out)
	}
	fmt.Fprintf(w, "snapshot %s (as of %s): top %d of %d ranked\n", s.ID, snapshotTime(s.Manifest.AsOf), fl.Top, s.Manifest.Rank.Ranked)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RANK\tMOVE\tSCORE\tIN\tOUT\tTIER\t  DOMAIN")
	for _, r := range top {
		fmt.Fprintf(tw, "%d\t%s\t%.6g\t%d\t%d\t%d\t  %s\n", *r.Rank, moveText(r.PrevRank, r.Rank, true), r.Score, r.InDomains, r.OutDomains, r.Tier, r.Domain)
	}
	return tw.Flush()
}

func rankMove(prev, cur *int64) *int64 {
	if prev == nil || cur == nil {
		return nil
	}
	m := *prev - *cur
	return &m
}

// moveText says how a rank moved since the previous snapshot.
func moveText(prev, cur *int64, short bool) string {
	switch m := rankMove(prev, cur); {
	case cur == nil:
		return ""
	case m == nil && short:
		return "new"
	case m == nil:
		return "new in the ranking"
	case *m == 0 && short:
		return "="
	case *m == 0:
		return "unchanged"
	case *m > 0 && short:
		return fmt.Sprintf("+%d", *m)
	case *m > 0:
		return fmt.Sprintf("up %d", *m)
	case short:
		return fmt.Sprintf("%d", *m)
	default:
		return fmt.Sprintf("down %d", -*m)
	}
}

func snapshotTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func printDomainReport(w io.Writer, s *snapshot.Snapshot, r snapshot.DomainReport) {
	fmt.Fprintln(w, r.Domain)
	row := func(label, format string, a ...any) {
		fmt.Fprintf(w, "  %-12s"+format+"\n", append([]any{label}, a...)...)
	}
	if r.Rank != nil {
		since := ""
		if s.Manifest.Previous != "" {
			since = " since " + s.Manifest.Previous
		}
		row("rank", "%d (%s%s)", *r.Rank, moveText(r.PrevRank, r.Rank, false), since)
	} else {
		row("rank", "unranked (no followed link to it)")
	}
	row("score", "%.9g", r.Score)
	row("tier", "%d: revisit every %d days, %d pages a visit", r.Tier, r.RevisitDays, r.PagesPerVisit)
	row("linked from", "%d domains", r.InDomains)
	row("links to", "%d domains", r.OutDomains)
	if len(r.LinkWords) > 0 {
		var ws []string
		for _, lw := range r.LinkWords {
			ws = append(ws, fmt.Sprintf("%s (%d)", lw.Word, lw.Sites))
		}
		row("link words", "%s", strings.Join(ws, ", "))
	}
	if r.OptedOut {
		row("opted out", "yes: its robots.txt shuts MapTheNetBot out; opted out of crawling, still ranked by its links")
	}
	fmt.Fprintf(w, "  timeline (newest first)\n")
	if r.Next != nil {
		fmt.Fprintf(w, "    %s  next visit, %d pages: %s\n", snapshotTime(r.Next.NextVisit), r.Next.Pages,
			r.Why())
	} else if r.LastVisit == nil {
		fmt.Fprintf(w, "    not scheduled: known only through nofollow links\n")
	}
	for _, v := range r.Visits {
		line := fmt.Sprintf("    %s  %s, status %d, %d pages", snapshotTime(v.StartedAt), v.Outcome, v.HTTPStatus, v.Pages)
		if v.Error != nil {
			line += ": " + *v.Error
		}
		fmt.Fprintln(w, line)
	}
	if len(r.Visits) == 0 {
		fmt.Fprintf(w, "    never visited (first seen %s)\n", snapshotTime(r.FirstSeen))
	}
}

// JSON shapes (documented in the command's help).
type rankDomainsJSON struct {
	Snapshot string                `json:"snapshot"`
	AsOf     time.Time             `json:"as_of"`
	Domains  []snapshot.DomainJSON `json:"domains"`
}

type rankTopJSON struct {
	Snapshot string    `json:"snapshot"`
	AsOf     time.Time `json:"as_of"`
	Top      []topJSON `json:"top"`
}

type topJSON struct {
	Rank       int64   `json:"rank"`
	Domain     string  `json:"domain"`
	Score      float64 `json:"score"`
	PrevRank   *int64  `json:"prev_rank"`
	Move       *int64  `json:"move"`
	InDomains  int64   `json:"in_domains"`
	OutDomains int64   `json:"out_domains"`
	Tier       int32   `json:"tier"`
}

func writeJSONDoc(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printPageRank writes the PageRank line of rank --edges's and rebuild's
// reports.
func printPageRank(w io.Writer, iterations, extrapolations int, residual float64) {
	fmt.Fprintf(w, "  PageRank: %d iterations, residual %.3g", iterations, residual)
	if extrapolations > 0 {
		fmt.Fprintf(w, ", %d extrapolations", extrapolations)
	}
	fmt.Fprintln(w)
}
