// Package kway is the frontier of a k-way merge: a min-heap of source
// indices ordered by each source's current item. The rebuild's merges of
// part files and of sorted runs (packages rebuild and graph) share it.
package kway

import "container/heap"

// Heap holds the sources that still have an item, the one whose item
// comes first on top. less compares the current items of two sources; a
// source's item may change only while it is on top (then Fix), or before
// it is added.
type Heap struct{ h frontier }

// New is an empty frontier ordered by less.
func New(less func(a, b int) bool) *Heap { return &Heap{frontier{less: less}} }

// Add puts source k, whose current item is read, in the frontier.
func (h *Heap) Add(k int) { heap.Push(&h.h, k) }

// Len is the number of sources in the frontier.
func (h *Heap) Len() int { return len(h.h.parts) }

// Top is the source whose item comes first. The frontier must not be
// empty.
func (h *Heap) Top() int { return h.h.parts[0] }

// Fix restores the order after the top's item moved on.
func (h *Heap) Fix() { heap.Fix(&h.h, 0) }

// Drop removes the top (its source ran out).
func (h *Heap) Drop() { heap.Pop(&h.h) }

// Advanced is the step after the top's source was read: Fix when it gave
// a next item (more), Drop when it ran out.
func (h *Heap) Advanced(more bool) {
	if more {
		h.Fix()
	} else {
		h.Drop()
	}
}

// HeadFirst reports whether the top still comes before both its children
// (so a run of items from it may go on without heap work).
func (h *Heap) HeadFirst() bool {
	p := h.h.parts
	for _, c := range []int{1, 2} {
		if c < len(p) && h.h.less(p[c], p[0]) {
			return false
		}
	}
	return true
}

// frontier is the container/heap implementation behind Heap.
type frontier struct {
	parts []int
	less  func(a, b int) bool
}

func (f *frontier) Len() int           { return len(f.parts) }
func (f *frontier) Less(i, j int) bool { return f.less(f.parts[i], f.parts[j]) }
func (f *frontier) Swap(i, j int)      { f.parts[i], f.parts[j] = f.parts[j], f.parts[i] }
func (f *frontier) Push(x any)         { f.parts = append(f.parts, x.(int)) }
func (f *frontier) Pop() any {
	n := len(f.parts) - 1
	x := f.parts[n]
	f.parts = f.parts[:n]
	return x
}
