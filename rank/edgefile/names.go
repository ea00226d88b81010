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
	refOffBits    = 20 // arenaBlock is 1 MiB
	refBlockBits  = 20
	refReaderBits = 64 - refLenBits - refOffBits - refBlockBits

	// MaxNameLen is the longest name an edge file may hold (a DNS name
	// has at most 253 bytes).
	MaxNameLen = 1<<refLenBits - 1
	// maxReaders is the most readers Read starts, maxBlocks the most arena
	// blocks a reader fills (1 TiB of names).
	maxReaders = 1 << refReaderBits
	maxBlocks  = 1 << refBlockBits
)

// An offset in an arena block fits refOffBits exactly.
var (
	_ [arenaBlock - 1<<refOffBits]byte
	_ [1<<refOffBits - arenaBlock]byte
)

func makeRef(reader, block, off, n uint32) NameRef {
	return NameRef(uint64(reader)<<(refBlockBits+refOffBits+refLenBits) | uint64(block)<<(refOffBits+refLenBits) |
		uint64(off)<<refLenBits | uint64(n))
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
	size := int(r & (1<<refLenBits - 1))
	if size == 0 {
		return ""
	}
	b := n.blocks[r>>(refBlockBits+refOffBits+refLenBits)][r>>(refOffBits+refLenBits)&(maxBlocks-1)]
	return unsafe.String(&b[r>>refLenBits&(1<<refOffBits-1)], size)
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
		var arena []byte
		for _, s := range list {
			if len(s) > MaxNameLen {
				return nil, nameTooLongError(len(s))
			}
			if len(arena)+len(s) > cap(arena) {
				if len(n.blocks[k]) == maxBlocks {
					return nil, errTooManyNameBytes
				}
				arena = make([]byte, 0, arenaBlock)
				n.blocks[k] = append(n.blocks[k], arena[:arenaBlock])
			}
			off := len(arena)
			arena = append(arena, s...)
			n.parts[k] = append(n.parts[k], makeRef(uint32(k), uint32(len(n.blocks[k])-1), uint32(off), uint32(len(s))))
		}
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
