package crawl

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// ReadDomainList reads a seed or exclude file: one URL or domain a line,
// "#" starts a comment. Each entry is normalised to its registrable domain
// with normalize; entries it refuses are returned apart (with their line)
// so that the caller can say so without failing the whole file. Duplicates
// are dropped, order kept.
func ReadDomainList(path string, normalize func(string) (string, error)) (domains []string, bad []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		d, err := normalize(s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: %v", path, line, err))
			continue
		}
		if !seen[d] {
			seen[d] = true
			domains = append(domains, d)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return domains, bad, nil
}
