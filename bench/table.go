package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
)

// printTable prints the results as an aligned text table.
func printTable(w io.Writer, size string, rows []result) {
	fmt.Fprintf(w, "mapthenet bench, size %s, GOMAXPROCS %d\n", size, runtime.GOMAXPROCS(0))
	width := 0
	for _, r := range rows {
		width = max(width, len(r.what))
	}
	line := strings.Repeat("-", width+32)
	fmt.Fprintf(w, "%-8s %-*s %s\n%s\n", "stage", width, "measure", "value", line)
	for _, r := range rows {
		fmt.Fprintf(w, "%-8s %-*s %s\n", r.stage, width, r.what, r.value)
	}
}
