package data

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden")

// TestSchemaGolden pins every snapshot file's Parquet schema as a file
// written from the row types carries it: column names, physical types,
// logical (and converted) types, repetition. A change to a row type shows up
// here as a diff that a reviewer must accept with -update, and with a bump of
// SchemaVersion.
func TestSchemaGolden(t *testing.T) {
	var out strings.Builder
	fmt.Fprintf(&out, "# schema version %d\n", SchemaVersion)
	describe(t, &out, DomainsFile, []DomainRow{{}})
	describe(t, &out, EdgesFile, []EdgeRow{{}})
	describe(t, &out, LinkWordsFile, []LinkWordRow{{}})
	describe(t, &out, VisitsFile, []VisitRow{{}})
	describe(t, &out, ScheduleFile, []ScheduleRow{{}})
	describe(t, &out, "rank --out", []RankRow{{}})

	golden := filepath.Join("testdata", "schema.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./data -run TestSchemaGolden -update)", err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("schema changed: run with -update if on purpose (and bump SchemaVersion)\n--- got\n%s--- want\n%s", got, want)
	}
}

// describe writes rows to an in-memory Parquet file and prints the schema
// recorded in that file's footer, one column a line.
func describe[T any](t *testing.T, out *strings.Builder, name string, rows []T) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fmt.Fprintf(out, "\n%s\n", name)
	for _, el := range f.Metadata().Schema[1:] { // [0] is the root
		line := []string{el.Name}
		if typ, ok := el.Type.Get(); ok {
			line = append(line, typ.String())
		}
		if rep, ok := el.RepetitionType.Get(); ok {
			line = append(line, rep.String())
		}
		if lt := el.LogicalType.String(); lt != "" {
			line = append(line, "logical="+lt)
		}
		if ct, ok := el.ConvertedType.Get(); ok {
			line = append(line, "converted="+convertedName(int32(ct)))
		}
		fmt.Fprintf(out, "  %s\n", strings.Join(line, " "))
	}
}

// convertedName spells the legacy converted types these files use (the
// library's enum has no String method).
func convertedName(ct int32) string {
	switch ct {
	case 0:
		return "UTF8"
	case 9:
		return "TIMESTAMP_MILLIS"
	case 10:
		return "TIMESTAMP_MICROS"
	case 17:
		return "INT_32"
	case 18:
		return "INT_64"
	}
	return fmt.Sprintf("%d", ct)
}
