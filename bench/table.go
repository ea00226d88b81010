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
	width, stageWidth := 0, 8
	for _, r := range rows {
		width = max(width, len(r.what))
		stageWidth = max(stageWidth, len(r.stage))
	}
	line := strings.Repeat("-", stageWidth+width+24)
	fmt.Fprintf(w, "%-*s %-*s %s\n%s\n", stageWidth, "stage", width, "measure", "value", line)
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s %-*s %s\n", stageWidth, r.stage, width, r.what, r.value)
	}
}
