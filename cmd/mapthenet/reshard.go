package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
)

func newStoreReshardCommand(a *app) *cobra.Command {
	var shards int
	var platforms []string
	cmd := &cobra.Command{
		Use:   "reshard --shards K",
		Short: "Rewrite the store into K shards (offline)",
		Long: `reshard rewrites <data-dir>/store into K shards, each its own Badger store
committed in parallel (see DESIGN.md, "Shards"); K 1 is a single store.
It runs offline: with a crawl or rebuild holding the store it exits 3.

It copies every shard into a new store beside the old one, checks that the
new one holds exactly what the old one does (both are exported and merged
as a rebuild would, and the merged domains, edges, visits and link-word
counts compared), and only then swaps the two directories in one step:
<data-dir>/store is the old store or the new one, never neither. The old
store is kept as store.old-TIME: remove it when the new one has served a
crawl and a rebuild. It needs room for a second copy of the store, and
for its scratch files: shards sorted by name and the check's parts, in
.store.reshard-sort-* beside the store, removed when it ends.

Domains are routed to shards by --platform (each SUFFIX's sites in one
shard), by default the store's own routing (or the crawl's default table
for a store of one shard).`,
		Example: `  mapthenet store reshard --shards 8
  mapthenet store reshard --shards 4 --platform neocities.org --platform github.io`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if shards < 1 || shards > shard.MaxShards {
				return usagef("--shards %d: want 1 to %d", shards, shard.MaxShards)
			}
			var ps []string
			for _, p := range platforms {
				pl, err := crawl.ParsePlatform(p + "=1s")
				if err != nil {
					return usagef("--platform %q: want a domain suffix such as neocities.org", p)
				}
				ps = append(ps, pl.Suffix)
			}
			dir := storePath(a.DataDir)
			res, err := shard.Reshard(dir, shard.ReshardOptions{
				Shards:           shards,
				Platforms:        ps,
				DefaultPlatforms: platformSuffixes(nil),
				Logger:           a.logger,
				Verify: func(old, nw *shard.Store, scratch string) error {
					a.logger.Info("resharding: checking the new store against the old one")
					return rebuild.SameContent(cmd.Context(), old, nw, scratch)
				},
			})
			switch {
			case errors.Is(err, graph.ErrLocked):
				return busyError{fmt.Errorf("%w: stop the crawl (or let the rebuild finish), then reshard", err)}
			case errors.Is(err, graph.ErrNoStore):
				return fmt.Errorf("no store in data dir %s: nothing to reshard", a.DataDir)
			case err != nil:
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "store %s resharded from %d to %d shard(s) (%d domain records copied, checked); the old store is at %s: remove it once the new one has served a crawl and a rebuild\n",
				dir, res.From, res.To, res.Domains, res.Old)
			return nil
		},
	}
	cmd.Flags().IntVar(&shards, "shards", 0, "the number of shards to rewrite the store into (required)")
	cmd.Flags().StringArrayVar(&platforms, "platform", nil, "a shared platform's suffix whose sites must share a shard (repeatable; default: the store's)")
	return cmd
}
