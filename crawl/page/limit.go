package page

import "io"

// capReader passes through at most max bytes of r, then reports io.EOF.
// On reaching max it reads one byte further to learn whether the content
// went on (truncated) — so a body of exactly max bytes is not truncated.
type capReader struct {
	r         io.Reader
	left      int // bytes still allowed
	n         int // bytes passed through
	truncated bool
	err       error // the underlying reader's error other than io.EOF
}

func newCapReader(r io.Reader, max int) *capReader {
	return &capReader{r: r, left: max}
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if !c.truncated && c.err == nil {
			var one [1]byte
			// Bounded: a reader that keeps answering (0, nil) must not
			// hang us.
			for i := 0; i < 100; i++ {
				n, err := c.r.Read(one[:])
				if n > 0 {
					c.truncated = true
					break
				}
				if err != nil {
					if err != io.EOF {
						c.err = err
					}
					break
				}
			}
		}
		return 0, io.EOF
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	c.n += n
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}
