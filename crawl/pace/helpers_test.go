package pace

import (
	"runtime"
	"strconv"
)

func runtimeGosched() { runtime.Gosched() }

func itoa(i int) string { return strconv.Itoa(i) }

// waiting counts slots someone waits on (tests only).
func (p *Pacer) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.slots {
		if s.wake != nil {
			n++
		}
	}
	return n
}
