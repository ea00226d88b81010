package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Mirror is a Storage that keeps every snapshot in a primary Storage (the
// data directory, which the crawl, rank and serve read) and in copies (an
// object store other machines and DuckDB read: `rebuild --snapshots`).
// Reads go to the primary. A publish goes to the copies first, then the
// primary; so does moving `current`: a copy that fails stops it, and
// `current` stays everywhere it was. Removals and rewrites go to all.
func Mirror(primary Storage, copies ...Storage) Storage {
	return &mirror{primary: primary, copies: copies}
}

type mirror struct {
	primary Storage
	copies  []Storage
}

func (m *mirror) Current() (string, error)                 { return m.primary.Current() }
func (m *mirror) List() ([]string, error)                  { return m.primary.List() }
func (m *mirror) Stat(id string) error                     { return m.primary.Stat(id) }
func (m *mirror) Open(id, file string) (File, error)       { return m.primary.Open(id, file) }
func (m *mirror) Location(id, file string) string          { return m.primary.Location(id, file) }
func (m *mirror) Stage(id string) (string, error)          { return m.primary.Stage(id) }
func (m *mirror) copyLocation(c Storage, id string) string { return c.Location(id, "") }

// Publish uploads the staged files to every copy, then publishes them in
// the primary.
func (m *mirror) Publish(id, staged string) error {
	for _, c := range m.copies {
		if err := c.Publish(id, staged); err != nil {
			return fmt.Errorf("publishing snapshot %s to %s: %w", id, m.copyLocation(c, id), err)
		}
	}
	return m.primary.Publish(id, staged)
}

// SetCurrent moves `current` in every copy, then in the primary.
func (m *mirror) SetCurrent(id string) error {
	for _, c := range m.copies {
		if err := c.SetCurrent(id); err != nil {
			return fmt.Errorf("moving current to %s in %s: %w", id, m.copyLocation(c, id), err)
		}
	}
	return m.primary.SetCurrent(id)
}

// Replace rewrites the file in the primary, then sends the new file to
// every copy that has it.
func (m *mirror) Replace(id, file string, fill func(path string) (bool, error)) error {
	replaced := false
	err := m.primary.Replace(id, file, func(path string) (bool, error) {
		keep, err := fill(path)
		replaced = keep && err == nil
		return keep, err
	})
	if err != nil || !replaced {
		return err
	}
	for _, c := range m.copies {
		err := c.Replace(id, file, func(path string) (bool, error) {
			return true, copyOut(m.primary, id, file, path)
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rewriting %s in %s: %w", file, m.copyLocation(c, id), err)
		}
	}
	return nil
}

// copyOut writes file of snapshot id, read from st, to the local path.
func copyOut(st Storage, id, file, path string) error {
	r, err := st.Open(id, file)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	var off int64
	for off < r.Size() {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), r.Size()-off)], off)
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				f.Close()
				return werr
			}
			off += int64(n)
		}
		if err != nil && off < r.Size() {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Remove deletes snapshot id everywhere (a copy that lacks it is fine).
func (m *mirror) Remove(id string) error {
	var errs []error
	for _, c := range m.copies {
		if err := c.Remove(id); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, m.primary.Remove(id))
	return errors.Join(errs...)
}

// Copies are st's copies when it is a Mirror (none otherwise).
func Copies(st Storage) []Storage {
	if m, ok := st.(*mirror); ok {
		return m.copies
	}
	return nil
}
