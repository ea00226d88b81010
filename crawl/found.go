package crawl

import (
	"container/heap"

	"github.com/mapthenet/mapthenet/schedule"
)

// DefaultMaxFound bounds the domains found during a run that the crawl
// keeps in memory for a first visit in that same run. A domain found
// while the set is full is not lost: the store recorded it as a
// never-visited domain with a followed in-link, and the next rebuild's
// schedule lists it (reason new, once it has as many linking domains as
// the discovery threshold asks) with the number of its linking domains
// as priority, which is where "those with the most linking domains go
// first" is kept for every domain, however many a run discovers. So the
// crawl's memory does not grow with the number of domains discovered: a
// hostile page naming millions costs at most this many entries (about
// 100 bytes each, 10 MB in all).
const DefaultMaxFound = 100_000

// MaxLinkDomains bounds the distinct target domains one visit records:
// links to further domains are dropped (links to domains already taken
// still count). A visit's links are held until the visit is recorded, by
// up to SitesInFlight visits at once, and written in one transaction;
// real sites link far fewer domains in 50 pages, a link farm's single
// page can name tens of thousands.
const MaxLinkDomains = 1000

// foundSet is the in-run queue of domains found by followed links: a
// heap in schedule.CompareFound's order (most linking domains, then name) with an index, so that a
// count that grows moves its entry rather than pushing another, and the
// memory is one entry per domain kept, at most max.
type foundSet struct {
	max   int
	index map[string]*foundEntry
	heap  foundHeap
}

type foundEntry struct {
	domain string
	count  int // distinct visited domains of this run linking here, followed
	pos    int // in heap
}

func newFoundSet(max int) *foundSet {
	if max <= 0 {
		max = DefaultMaxFound
	}
	return &foundSet{max: max, index: map[string]*foundEntry{}}
}

// Len is the number of domains waiting.
func (f *foundSet) Len() int { return len(f.heap) }

// add counts one more linking domain for domain. It reports whether the
// domain is new to the set, and whether it was kept: a new domain is
// left out when the set is full.
func (f *foundSet) add(domain string) (isNew, kept bool) {
	if e := f.index[domain]; e != nil {
		e.count++
		heap.Fix(&f.heap, e.pos)
		return false, true
	}
	if len(f.heap) >= f.max {
		return true, false
	}
	e := &foundEntry{domain: domain, count: 1}
	f.index[domain] = e
	heap.Push(&f.heap, e)
	return true, true
}

// pop takes the most linked-to domain, if it has enough linking domains
// for a first visit under the discovery threshold minInDomains
// (schedule.Discovered).
func (f *foundSet) pop(minInDomains int) (string, bool) {
	if len(f.heap) == 0 || !schedule.Discovered(int64(f.heap[0].count), minInDomains) {
		return "", false
	}
	e := heap.Pop(&f.heap).(*foundEntry)
	delete(f.index, e.domain)
	return e.domain, true
}

type foundHeap []*foundEntry

func (q foundHeap) Len() int { return len(q) }
func (q foundHeap) Less(i, j int) bool {
	return schedule.CompareFound(q[i].count, q[i].domain, q[j].count, q[j].domain) < 0
}
func (q foundHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].pos, q[j].pos = i, j
}
func (q *foundHeap) Push(x any) {
	e := x.(*foundEntry)
	e.pos = len(*q)
	*q = append(*q, e)
}
func (q *foundHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}
