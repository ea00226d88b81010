package graphgen

import (
	"fmt"
	"os"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
	"github.com/mapthenet/mapthenet/internal/parallel"
)

// EdgeRow is one row of the edge files WriteEdgesParquet writes: the
// columns `rank --edges` reads (a subset of data.EdgeRow's).
type EdgeRow struct {
	Src      string `parquet:"src"`
	Dst      string `parquet:"dst"`
	Nofollow bool   `parquet:"nofollow"`
}

// rowsPerGroup bounds what the writer buffers: a row group of 1M rows of
// short names is a few tens of MB, so even L streams in bounded memory.
const (
	rowsPerGroup = 1 << 20
	writeBatch   = 8192
)

// WriteEdgesParquet writes the graph as a Parquet file of EdgeRow (zstd),
// grouped by source id as Edges yields them. It streams: memory stays
// bounded whatever the graph's size. The file appears at path only when
// complete (written to a temporary file beside it, then renamed).
func (g *Generator) WriteEdgesParquet(path string) error {
	return writeFile(path, func(tmp *os.File) error { return g.writeEdges(tmp) })
}

func (g *Generator) writeEdges(tmp *os.File) error {
	w := parquet.NewGenericWriter[EdgeRow](tmp,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(rowsPerGroup),
	)
	batch := make([]EdgeRow, 0, writeBatch)
	flush := func() error {
		if _, err := w.Write(batch); err != nil {
			return err
		}
		batch = batch[:0]
		return nil
	}
	var buf []byte
	// Names of the current source are made once per source.
	lastSrc, srcName := uint32(1<<32-1), ""
	err := g.Edges(func(src, dst uint32, nofollow bool) error {
		if src != lastSrc {
			lastSrc, srcName = src, g.Name(src)
		}
		buf = g.AppendName(buf[:0], dst)
		batch = append(batch, EdgeRow{Src: srcName, Dst: string(buf), Nofollow: nofollow})
		if len(batch) == writeBatch {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err == nil {
		err = w.Close()
	}
	return err
}

// IDEdgeRow is one row of the edge files of ids WriteIDEdgesParquet
// writes: the id columns of the snapshot's edges.parquet (data.EdgeRow),
// encoded as the snapshot encodes them.
type IDEdgeRow struct {
	SrcID    int32 `parquet:"src_id,delta"`
	DstID    int32 `parquet:"dst_id"`
	Nofollow bool  `parquet:"nofollow"`
}

// IDFileOptions are WriteIDEdgesParquet's options.
type IDFileOptions struct {
	RowGroupRows int // rows per row group: 0 means 1<<20, as the snapshot's edges.parquet
	Workers      int // goroutines drawing edges: 0 means 1
}

// idChunkEdges is about how many edges one worker draws at a time.
const idChunkEdges = 1 << 20

// WriteIDEdgesParquet writes the graph as a snapshot-style edge file of
// ids (IDEdgeRow, zstd): sorted by (src_id, dst_id), each pair once, no
// self-loop. Sources are drawn in stretches of about a million edges on
// o.Workers goroutines and written in order, so the file is the same for
// any workers; memory stays bounded whatever the graph's size. The file
// appears at path only when complete.
func (g *Generator) WriteIDEdgesParquet(path string, o IDFileOptions) error {
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = rowsPerGroup
	}
	o.Workers = max(1, o.Workers)
	return writeFile(path, func(tmp *os.File) error { return g.writeIDEdges(tmp, o) })
}

func (g *Generator) writeIDEdges(tmp *os.File, o IDFileOptions) error {
	w := parquet.NewGenericWriter[IDEdgeRow](tmp,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(int64(o.RowGroupRows)),
	)
	// Stretches of sources of about idChunkEdges edges each.
	var bounds []uint32
	acc := 0
	for src := range uint32(g.cfg.Domains) {
		if acc == 0 {
			bounds = append(bounds, src)
		}
		acc += int(g.outDeg[src])
		if acc >= idChunkEdges {
			acc = 0
		}
	}
	bounds = append(bounds, uint32(g.cfg.Domains))
	// Workers make the stretches' rows, the writer writes them in order.
	err := parallel.Ordered(len(bounds)-1, o.Workers, 2*o.Workers, func(i int) ([]IDEdgeRow, error) {
		var rows []IDEdgeRow
		start := 0
		err := g.EdgesOf(bounds[i], bounds[i+1], func(src, dst uint32, nofollow bool) error {
			if len(rows) > start && rows[start].SrcID != int32(src) {
				sortTargets(rows[start:])
				start = len(rows)
			}
			rows = append(rows, IDEdgeRow{SrcID: int32(src), DstID: int32(dst), Nofollow: nofollow})
			return nil
		})
		sortTargets(rows[start:])
		return rows, err
	}, func(_ int, rows []IDEdgeRow) error {
		_, err := w.Write(rows)
		return err
	})
	if err != nil {
		return err
	}
	return w.Close()
}

// writeFile makes the file at path with write, atomically
// (atomicfile.Write, 0644).
func writeFile(path string, write func(*os.File) error) error {
	if err := atomicfile.Write(path, 0o644, write); err != nil {
		return fmt.Errorf("graphgen: writing %s: %w", path, err)
	}
	return nil
}

// sortTargets sorts one source's rows by target.
func sortTargets(rows []IDEdgeRow) {
	slices.SortFunc(rows, func(a, b IDEdgeRow) int { return int(a.DstID) - int(b.DstID) })
}
