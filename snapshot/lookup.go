package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/mapthenet/mapthenet/data"
)

// MaxTimelineVisits is how many recent visits a DomainReport carries.
const MaxTimelineVisits = 10

// DomainReport is everything a snapshot says about one domain: what
// `mapthenet rank DOMAIN` shows.
type DomainReport struct {
	data.DomainRow
	// Move is prev_rank - rank: positive when the domain climbed since the
	// previous snapshot; nil when either is missing.
	Move      *int64
	LinkWords []data.LinkWordRow
	// Visits are the most recent visits, newest first, at most MaxTimelineVisits.
	Visits []data.VisitRow
	// Next is the domain's schedule row; nil when it is not scheduled.
	Next *data.ScheduleRow
}

// ErrUnknownDomain: the snapshot does not list the domain.
var ErrUnknownDomain = errors.New("not in the snapshot")

// Lookup reports on each named domain (names as stored: registrable domain,
// lower case, A-label), in the order given. It streams each file once,
// keeping only the rows of the named domains. A name the snapshot does not
// list is an error wrapping ErrUnknownDomain.
func (s *Snapshot) Lookup(names []string) ([]DomainReport, error) {
	idx := map[string]int{}
	for i, n := range names {
		if _, dup := idx[n]; !dup {
			idx[n] = i
		}
	}
	reps := make([]DomainReport, len(names))
	found := make([]bool, len(names))
	err := s.EachDomain(func(rows []data.DomainRow) error {
		for _, r := range rows {
			if i, ok := idx[r.Domain]; ok {
				reps[i].DomainRow = r
				found[i] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var missing []string
	for i, n := range names {
		if _, first := idx[n]; first && idx[n] == i && !found[i] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%q: %w %s (as of %s)", missing, ErrUnknownDomain, s.ID, s.Manifest.AsOf.Format("2006-01-02 15:04:05Z07:00"))
	}

	err = s.EachLinkWord(func(rows []data.LinkWordRow) error {
		for _, r := range rows {
			if i, ok := idx[r.Domain]; ok {
				reps[i].LinkWords = append(reps[i].LinkWords, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.EachVisit(func(rows []data.VisitRow) error {
		for _, r := range rows {
			if i, ok := idx[r.Domain]; ok {
				reps[i].Visits = append(reps[i].Visits, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.EachSchedule(func(rows []data.ScheduleRow) error {
		for _, r := range rows {
			if i, ok := idx[r.Domain]; ok {
				reps[i].Next = ptr(r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		j := idx[n]
		if j != i { // a name given twice: copy the first report
			reps[i] = reps[j]
			continue
		}
		r := &reps[i]
		if r.Rank != nil && r.PrevRank != nil {
			r.Move = ptr(*r.PrevRank - *r.Rank)
		}
		slices.SortFunc(r.LinkWords, func(a, b data.LinkWordRow) int {
			if c := cmp.Compare(b.Sites, a.Sites); c != 0 {
				return c
			}
			return cmp.Compare(a.Word, b.Word)
		})
		slices.SortFunc(r.Visits, func(a, b data.VisitRow) int { return b.StartedAt.Compare(a.StartedAt) })
		if len(r.Visits) > MaxTimelineVisits {
			r.Visits = r.Visits[:MaxTimelineVisits]
		}
	}
	return reps, nil
}

// Top returns the n best-ranked domains, best first.
func (s *Snapshot) Top(n int) ([]data.DomainRow, error) {
	var top []data.DomainRow
	err := s.EachDomain(func(rows []data.DomainRow) error {
		for _, r := range rows {
			if r.Rank != nil && *r.Rank <= int64(n) {
				top = append(top, r)
			}
		}
		return nil
	})
	slices.SortFunc(top, func(a, b data.DomainRow) int { return cmp.Compare(*a.Rank, *b.Rank) })
	return top, err
}

func ptr[T any](v T) *T { return &v }
