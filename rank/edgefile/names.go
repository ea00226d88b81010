package edgefile

import (
	"fmt"
	"unsafe"
)

// Names are the distinct names of an edge file by id. Their bytes are in
// arena blocks, as the readers interned them; an id's name is found by a
// NameRef (an integer) rather than a string header, so that the garbage
// collector has no pointer to follow in them. At L (ten million names)
// each of the four collections rank forces between its stages scanned
// 160 MB of string headers, 50 to 100 ms; now 2 ms.
//
// The names are in parts: the name of id i*Parts()+k is part k's i-th
// (Read's parts are its readers' names, see names); Reordered's are in
// one part.
type Names struct {
	blocks [][][]byte // by reader: its arena blocks
	parts  [][]NameRef
}

// A NameRef is where a name is in its Names' blocks: reader, block,
// offset in the block and length, packed in 64 bits (see makeRef).
type NameRef uint64

const (
	refLenBits    = 16
	refOffBits    = 23 // arenaBlock is 8 MiB
	refBlockBits  = 17
	refReaderBits = 64 - refLenBits - refOffBits - refBlockBits

	// MaxNameLen is the longest name an edge file may hold (a DNS name
	// has at most 253 bytes).
	MaxNameLen = 1<<refLenBits - 1
	// maxReaders is the most readers Read starts, maxBlocks the most arena
	// blocks a reader fills (1 TiB of names).
	maxReaders = 1 << refReaderBits
	maxBlocks  = 1 << refBlockBits
)

// An offset in an arena block fits refOffBits exactly, and the blocks
// double up to arenaBlock exactly.
var (
	_ [arenaBlock - 1<<refOffBits]byte
	_ [1<<refOffBits - arenaBlock]byte
	_ [arenaBlock - firstArenaBlock<<arenaDoublings]byte
	_ [firstArenaBlock<<arenaDoublings - arenaBlock]byte
)

func makeRef(reader, block, off, n uint32) NameRef {
	return NameRef(uint64(reader)<<(refBlockBits+refOffBits+refLenBits) | uint64(block)<<(refOffBits+refLenBits) |
		uint64(off)<<refLenBits | uint64(n))
}

func (r NameRef) unpack() (reader, block, off, n uint32) {
	return uint32(r >> (refBlockBits + refOffBits + refLenBits)), uint32(r>>(refOffBits+refLenBits)) & (maxBlocks - 1),
		uint32(r>>refLenBits) & (1<<refOffBits - 1), uint32(r) & (1<<refLenBits - 1)
}

// nameArena holds one part's names, their bytes in blocks that start at
// firstArenaBlock bytes and double up to arenaBlock: Read's readers
// (table.add) and NamesOf fill their parts with it. The blocks of
// arenaBlock are backed by huge pages (makeLarge): with blocks of 1 MiB
// and 4 KiB pages, filling the arena (150 MB at L) took 0.6 CPU-seconds,
// most of it the first touch of fresh pages.
type nameArena struct {
	reader uint32   // the part: every NameRef says it
	blocks [][]byte // the last is being filled
	cur    []byte   // the last block, as far as filled
}

// add copies s into the arena and returns its reference, and whether it
// began a block. A new block comes with a new blocks slice (the old one
// clipped): a reader given the old slice (table.add publishes it to the
// other readers) never shares memory that add writes.
func (a *nameArena) add(s string) (ref NameRef, grew bool, err error) {
	if len(s) > MaxNameLen {
		return 0, false, nameTooLongError(len(s))
	}
	if len(a.cur)+len(s) > cap(a.cur) {
		if len(a.blocks) == maxBlocks {
			return 0, false, errTooManyNameBytes
		}
		size := arenaBlock
		if n := len(a.blocks); n < arenaDoublings {
			size = firstArenaBlock << n
		}
		a.cur = makeLarge[byte](0, size)
		a.blocks = append(a.blocks[:len(a.blocks):len(a.blocks)], a.cur[:size])
		grew = true
	}
	off := len(a.cur)
	a.cur = append(a.cur, s...)
	return makeRef(a.reader, uint32(len(a.blocks)-1), uint32(off), uint32(len(s))), grew, nil
}

// Len is the number of names.
func (n *Names) Len() int {
	total := 0
	for _, p := range n.parts {
		total += len(p)
	}
	return total
}

// Parts is the number of parts; PartLen(k) the names in part k.
func (n *Names) Parts() int        { return len(n.parts) }
func (n *Names) PartLen(k int) int { return len(n.parts[k]) }

// PartName is part k's i-th name (id i*Parts()+k), without a division.
func (n *Names) PartName(k, i int) string { return n.refName(n.parts[k][i]) }

// Ref is where the name of id is.
func (n *Names) Ref(id uint32) NameRef {
	if len(n.parts) == 1 { // Reordered's: no division
		return n.parts[0][id]
	}
	np := uint32(len(n.parts))
	return n.parts[id%np][id/np]
}

// Name is the name of id: a view of the names' memory, valid as long as
// n (or a Reordered of it) is.
func (n *Names) Name(id uint32) string { return n.refName(n.Ref(id)) }

func (n *Names) refName(r NameRef) string {
	reader, block, off, size := r.unpack()
	if size == 0 {
		return ""
	}
	return unsafe.String(&n.blocks[reader][block][off], size)
}

// Reordered are the names with new ids: new id i is the name of
// refs[i] (from n.Ref), in one part. They share n's memory.
func (n *Names) Reordered(refs []NameRef) *Names {
	return &Names{blocks: n.blocks, parts: [][]NameRef{refs}}
}

// NamesOf copies names into a Names, one part a list (the name of id
// i*len(parts)+k is parts[k][i]), for tests and callers that hold names
// as strings.
func NamesOf(parts ...[]string) (*Names, error) {
	if len(parts) > maxReaders {
		return nil, fmt.Errorf("rank: %d parts of names, at most %d", len(parts), maxReaders)
	}
	n := &Names{blocks: make([][][]byte, len(parts)), parts: make([][]NameRef, len(parts))}
	for k, list := range parts {
		a := nameArena{reader: uint32(k)}
		for _, s := range list {
			ref, _, err := a.add(s)
			if err != nil {
				return nil, err
			}
			n.parts[k] = append(n.parts[k], ref)
		}
		n.blocks[k] = a.blocks
	}
	return n, nil
}

// bytes is the names' memory: their references and bytes (not the
// arenas' unfilled ends).
func (n *Names) bytes() int64 {
	var b int64
	for _, p := range n.parts {
		b += int64(cap(p)) * int64(unsafe.Sizeof(NameRef(0)))
		for _, r := range p {
			b += int64(r & (1<<refLenBits - 1))
		}
	}
	return b
}

func nameTooLongError(n int) error {
	return fmt.Errorf("a domain name of %d bytes: longer than %d", n, MaxNameLen)
}

var errTooManyNameBytes = fmt.Errorf("more than %d MiB of distinct domain names for one reader", maxBlocks*arenaBlock>>20)
