package rank

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Damaged edge files, made from good ones by editing their bytes or their
// footer (decoded and encoded again with parquet-go's own thrift and
// format packages), so that the reader's error paths are tested and
// fuzzed: damagedEdgeFiles seeds FuzzRankEdgeFile and drives
// TestRankEdgeFileDamaged.

// damagedFile is one damaged edge file and what its error must say;
// sameRanks: the damage is in a field the reader does not rely on, and the
// file must rank exactly as the good one did (never some other result);
// empty: the file is good.
type damagedFile struct {
	name string
	data []byte
	want string
}

const sameRanks = "(same ranks)"

// The edge file's columns (package edgefile reads them).
const (
	colSrc      = "src"
	colDst      = "dst"
	colNofollow = "nofollow"
)

// goodEdgeFile is smallEdges as parquet-go writes them, 4 rows a row
// group; dict makes the name columns dictionary-encoded.
func goodEdgeFile(t testing.TB, dict bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if dict {
		type dictRow struct {
			Src      string `parquet:"src,dict"`
			Dst      string `parquet:"dst,dict"`
			Nofollow bool   `parquet:"nofollow"`
		}
		rows := make([]dictRow, len(smallEdges))
		for i, e := range smallEdges {
			rows[i] = dictRow(e)
		}
		err = writeRows(&buf, rows)
	} else {
		err = writeRows(&buf, smallEdges)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeRows[T any](buf *bytes.Buffer, rows []T) error {
	w := parquet.NewGenericWriter[T](buf, parquet.MaxRowsPerRowGroup(4))
	if _, err := w.Write(rows); err != nil {
		return err
	}
	return w.Close()
}

// footer decodes b's footer; start is where it begins.
func footer(t testing.TB, b []byte) (md format.FileMetaData, start int) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start = len(b) - 8 - n
	if err := thrift.Unmarshal(&thrift.CompactProtocol{}, b[start:len(b)-8], &md); err != nil {
		t.Fatal(err)
	}
	return md, start
}

// editFooter returns a copy of b with its footer changed by edit.
func editFooter(t testing.TB, b []byte, edit func(md *format.FileMetaData)) []byte {
	t.Helper()
	md, start := footer(t, b)
	edit(&md)
	return withFooter(t, b[:start], &md)
}

// withFooter appends md as a footer to body (which ends where the old
// footer began).
func withFooter(t testing.TB, body []byte, md *format.FileMetaData) []byte {
	t.Helper()
	raw, err := thrift.Marshal(&thrift.CompactProtocol{}, md)
	if err != nil {
		t.Fatal(err)
	}
	out := append(bytes.Clone(body), raw...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(raw)))
	return append(out, "PAR1"...)
}

// editPageHeader returns a copy of b with the page header at off changed
// by edit; the bytes after it, and the footer's offsets past it, move by
// the change in the header's length, so the file stays consistent but for
// what edit did.
func editPageHeader(t testing.TB, b []byte, off int64, edit func(h *format.PageHeader)) []byte {
	t.Helper()
	md, start := footer(t, b)
	r := (&thrift.CompactProtocol{}).NewReaderFromBytes(bytes.Clone(b[off:start]))
	var h format.PageHeader
	if err := thrift.NewDecoder(r).Decode(&h); err != nil {
		t.Fatal(err)
	}
	oldLen := int64(r.BytesRead())
	edit(&h)
	raw, err := thrift.Marshal(&thrift.CompactProtocol{}, &h)
	if err != nil {
		t.Fatal(err)
	}
	delta := int64(len(raw)) - oldLen
	body := append(append(bytes.Clone(b[:off]), raw...), b[off+oldLen:start]...)
	shift := func(p *int64) {
		if *p > off {
			*p += delta
		}
	}
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		shift(&rg.FileOffset)
		for j := range rg.Columns {
			c := &rg.Columns[j]
			m := &c.MetaData
			first := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < first {
				first = m.DictionaryPageOffset
			}
			if first <= off && off < first+m.TotalCompressedSize {
				m.TotalCompressedSize += delta // the page is in this chunk
			}
			shift(&c.FileOffset)
			shift(&m.DataPageOffset)
			shift(&m.DictionaryPageOffset)
			shift(&m.IndexPageOffset)
			shift(&c.ColumnIndexOffset)
			shift(&c.OffsetIndexOffset)
		}
	}
	return withFooter(t, body, &md)
}

// leaf is the index of the schema element and of the column chunk of the
// leaf column name.
func leaf(t testing.TB, md *format.FileMetaData, name string) (schema, chunk int) {
	t.Helper()
	for i, se := range md.Schema[1:] {
		if se.Name == name {
			return i + 1, i
		}
	}
	t.Fatalf("no column %s", name)
	return 0, 0
}

// damagedEdgeFiles are the damaged files: every one must give an error
// that says what is wrong, never a panic, a hang or a wrong result.
func damagedEdgeFiles(t testing.TB) []damagedFile {
	t.Helper()
	good, dict := goodEdgeFile(t, false), goodEdgeFile(t, true)
	md, start := footer(t, good)
	dmd, _ := footer(t, dict)
	n := len(good)
	bytesEdit := func(b []byte, edit func(b []byte) []byte) []byte { return edit(bytes.Clone(b)) }
	setLen := func(v uint32) []byte {
		return bytesEdit(good, func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-8:], v); return b })
	}
	footerEdit := func(b []byte, edit func(md *format.FileMetaData)) []byte { return editFooter(t, b, edit) }
	chunk := func(md *format.FileMetaData, rg int, name string) *format.ColumnMetaData {
		_, c := leaf(t, md, name)
		return &md.RowGroups[rg].Columns[c].MetaData
	}
	srcDict := chunk(&dmd, 0, colSrc).DictionaryPageOffset
	srcData := chunk(&md, 0, colSrc).DataPageOffset
	return []damagedFile{
		{"good", good, ""},
		{"good-dict", dict, ""},

		// Truncated and misframed footers.
		{"truncated-tail", good[:n-3], "not a readable Parquet file"},
		{"truncated-footer", good[:n-20], "not a readable Parquet file"},
		{"truncated-to-magic", good[:4], "not a readable Parquet file"},
		{"footer-cut-in-half", append(bytes.Clone(good[:start+(n-8-start)/2]), good[n-8:]...), "not a readable Parquet file"},
		{"footer-length-zero", setLen(0), "not a readable Parquet file"},
		{"footer-length-past-start", setLen(uint32(n)), "not a readable Parquet file"},
		{"footer-length-huge", setLen(1<<31 - 1), "not a readable Parquet file"},
		{"footer-length-short", setLen(uint32(n-8-start) - 5), "not a readable Parquet file"},

		// Wrong magic.
		{"head-magic", bytesEdit(good, func(b []byte) []byte { b[3] = '0'; return b }), "not a readable Parquet file: invalid magic header"},
		{"tail-magic", bytesEdit(good, func(b []byte) []byte { b[n-1] = '0'; return b }), "not a readable Parquet file"},
		{"encrypted-footer-magic", bytesEdit(good, func(b []byte) []byte { b[n-1] = 'E'; return b }), "not a readable Parquet file"},

		// Columns of another type, in the schema or in a chunk only.
		{"src-int64-schema", footerEdit(good, func(md *format.FileMetaData) {
			s, _ := leaf(t, md, colSrc)
			md.Schema[s].Type = thrift.New(format.Int64)
			md.Schema[s].LogicalType = format.LogicalType{}
			md.Schema[s].ConvertedType = thrift.Null[deprecated.ConvertedType]{}
		}), "column src has type int64, want string"},
		{"dst-fixed-len-schema", footerEdit(good, func(md *format.FileMetaData) {
			s, _ := leaf(t, md, colDst)
			md.Schema[s].Type = thrift.New(format.FixedLenByteArray)
			md.Schema[s].TypeLength = thrift.New[int32](5)
			md.Schema[s].LogicalType = format.LogicalType{}
			md.Schema[s].ConvertedType = thrift.Null[deprecated.ConvertedType]{}
		}), "column dst has type fixed_size_binary[5], want string"},
		{"nofollow-string-schema", footerEdit(good, func(md *format.FileMetaData) {
			s, _ := leaf(t, md, colNofollow)
			md.Schema[s].Type = thrift.New(format.ByteArray)
			md.Schema[s].LogicalType = format.LogicalType{Value: &format.StringType{}}
		}), "column nofollow has type utf8, want bool"},
		{"src-int64-chunk", footerEdit(good, func(md *format.FileMetaData) {
			for rg := range md.RowGroups {
				chunk(md, rg, colSrc).Type = format.Int64
			}
		}), "row group 0, column src: a chunk of type INT64, the schema says BYTE_ARRAY"},
		{"nofollow-int32-chunk", footerEdit(good, func(md *format.FileMetaData) {
			chunk(md, 1, colNofollow).Type = format.Int32
		}), "row group 1, column nofollow: a chunk of type INT32, the schema says BOOLEAN"},

		// Dictionaries that point past their data.
		{"dict-page-past-chunk", editPageHeader(t, dict, srcDict, func(h *format.PageHeader) { h.CompressedPageSize += 1 << 10 }), "column src, row group 0: unexpected EOF"},
		{"dict-page-past-file", editPageHeader(t, dict, srcDict, func(h *format.PageHeader) { h.CompressedPageSize = 1 << 30 }), "column src, row group 0: unexpected EOF"},
		{"dict-fewer-entries", editPageHeader(t, dict, srcDict, func(h *format.PageHeader) {
			d, _ := h.DictionaryPageHeader.Get()
			d.NumValues = 1
			h.DictionaryPageHeader.Set(d)
		}), sameRanks}, // parquet-go reads the entries the page holds
		{"dict-offset-past-file", footerEdit(dict, func(md *format.FileMetaData) {
			chunk(md, 0, colSrc).DictionaryPageOffset = int64(len(dict)) + 100
		}), "src"},
		{"dict-offset-on-data-page", footerEdit(dict, func(md *format.FileMetaData) {
			c := chunk(md, 0, colSrc)
			c.DictionaryPageOffset = c.DataPageOffset
		}), "src"},

		// Row groups: none, fewer rows than said, chunks that do not fit.
		{"zero-row-groups", footerEdit(good, func(md *format.FileMetaData) { md.RowGroups = nil }), "rows in no row group"},
		{"zero-row-groups-zero-rows", footerEdit(good, func(md *format.FileMetaData) { md.RowGroups, md.NumRows = nil, 0 }), ""},
		{"more-rows-than-groups", footerEdit(good, func(md *format.FileMetaData) { md.NumRows += 5 }), "the footer says 18 rows, its row groups 13"},
		{"row-group-negative-rows", footerEdit(good, func(md *format.FileMetaData) { md.RowGroups[0].NumRows = -1 }), "-1 rows"},
		{"row-group-more-rows", footerEdit(good, func(md *format.FileMetaData) { md.RowGroups[0].NumRows += 3 }), "row"},
		{"chunk-past-file", footerEdit(good, func(md *format.FileMetaData) { chunk(md, 1, colDst).DataPageOffset = int64(n) + 10 }), "does not fit the file"},
		{"chunk-size-past-file", footerEdit(good, func(md *format.FileMetaData) { chunk(md, 0, colSrc).TotalCompressedSize = 1 << 40 }), "does not fit the file"},
		{"missing-column-chunk", footerEdit(good, func(md *format.FileMetaData) {
			md.RowGroups[1].Columns = md.RowGroups[1].Columns[:1]
		}), "column"},
		{"codec-lie", footerEdit(good, func(md *format.FileMetaData) {
			for rg := range md.RowGroups {
				chunk(md, rg, colDst).Codec = format.Zstd
			}
		}), sameRanks}, // parquet-go writes v2 pages, which say they are not compressed

		// Pages: garbage, or sizes that run past the chunk.
		{"data-page-garbage", bytesEdit(good, func(b []byte) []byte {
			for i := range 12 {
				b[srcData+int64(i)] = 0xff
			}
			return b
		}), "column src, row group 0: decoding thrift payload"},
		{"data-page-past-file", editPageHeader(t, good, srcData, func(h *format.PageHeader) { h.CompressedPageSize = 1 << 30 }), "column src, row group 0: unexpected EOF"},
		{"data-page-more-values", editPageHeader(t, good, srcData, func(h *format.PageHeader) {
			d, _ := h.DataPageHeader.Get()
			d.NumValues += 3
			h.DataPageHeader.Set(d)
		}), sameRanks}, // parquet-go counts a required column's values by its data
	}
}

// TestRankEdgeFileDamaged: every damaged file gives an error that names
// the file and says what is wrong (never a panic), with one worker or
// several, and writes no output.
func TestRankEdgeFileDamaged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	if err := os.WriteFile(good, goodEdgeFile(t, false), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RankEdgeFile(context.Background(), good, good+".out", Params{}, nil); err != nil {
		t.Fatal(err)
	}
	want := readRanks(t, good+".out")
	for _, d := range damagedEdgeFiles(t) {
		t.Run(d.name, func(t *testing.T) {
			in := filepath.Join(dir, d.name+".parquet")
			if err := os.WriteFile(in, d.data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 3} {
				out := filepath.Join(dir, fmt.Sprintf("%s.%d.out", d.name, workers))
				_, err := RankEdgeFile(context.Background(), in, out, Params{Workers: workers}, nil)
				if d.want == "" || d.want == sameRanks {
					if err != nil {
						t.Errorf("workers %d: %v", workers, err)
					} else if got := readRanks(t, out); d.want == sameRanks && !reflect.DeepEqual(got, want) {
						t.Errorf("workers %d: ranks %v, want the good file's %v", workers, got, want)
					}
					continue
				}
				if err == nil {
					t.Fatalf("workers %d: no error", workers)
				}
				if !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), d.want) {
					t.Errorf("workers %d: error %q does not name the file and say %q", workers, err, d.want)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("workers %d: wrote an output file", workers)
				}
			}
		})
	}
}
