package graph_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/graph"
)

// Open a store, record one visit, and read it back through a snapshot.
func Example() {
	dir, err := os.MkdirTemp("", "store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := graph.Open(dir, graph.Options{Create: true}) // a *slog.Logger in Options.Logger gets Badger's warnings
	if err != nil {
		log.Fatal(err) // errors.Is(err, graph.ErrLocked): a crawl has it open
	}
	defer s.Close()

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	home, _ := domain.Normalize("https://www.Example.org/")
	if err := s.AddDomains([]string{home}, at, true); err != nil {
		log.Fatal(err)
	}
	err = s.RecordVisit(&data.VisitResult{
		Domain:     home,
		StartedAt:  at,
		FinishedAt: at.Add(time.Minute),
		Outcome:    data.OutcomeOK,
		HTTPStatus: 200,
		Pages:      3,
		Complete:   true,
		Links: []data.Link{
			{Dst: "news.example.net", Words: []string{"news"}},
			{Dst: "ads.example.com", Nofollow: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	sn, err := s.Snapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer sn.Close()
	names := make([]string, sn.NumDomains())
	sn.Domains(func(d *data.DomainState) error {
		names[d.ID] = d.Name
		fmt.Printf("%d %s visited=%v followed_in=%v\n", d.ID, d.Name, d.Visited(), d.FollowedIn)
		return nil
	})
	sn.Edges(func(e *data.EdgeRecord) error {
		fmt.Printf("%s -> %s nofollow=%v words=%v\n", names[e.SrcID], names[e.DstID], e.Nofollow, e.Words)
		return nil
	})
	// Output:
	// 0 example.org visited=true followed_in=false
	// 1 example.net visited=false followed_in=true
	// 2 example.com visited=false followed_in=false
	// example.org -> example.net nofollow=false words=[news]
	// example.org -> example.com nofollow=true words=[]
}
