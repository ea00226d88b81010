package rebuild

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// localMerge is the Merge of a store's shards read on this machine: each
// shard's part comes straight from its view sorted in name order
// (graph.NameOrder), the rows ExportPart would write, with no part files
// written and read back between. orders are the shards' views, in shard
// order. The snapshot is the same as through parts (rebuild's tests
// compare the two). The shards' link-word tallies spill as sp says (the
// views' own Spill: the same directory and chunk).
func localMerge(orders []*graph.NameOrder, sp graph.Spill) (*Merge, error) {
	in := make([]mergeInput, len(orders))
	for k, no := range orders {
		in[k] = &localInput{shard: k, order: no, spill: sp}
	}
	if len(orders) == 1 {
		// One shard's names are the store's, in order (Each checks it as
		// it decodes them): a domain's id is its row, with no walk to
		// number them.
		n := orders[0].Len()
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i)
		}
		mg := &Merge{in: in, ids: [][]uint32{ids}, n: uint32(n), names: orders[0].Names()}
		mg.dropNames()
		return mg, nil
	}
	return newMerge(in)
}

// localInput is one shard's part read from its sorted view. Each stream
// is a walk of the view in a goroutine of its own that hands its rows
// over in batches through a channel of a few (rowFeed): memory stays a
// few batches a stream, and the walk's decoding runs on one core while
// the merge and the snapshot's writers use the other.
type localInput struct {
	shard int
	order *graph.NameOrder
	spill graph.Spill // for the link-word tally

	mu sync.Mutex
	// tally is the shard's link-word counts, made by a whole walk of its
	// edges (their pass comes before the link words') and taken by
	// linkWords; nil when there is none to take.
	tally *linkWordTally
}

func (li *localInput) String() string { return fmt.Sprintf("shard %d", li.shard) }

// releaseEdges keeps of the sorted view only the states.
func (li *localInput) releaseEdges() error {
	li.mu.Lock()
	li.tally = nil
	li.mu.Unlock()
	if err := li.order.KeepStates(); err != nil {
		return fmt.Errorf("%s: %w", li, err)
	}
	return nil
}

// dropNames lets the sorted view's names go: the merge has them.
func (li *localInput) dropNames() { li.order.DropNames() }

func (li *localInput) domainCount() int64 { return int64(li.order.Len()) }

func (li *localInput) countSource(n int64) string { return fmt.Sprintf("its view has %d", n) }

// newTally is a link-word tally for a walk of the shard's edges, spilling
// to runs when the view does.
func (li *localInput) newTally() *linkWordTally { return tallyFor(li.spill) }

func (li *localInput) names() (rowCursor[partName], error) {
	return feed(func(emit func(partName) error) error {
		return li.order.Each(graph.NamedName, func(nd *graph.Named) error {
			return emit(partName{Domain: nd.State.Name})
		})
	}), nil
}

func (li *localInput) domains() (rowCursor[domainRecord], error) {
	return feed(func(emit func(domainRecord) error) error {
		return li.order.Each(graph.NamedState, func(nd *graph.Named) error {
			return emit(domainRecord{State: nd.State}) // its HTTPS and IPv6 are the decoder's own
		})
	}), nil
}

// edges are ExportPart's edge rows; the walk counts the link words too.
func (li *localInput) edges() (rowCursor[data.PartEdgeRow], error) {
	return feed(func(emit func(data.PartEdgeRow) error) error {
		words := li.newTally()
		err := li.order.Each(graph.NamedEdges, func(nd *graph.Named) error {
			i := int32(nd.Index)
			for _, e := range nd.Edges {
				err := emit(data.PartEdgeRow{Src: i, Dst: int32(e.Dst), FirstSeen: e.FirstSeen.UnixNano(), LastSeen: e.LastSeen.UnixNano(),
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
			return nil
		})
		if err == nil {
			li.mu.Lock()
			li.tally = words
			li.mu.Unlock()
		}
		return err
	}), nil
}

// visits are ExportPart's visit rows, each value copied: the walk reuses
// its buffer once a domain is done (a sorted run's), and the rows are read
// a batch later.
func (li *localInput) visits() (rowCursor[data.PartVisitRow], error) {
	return feed(func(emit func(data.PartVisitRow) error) error {
		return li.order.Each(graph.NamedVisits, func(nd *graph.Named) error {
			for _, v := range nd.Visits {
				if err := emit(data.PartVisitRow{Domain: int32(nd.Index), StartedAt: v.StartedAt.UnixNano(), Visit: bytes.Clone(v.Value)}); err != nil {
					return err
				}
			}
			return nil
		})
	}), nil
}

// linkWords are ExportPart's link-word rows, from the edges' walk's
// counts, or a walk of its own when there are none.
func (li *localInput) linkWords() (rowCursor[data.PartLinkWordRow], error) {
	li.mu.Lock()
	words := li.tally
	li.tally = nil
	li.mu.Unlock()
	return feed(func(emit func(data.PartLinkWordRow) error) error {
		if words == nil {
			words = li.newTally()
			err := li.order.Each(graph.NamedEdges, func(nd *graph.Named) error {
				for _, e := range nd.Edges {
					if !e.Nofollow {
						if err := words.add(e.Dst, e.Words); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return words.counts(func(dst uint32, word string, sites int64) error {
			return emit(data.PartLinkWordRow{Domain: int32(dst), Word: word, Sites: sites})
		})
	}), nil
}

// feedBatch is the rows of a batch, feedDepth the batches a feed holds
// ready: a few hundred KiB a stream.
const (
	feedBatch = 4096
	feedDepth = 4
)

// errFeedClosed ends a walk whose reader closed its feed.
var errFeedClosed = errors.New("feed closed by its reader")

// rowFeed is a rowCursor over rows that a walk in another goroutine
// emits: the batches come through a channel, and go back through another
// to be refilled once read.
type rowFeed[T any] struct {
	batches chan []T
	free    chan []T
	stop    chan struct{}
	err     error // the walk's, set before batches is closed

	buf    []T
	i      int
	ended  bool
	closed bool
}

// feed starts walk in a goroutine of its own, its rows read through the
// feed it returns.
func feed[T any](walk func(emit func(T) error) error) *rowFeed[T] {
	f := &rowFeed[T]{batches: make(chan []T, feedDepth), free: make(chan []T, feedDepth+2), stop: make(chan struct{})}
	go func() {
		defer close(f.batches)
		batch := make([]T, 0, feedBatch)
		send := func() bool {
			select {
			case f.batches <- batch:
			case <-f.stop:
				return false
			}
			select {
			case batch = <-f.free:
			default:
				batch = make([]T, 0, feedBatch)
			}
			return true
		}
		err := walk(func(r T) error {
			batch = append(batch, r)
			if len(batch) == feedBatch && !send() {
				return errFeedClosed
			}
			return nil
		})
		if err == nil && len(batch) > 0 {
			send()
		}
		if !errors.Is(err, errFeedClosed) {
			f.err = err
		}
	}()
	return f
}

// Next returns the next row, valid until the batch after it is read.
func (f *rowFeed[T]) Next() *T {
	for f.i == len(f.buf) {
		if f.ended {
			return nil
		}
		if f.buf != nil {
			clear(f.buf) // let what the rows point to go
			select {
			case f.free <- f.buf[:0]:
			default:
			}
		}
		b, ok := <-f.batches
		if !ok {
			f.ended, f.buf = true, nil
			return nil
		}
		f.buf, f.i = b, 0
	}
	f.i++
	return &f.buf[f.i-1]
}

// Err is the walk's error, once the rows have ended.
func (f *rowFeed[T]) Err() error {
	if f.ended {
		return f.err
	}
	return nil
}

// Close stops the walk (if it is still going) and waits for its end.
func (f *rowFeed[T]) Close() error {
	if !f.closed {
		f.closed = true
		close(f.stop)
		for range f.batches {
		}
		f.ended = true
	}
	return nil
}
