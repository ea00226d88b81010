package mapview

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// WriteFile writes the file at path all at once or not at all
// (atomicfile.Write, 0644: a map is for sharing), through a buffer. A
// reader never sees half a picture; a failure leaves any older file in
// place and no temporary file behind.
func WriteFile(path string, write func(io.Writer) error) error {
	err := atomicfile.Write(path, 0o644, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
