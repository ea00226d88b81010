package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mapthenet/mapthenet/fleet"
)

// fleetFlags are --fleet (every command that talks to a fleet) and
// --node (a crawl node).
type fleetFlags struct {
	URL  string
	Node string
}

func addFleetFlag(f *pflag.FlagSet, fl *fleetFlags) {
	f.StringVar(&fl.URL, "fleet", "", "the fleet's etcd members, etcd://HOST:PORT[,HOST:PORT...] (list every member)")
}

// endpoints checks --fleet: a bad list is a usage error naming the bad part.
func (fl fleetFlags) endpoints() ([]string, error) {
	if fl.URL == "" {
		return nil, usagef("--fleet is required: etcd://HOST:PORT[,HOST:PORT...]")
	}
	eps, err := fleet.ParseURL(fl.URL)
	if err != nil {
		return nil, usageError{err}
	}
	return eps, nil
}

// nodeName is --node, or the host name when it makes a valid node name.
func (fl fleetFlags) nodeName() (string, error) {
	name := fl.Node
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", usagef("--node is required (the host name is unknown: %v)", err)
		}
		name = strings.ToLower(host)
		if fleet.CheckNodeName(name) != nil {
			return "", usagef("--node is required: the host name %q is not a valid node name (lower-case letters, digits, '.', '_', '-')", host)
		}
	}
	if err := fleet.CheckNodeName(name); err != nil {
		return "", usageError{err}
	}
	return name, nil
}

// checkCrawlFleet validates crawl's --fleet and --node.
func checkCrawlFleet(fl fleetFlags) error {
	if fl.URL == "" {
		if fl.Node != "" {
			return usagef("--node %s: a node name needs --fleet", fl.Node)
		}
		return nil
	}
	if _, err := fl.endpoints(); err != nil {
		return err
	}
	_, err := fl.nodeName()
	return err
}

func newFleetCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "A crawl fleet coordinated through etcd: make one, see its state",
		Long: `fleet manages the coordination of several crawl machines through etcd
(README, "More than one machine"). The keys it keeps under /mapthenet/v1/
are described in DESIGN.md, "Fleet coordination".`,
	}
	cmd.AddCommand(newFleetInitCommand(a), newFleetStatusCommand())
	return cmd
}

func newFleetInitCommand(a *app) *cobra.Command {
	var fl fleetFlags
	var shards int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "init --fleet URL --shards K",
		Short: "Make a fleet in etcd: its shard count and pace secret",
		Long: `fleet init writes the fleet's config (its shard count, fixed from then on)
and the secret its nodes key shared IP pace keys with, in one transaction
that succeeds only on an etcd without a fleet. Run it once; again, with
the same --shards, it says the fleet is there and changes nothing; with
another shard count it fails.`,
		Example: `  mapthenet fleet init --fleet etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --shards 64`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eps, err := fl.endpoints()
			if err != nil {
				return err
			}
			if shards < 1 || shards > fleet.MaxShards {
				return usagef("--shards %d: want 1 to %d", shards, fleet.MaxShards)
			}
			now, err := a.now()
			if err != nil {
				return err
			}
			cli, err := fleet.Dial(eps)
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			c, made, err := fleet.Init(ctx, cli, shards, now)
			if err != nil {
				return etcdError(err, eps, timeout)
			}
			what := "made"
			if !made {
				what = "already there, unchanged"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "fleet %s at %s: %s (%d shards, created %s)\n",
				c.FleetID, fleet.FormatURL(eps), what, c.Shards, snapshotTime(c.CreatedAt))
			return err
		},
	}
	addFleetFlag(cmd.Flags(), &fl)
	cmd.Flags().IntVar(&shards, "shards", 64, "shards the fleet's store is split into: at least 4 per node you may run, fixed once made")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for etcd")
	addNowFlag(cmd, a)
	return cmd
}

func newFleetStatusCommand() *cobra.Command {
	var fl fleetFlags
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status --fleet URL [--json]",
		Short: "The fleet's nodes, shards and owners, leases, last export and due counts",
		Long: `fleet status reads the fleet from etcd in one consistent read: the live
nodes (address, version, seconds left on their lease, shards held and
targeted, due counts), each shard (owner, fencing token, target node when
it is moving, last export, due counts), and the rebuild lock and barrier.
Due counts are what each shard's owner last counted (every minute, and
when its schedule or shards change): "due", the shard's schedule rows due
now of domains visited before and not visited since the schedule was
made; "waiting", the domains never visited that are due or seeds of the
run. A node's are the sums over the shards it holds.

--json prints {"endpoints", "revision", "config", "nodes": [...],
"shards": [...], "rebuild": {...}}; times RFC 3339 UTC.`,
		Example: `  mapthenet fleet status --fleet etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
  mapthenet fleet status --fleet etcd://127.0.0.1:2379 --json | jq '.nodes[] | {name, lease_ttl_left_s}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eps, err := fl.endpoints()
			if err != nil {
				return err
			}
			cli, err := fleet.Dial(eps)
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			st, err := fleet.ReadStatus(ctx, cli, eps)
			if err != nil {
				return etcdError(err, eps, timeout)
			}
			if asJSON {
				return writeJSONDoc(cmd.OutOrStdout(), st)
			}
			return writeFleetStatus(cmd.OutOrStdout(), st)
		},
	}
	addFleetFlag(cmd.Flags(), &fl)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (shape above)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for etcd")
	return cmd
}

// etcdError says which etcd did not answer, rather than gRPC's words alone.
func etcdError(err error, eps []string, timeout time.Duration) error {
	if strings.Contains(err.Error(), "context deadline exceeded") {
		return fmt.Errorf("etcd at %s did not answer within %v (is it running, with a quorum of its members?)", fleet.FormatURL(eps), timeout)
	}
	return err
}

func writeFleetStatus(w io.Writer, st *fleet.Status) error {
	if st.Config == nil {
		_, err := fmt.Fprintf(w, "no fleet at %s yet (mapthenet fleet init makes one)\n", fleet.FormatURL(st.Endpoints))
		return err
	}
	fmt.Fprintf(w, "fleet %s at %s: %d shards, etcd revision %d\n", st.Config.FleetID, fleet.FormatURL(st.Endpoints), st.Config.Shards, st.Revision)
	fmt.Fprintf(w, "nodes: %d live\n", len(st.Nodes))
	for _, n := range st.Nodes {
		lease := "lease gone"
		if n.LeaseTTLLeft >= 0 {
			lease = fmt.Sprintf("lease %.0fs left", n.LeaseTTLLeft)
		}
		fmt.Fprintf(w, "  %s  %s  %s pid %d  %s  holds %d (%s)", n.Name, n.Version, n.Host, n.PID, lease, len(n.Shards), fleet.ShardList(n.Shards))
		if len(n.Targets) != len(n.Shards) || fleet.ShardList(n.Targets) != fleet.ShardList(n.Shards) {
			fmt.Fprintf(w, ", to hold %s", fleet.ShardList(n.Targets))
		}
		if n.Settling {
			fmt.Fprint(w, ", settling (just joined: takes its shards once it has been a member for the lease TTL)")
		}
		if n.Due != nil && n.Waiting != nil {
			fmt.Fprintf(w, ", %d due, %d waiting", *n.Due, *n.Waiting)
		}
		if n.Addr != "" {
			fmt.Fprintf(w, ", metrics %s", n.Addr)
		}
		fmt.Fprintln(w)
	}
	var unowned, moving []int
	for _, s := range st.Shards {
		switch {
		case s.Owner == "":
			unowned = append(unowned, s.Shard)
		case s.Target != s.Owner:
			moving = append(moving, s.Shard)
		}
	}
	fmt.Fprintf(w, "shards: %d owned, %d without owner (%s), %d moving (%s)\n",
		len(st.Shards)-len(unowned), len(unowned), fleet.ShardList(unowned), len(moving), fleet.ShardList(moving))
	for _, s := range st.Shards {
		line := fmt.Sprintf("  %4d  -", s.Shard)
		if s.Owner != "" {
			line = fmt.Sprintf("  %4d  %-12s token %-8d", s.Shard, s.Owner, s.Token)
		}
		if s.Target != s.Owner && s.Target != "" {
			line += "  -> " + s.Target
		}
		if e := s.LastExport; e != nil {
			line += fmt.Sprintf("  export %s (%d rows)", e.ID, e.Part.Rows)
		}
		if c := s.Counts; c != nil {
			line += fmt.Sprintf("  %d due, %d waiting at %s", c.Due, c.Waiting, snapshotTime(c.At))
			if c.Token != s.Token {
				line += " (by " + c.Node + ", an earlier owner)"
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	rb := st.Rebuild
	switch {
	case rb.LockHolder != nil:
		fmt.Fprintf(w, "rebuild: running: %s pid %d on %s since %s\n", rb.LockHolder.Command, rb.LockHolder.PID, rb.LockHolder.Host, snapshotTime(rb.LockHolder.Since))
	default:
		fmt.Fprintln(w, "rebuild: none running")
	}
	for _, r := range rb.Open {
		fmt.Fprintf(w, "  barrier %s: %d of %d shards answered, deadline %s\n", r.ID, rb.Answers[r.ID], r.Shards, snapshotTime(r.Deadline))
	}
	if l := rb.Last; l != nil {
		outcome := "ok"
		if !l.OK {
			outcome = "failed: " + l.Error
		}
		fmt.Fprintf(w, "  last barrier %s at %s: %d of %d exported, %s\n", l.ID, snapshotTime(l.FinishedAt), l.Exported, l.Shards, outcome)
	}
	return nil
}
