package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// LayoutFile is a sharded store's format file, at the store's root.
const LayoutFile = "shards.json"

// LayoutFormat is the version of LayoutFile this code writes and reads.
const LayoutFormat = 1

// HashName names the routing of Router.Of in LayoutFile.
const HashName = "xxhash64-jump"

// Layout is what LayoutFile holds, and (with Shard set) what each shard
// keeps under graph.MetaShard: K, the routing, and in a shard its number.
// A store of one shard in today's layout (the store directory is the one
// Badger store) has neither.
type Layout struct {
	Format    int      `json:"format"`
	Shards    int      `json:"shards"`
	Hash      string   `json:"hash"`
	Platforms []string `json:"platforms"`
	Shard     *int     `json:"shard,omitempty"`
}

// Router is the layout's routing.
func (l Layout) Router() (Router, error) {
	if l.Format != LayoutFormat {
		return Router{}, fmt.Errorf("%w: layout format %d, this program reads %d", ErrLayout, l.Format, LayoutFormat)
	}
	if l.Hash != HashName {
		return Router{}, fmt.Errorf("%w: routing %q, this program routes by %s", ErrLayout, l.Hash, HashName)
	}
	r, err := NewRouter(l.Shards, l.Platforms)
	if err != nil {
		return Router{}, fmt.Errorf("%w: %w", ErrLayout, err)
	}
	if !slices.Equal(r.Platforms(), l.Platforms) {
		return Router{}, fmt.Errorf("%w: platforms %q are not in their canonical order", ErrLayout, l.Platforms)
	}
	return r, nil
}

func layoutOf(r Router) Layout {
	return Layout{Format: LayoutFormat, Shards: r.Shards(), Hash: HashName, Platforms: r.Platforms()}
}

// ErrLayout: a sharded store's format file or a shard's identity is
// missing, unreadable or disagrees with the others.
var ErrLayout = errors.New("shard: bad store layout")

// ShardDir is shard i's directory name under the store.
func ShardDir(i int) string { return fmt.Sprintf("shard-%02d", i) }

// ReadLayout reads dir's LayoutFile; ok is false when there is none (a
// store in today's one-shard layout, or no store).
func ReadLayout(dir string) (l Layout, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, LayoutFile))
	if errors.Is(err, os.ErrNotExist) {
		return l, false, nil
	}
	if err != nil {
		return l, false, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, false, fmt.Errorf("%w: %s: %v", ErrLayout, filepath.Join(dir, LayoutFile), err)
	}
	if _, err := l.Router(); err != nil {
		return l, false, fmt.Errorf("%s: %w", filepath.Join(dir, LayoutFile), err)
	}
	return l, true, nil
}

// writeLayout writes LayoutFile into dir, synced.
func writeLayout(dir string, l Layout) error {
	b, err := layoutJSON(l)
	if err != nil {
		return err
	}
	return writeSynced(filepath.Join(dir, LayoutFile), b)
}

func writeLayoutTo(w io.Writer, l Layout) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// markShard records shard i's identity in its store.
func markShard(s *graph.Store, l Layout, i int) error {
	l.Shard = &i
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return s.SetMeta(graph.MetaShard, b)
}

// checkShard checks that the store at dir is shard i of layout l.
func checkShard(s *graph.Store, dir string, l Layout, i int) error {
	b, ok, err := s.Meta(graph.MetaShard)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is not marked as a shard (a store copied in by hand?)", ErrLayout, dir)
	}
	var have Layout
	if err := json.Unmarshal(b, &have); err != nil {
		return fmt.Errorf("%w: %s: its shard mark: %v", ErrLayout, dir, err)
	}
	if have.Shard == nil || *have.Shard != i || have.Shards != l.Shards || have.Hash != l.Hash || !slices.Equal(have.Platforms, l.Platforms) {
		return fmt.Errorf("%w: %s says it is shard %v of %d (%s, platforms %q); the store's %s says shard %d of %d (%s, platforms %q)",
			ErrLayout, dir, deref(have.Shard), have.Shards, have.Hash, have.Platforms, LayoutFile, i, l.Shards, l.Hash, l.Platforms)
	}
	return nil
}

func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}

// writeSynced writes a small file durably (atomicfile.WriteFile, 0644).
func writeSynced(path string, b []byte) error {
	return atomicfile.WriteFile(path, b, 0o644)
}
