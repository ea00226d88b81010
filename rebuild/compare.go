package rebuild

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"os"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// Digest is a store's content as a rebuild reads it: a SHA-256 and a count
// of each merged stream (domains with every field of their state, edges,
// visits, link-word counts). Two stores with equal digests give the same
// snapshot.
type Digest struct {
	Domains, Edges, Visits, LinkWords struct {
		Rows int64
		Sum  [sha256.Size]byte
	}
}

// StoreDigest exports every shard of s into a new directory under tmpDir
// (removed after), merges the parts and digests the merged streams:
// memory as a rebuild's export and merge, never the whole store.
func StoreDigest(ctx context.Context, s *shard.Store, tmpDir string) (*Digest, error) {
	dir, err := os.MkdirTemp(tmpDir, ".digest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	views, err := s.Snapshot()
	if err != nil {
		return nil, err
	}
	defer views.Close()
	parts, err := exportShards(ctx, views, dir, time.Now())
	if err != nil {
		return nil, err
	}
	m, err := OpenMerge(parts)
	if err != nil {
		return nil, err
	}
	var d Digest
	h := sha256.New()
	var buf []byte
	put := func(vs ...int64) {
		for _, v := range vs {
			buf = binary.AppendVarint(buf, v)
		}
	}
	sum := func(h hash.Hash) (s [sha256.Size]byte) { copy(s[:], h.Sum(nil)); return }
	err = m.Domains(func(st *data.DomainState) error {
		buf = graph.EncodeState(buf[:0], st)
		put(int64(st.ID))
		h.Write(buf)
		d.Domains.Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.Domains.Sum = sum(h)
	h.Reset()
	err = m.Edges(func(e *data.EdgeRecord) error {
		buf = buf[:0]
		put(int64(e.SrcID), int64(e.DstID), e.FirstSeen.UnixNano(), e.LastSeen.UnixNano(), b2i(e.Nofollow), b2i(e.Sitewide))
		h.Write(buf)
		d.Edges.Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.Edges.Sum = sum(h)
	h.Reset()
	err = m.Visits(func(v *data.VisitLogEntry) error {
		buf = buf[:0]
		put(int64(v.DomainID), v.StartedAt.UnixNano(), v.FinishedAt.UnixNano(), v.RobotsReadAt.UnixNano(), int64(v.RobotsStatus),
			int64(v.HTTPStatus), int64(v.Pages), v.Bytes)
		buf = append(append(append(buf, v.Outcome...), 0), v.Error...)
		h.Write(append(buf, 0))
		d.Visits.Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.Visits.Sum = sum(h)
	h.Reset()
	err = m.LinkWords(func(dst uint32, word string, sites int64) error {
		buf = buf[:0]
		put(int64(dst), sites)
		h.Write(append(append(buf, word...), 0))
		d.LinkWords.Rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.LinkWords.Sum = sum(h)
	return &d, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// SameContent checks that stores a and b hold the same content as a
// rebuild reads it (StoreDigest of each): what a reshard checks before the
// new store takes the old one's place.
func SameContent(ctx context.Context, a, b *shard.Store, tmpDir string) error {
	da, err := StoreDigest(ctx, a, tmpDir)
	if err != nil {
		return err
	}
	db, err := StoreDigest(ctx, b, tmpDir)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		what string
		x, y struct {
			Rows int64
			Sum  [sha256.Size]byte
		}
	}{{"domains", da.Domains, db.Domains}, {"edges", da.Edges, db.Edges}, {"visits", da.Visits, db.Visits}, {"link words", da.LinkWords, db.LinkWords}} {
		if c.x != c.y {
			return fmt.Errorf("%s differ: %d rows (sha256 %x) against %d (%x)", c.what, c.x.Rows, c.x.Sum[:6], c.y.Rows, c.y.Sum[:6])
		}
	}
	return nil
}
