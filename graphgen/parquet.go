package graphgen

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
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
func (g *Generator) WriteEdgesParquet(path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("graphgen: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
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
	err = g.Edges(func(src, dst uint32, nofollow bool) error {
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
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes it 0600
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("graphgen: writing %s: %w", path, err)
	}
	return nil
}
