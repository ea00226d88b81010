package snapshot

import (
	"fmt"
	"math"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// The readers below take a few columns of domains.parquet: what a rebuild
// carries over from the previous snapshot (ranks, map positions,
// community ids).

// MapFingerprintKey names the key-value metadata entry of domains.parquet
// that holds the fingerprint of the map layout's input (a footer entry,
// not a column: the file's schema is unchanged). The next rebuild compares
// it with its own to keep an unchanged map exactly as it was.
const MapFingerprintKey = "mapthenet.map.fingerprint"

// rankRow reads just two columns of domains.parquet.
type rankRow struct {
	Domain string `parquet:"domain"`
	Rank   *int64 `parquet:"rank,optional"`
}

// EachRank calls fn with each ranked domain of domains.parquet and its
// rank, in the file's order (id order: name order), streamed: a caller
// that keeps them by its own index holds a few bytes a domain, not a
// map of names.
func (f Files) EachRank(fn func(domain string, rank int64) error) error {
	return each(f, data.DomainsFile, func(rows []rankRow) error {
		for _, r := range rows {
			if r.Rank != nil {
				if err := fn(r.Domain, *r.Rank); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// MapPositions reads the domain, map_x and map_y columns of
// domains.parquet: for each row whose domain lookup maps to an index >= 0
// and whose position is finite, it calls found(index, x, y). It returns
// the file's map fingerprint entry (ok false when it has none).
func (f Files) MapPositions(lookup func(name []byte) int64, found func(v int64, x, y float64)) (print string, ok bool, err error) {
	r, err := f.st.Open(f.ID, data.DomainsFile)
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	return readMapPositions(r, f.Location(data.DomainsFile), lookup, found)
}

func readMapPositions(f File, name string, lookup func(name []byte) int64, found func(v int64, x, y float64)) (print string, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrNotParquet, r)
		}
	}()
	pf, err := openColumns(f, name)
	if err != nil {
		return "", false, err
	}
	cols, err := findColumns(pf, name, []columnSpec{{"domain", parquet.ByteArray}, {"map_x", parquet.Double}, {"map_y", parquet.Double}})
	if err != nil {
		return "", false, err
	}
	var index []int64
	var xs []float64
	for _, rg := range pf.RowGroups() {
		rows := rg.NumRows()
		chunks := rg.ColumnChunks()
		index = index[:0]
		err := columnValues(chunks[cols[0]], func(v parquet.Value) {
			i := int64(-1)
			if !v.IsNull() {
				i = lookup(v.ByteArray())
			}
			index = append(index, i)
		})
		if err == nil && int64(len(index)) != rows {
			err = fmt.Errorf("%d domains in a row group of %d rows", len(index), rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
		}
		xs = xs[:0]
		err = columnValues(chunks[cols[1]], func(v parquet.Value) {
			x := math.NaN()
			if !v.IsNull() {
				x = v.Double()
			}
			xs = append(xs, x)
		})
		if err == nil && int64(len(xs)) != rows {
			err = fmt.Errorf("%d map_x values in a row group of %d rows", len(xs), rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
		}
		r := 0
		err = columnValues(chunks[cols[2]], func(v parquet.Value) {
			if r < len(xs) && index[r] >= 0 && !v.IsNull() {
				x, y := xs[r], v.Double()
				if !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0) {
					found(index[r], x, y)
				}
			}
			r++
		})
		if err == nil && int64(r) != rows {
			err = fmt.Errorf("%d map_y values in a row group of %d rows", r, rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
		}
	}
	print, ok = pf.Lookup(MapFingerprintKey)
	return print, ok, nil
}

// Communities reads the id, domain and community columns of
// domains.parquet: for each row whose match(id, domain) gives an index
// >= 0 and whose community is set (not null, not negative), it calls
// found(index, community). ok is false, and nothing is read, when the file
// has no community column (a snapshot written before it existed).
func (f Files) Communities(match func(id int32, domain []byte) int32, found func(index, community int32)) (ok bool, err error) {
	r, err := f.st.Open(f.ID, data.DomainsFile)
	if err != nil {
		return false, err
	}
	defer r.Close()
	return readCommunities(r, f.Location(data.DomainsFile), match, found)
}

func readCommunities(f File, name string, match func(id int32, domain []byte) int32, found func(index, community int32)) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrNotParquet, r)
		}
	}()
	pf, err := openColumns(f, name)
	if err != nil {
		return false, err
	}
	if _, ok := pf.Schema().Lookup("community"); !ok {
		return false, nil
	}
	cols, err := findColumns(pf, name, []columnSpec{{"id", parquet.Int32}, {"domain", parquet.ByteArray}, {"community", parquet.Int32}})
	if err != nil {
		return false, err
	}
	var ids, index []int32
	for _, rg := range pf.RowGroups() {
		rows := rg.NumRows()
		chunks := rg.ColumnChunks()
		ids = ids[:0]
		err := columnValues(chunks[cols[0]], func(v parquet.Value) {
			id := int32(-1)
			if !v.IsNull() && v.Int32() >= 0 {
				id = v.Int32()
			}
			ids = append(ids, id)
		})
		if err == nil && int64(len(ids)) != rows {
			err = fmt.Errorf("%d ids in a row group of %d rows", len(ids), rows)
		}
		index = index[:0]
		if err == nil {
			err = columnValues(chunks[cols[1]], func(v parquet.Value) {
				i := int32(-1)
				if r := len(index); r < len(ids) && ids[r] >= 0 && !v.IsNull() {
					i = match(ids[r], v.ByteArray())
				}
				index = append(index, i)
			})
		}
		if err == nil && int64(len(index)) != rows {
			err = fmt.Errorf("%d domains in a row group of %d rows", len(index), rows)
		}
		r := 0
		if err == nil {
			err = columnValues(chunks[cols[2]], func(v parquet.Value) {
				if r < len(index) && index[r] >= 0 && !v.IsNull() && v.Int32() >= 0 {
					found(index[r], v.Int32())
				}
				r++
			})
		}
		if err == nil && int64(r) != rows {
			err = fmt.Errorf("%d communities in a row group of %d rows", r, rows)
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
		}
	}
	return true, nil
}
