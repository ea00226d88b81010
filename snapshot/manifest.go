package snapshot

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mapthenet/mapthenet/data"
)

// maxManifest bounds what is read of a manifest.json (a few KB in fact).
const maxManifest = 16 << 20

// ReadManifest reads snapshot id's manifest.json as it is, checking only
// that it parses: for readers that must cope with any snapshot (the
// crawl, the shrink guard). Open checks the schema version too.
func ReadManifest(st Storage, id string) (*data.Manifest, error) {
	f, err := st.Open(id, data.ManifestFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var m data.Manifest
	dec := json.NewDecoder(io.LimitReader(io.NewSectionReader(f, 0, f.Size()), maxManifest))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %v", st.Location(id, data.ManifestFile), err)
	}
	return &m, nil
}

// checkSchema refuses a manifest of another schema version than the row
// types of package data read.
func checkSchema(id string, m *data.Manifest) error {
	if m.SchemaVersion != data.SchemaVersion {
		return fmt.Errorf("snapshot %s has schema version %d; this mapthenet reads version %d: run mapthenet rebuild",
			id, m.SchemaVersion, data.SchemaVersion)
	}
	return nil
}

// writeManifest writes a new manifest.json at path, synced, with the mode
// the umask gives.
func writeManifest(path string, m *data.Manifest) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666) // the umask decides
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	err = enc.Encode(m)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
