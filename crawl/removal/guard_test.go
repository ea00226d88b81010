package removal

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mapthenet/mapthenet/crawl/fetch"
)

// A proof fetch is guarded like the crawl: the default transport will not
// connect to a loopback server (the canary) named by address.
func TestProofFetchGuarded(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	_, err := NewHTTPClient(NewTransport(nil)).Get(srv.URL + FilePath)
	var ge *fetch.GuardError
	if !errors.As(err, &ge) {
		t.Fatalf("err %v, want the address guard's refusal", err)
	}
	srv.Close() // waits for its connections: any would have been counted
	if conns.Load() != 0 {
		t.Fatalf("%d connections reached the server", conns.Load())
	}
}
