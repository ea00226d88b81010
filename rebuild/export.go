package rebuild

import (
	"context"
	"fmt"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/snapshot"
)

// PartInfo says which shard a part is of, for its manifest.
type PartInfo struct {
	Shard, Shards int
	AsOf          time.Time // when the view was taken
	// Platforms are the store's routing platform suffixes
	// (shard.Router.Platforms): the fleet rebuild splits the schedule by
	// shard with them.
	Platforms []string
}

// ExportPart writes one shard's view as a part into dir (a new or empty
// directory; snapshot.CreatePart): every name the shard knows, in name
// order, with its state; its domains' out-edges by the rows of their
// targets, sorted; per (target, word) the count of its domains that used
// the word in a followed link; its visit log. A merge of the K parts of a
// store (Merge) is the whole store, with ids in name order. The view is
// sorted into name order as sp says (graph.Snapshot.LoadByName): with a
// Dir, a view larger than a chunk goes through sorted run files there, and
// so do its link-word counts, so that memory stays a chunk and the name
// index whatever the shard's size. The runs are removed when the export
// ends; sp.Dir is the caller's, which removes what a killed export left
// (keep it out of dir: the part is uploaded whole). The files are written
// as the sorted view is walked, with part.json last. The fleet's nodes
// call it for the shards they hold, then upload the directory
// (objstore.UploadDir to parts/<rebuild id>/shard=NN/).
func ExportPart(ctx context.Context, view *graph.Snapshot, dir string, info PartInfo, sp graph.Spill) (*snapshot.Part, error) {
	pb, err := snapshot.CreatePart(dir)
	if err != nil {
		return nil, err
	}
	defer pb.Abort() // after Commit, nothing
	no, err := view.LoadByName(sp)
	if err != nil {
		return nil, fmt.Errorf("export of shard %d: %w", info.Shard, err)
	}
	defer no.Close()
	return writePart(ctx, no, pb, info, sp)
}

// writePart writes the part of a view sorted into name order into pb,
// counting its link words through a tally that spills as sp says.
func writePart(ctx context.Context, no *graph.NameOrder, pb *snapshot.PartBuild, info PartInfo, sp graph.Spill) (*snapshot.Part, error) {
	domains, err := pb.CreateDomains()
	if err != nil {
		return nil, err
	}
	defer func() { abortIfOpen(domains) }()
	edges, err := pb.CreateEdges()
	if err != nil {
		return nil, err
	}
	defer func() { abortIfOpen(edges) }()
	visits, err := pb.CreateVisits()
	if err != nil {
		return nil, err
	}
	defer func() { abortIfOpen(visits) }()
	words := tallyFor(sp)
	// The writers hold rows a batch before they encode them, and the walk
	// reuses its buffers once a domain is done: states and visits are
	// copied into blocks.
	var held byteBlocks
	var stateBuf []byte
	var n int64
	err = no.Each(graph.NamedAll, func(nd *graph.Named) error {
		if n%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n++
		i := int32(nd.Index)
		stateBuf = graph.EncodeState(stateBuf[:0], &nd.State)
		if err := domains.Add(data.PartDomainRow{Domain: nd.State.Name, State: held.copy(stateBuf)}); err != nil {
			return err
		}
		for _, e := range nd.Edges {
			err := edges.Add(data.PartEdgeRow{Src: i, Dst: int32(e.Dst), FirstSeen: e.FirstSeen.UnixNano(), LastSeen: e.LastSeen.UnixNano(),
				Nofollow: e.Nofollow, Sitewide: e.Sitewide})
			if err != nil {
				return err
			}
			if !e.Nofollow {
				if err := words.add(e.Dst, e.Words); err != nil {
					return err
				}
			}
		}
		for _, v := range nd.Visits {
			if err := visits.Add(data.PartVisitRow{Domain: i, StartedAt: v.StartedAt.UnixNano(), Visit: held.copy(v.Value)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export of shard %d: %w", info.Shard, err)
	}
	counts := map[string]int64{data.PartDomainsFile: domains.Rows(), data.PartEdgesFile: edges.Rows(), data.PartVisitsFile: visits.Rows()}
	for _, w := range []interface{ Close() error }{domains, edges, visits} {
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	domains, edges, visits = nil, nil, nil
	lw, err := pb.CreateLinkWords()
	if err != nil {
		return nil, err
	}
	err = words.counts(func(dst uint32, word string, sites int64) error {
		return lw.Add(data.PartLinkWordRow{Domain: int32(dst), Word: word, Sites: sites})
	})
	if err != nil {
		lw.Abort()
		return nil, err
	}
	counts[data.PartLinkWordsFile] = lw.Rows()
	if err := lw.Close(); err != nil {
		return nil, err
	}
	m := &data.PartManifest{Format: data.PartFormat, StoreFormat: graph.FormatVersion, Shard: info.Shard, Shards: info.Shards,
		AsOf: info.AsOf.UTC(), Counts: counts, CreatedAt: time.Now().UTC(), Platforms: info.Platforms}
	if err := pb.Commit(m); err != nil {
		return nil, err
	}
	return &snapshot.Part{Dir: pb.Dir(), Manifest: *m}, nil
}

// abortIfOpen aborts a writer the export did not close.
func abortIfOpen[T any](w *snapshot.Writer[T]) {
	if w != nil {
		w.Abort()
	}
}

// byteBlocks hands out copies of many small values from large blocks,
// rather than an allocation each (a million states and visits of a
// shard).
type byteBlocks struct{ block []byte }

func (b *byteBlocks) copy(p []byte) []byte {
	if len(p) > cap(b.block)-len(b.block) {
		b.block = make([]byte, 0, max(1<<20, len(p)))
	}
	start := len(b.block)
	b.block = append(b.block, p...)
	return b.block[start:len(b.block):len(b.block)]
}
