package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// demoMarker, in a data directory, says that demo made its store: demo
// --out refuses a directory whose store it did not make, so that a
// simulated web is never merged into a real crawl's store (issue 13).
const demoMarker = ".mapthenet-demo"

// claimDemoDir refuses dir when it holds a store demo did not make, and
// marks it as demo's otherwise (before the store is made, so that a demo
// killed midway can be run again on the same directory).
func claimDemoDir(dir string) error {
	marker := filepath.Join(dir, demoMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	entries, err := os.ReadDir(storePath(dir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("demo --out %s: the directory holds a store that demo did not make (a real crawl's?): "+
			"demo would merge its simulated web into it; pick another directory", dir)
	}
	return os.WriteFile(marker, []byte("this data directory's store was made by mapthenet demo\n"), 0o644)
}
