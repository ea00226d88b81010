package site

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/domain"
)

// removeView is the removal page's body.
type removeView struct {
	Domain    string
	Token     string // "" when the server hands out none
	Contact   string
	InSnap    bool
	TXT       string
	FilePath  string
	MetaName  string
	CanCheck  bool
	Result    *removal.Result
	Removed   bool
	RemoveErr string
	Busy      string
}

func (s *Server) removeForm(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("domain"); q != "" {
		d, err := domain.Normalize(q)
		if err != nil || len(q) > 300 {
			s.notFoundDomain(w, r, false, q, "is not a domain name")
			return
		}
		http.Redirect(w, r, "/remove/"+url.PathEscape(d), http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "remove.html", pageData{Title: "Remove a domain", Body: s.removeView("")})
}

func (s *Server) removeView(domain string) *removeView {
	v := &removeView{Domain: domain, Contact: s.opts.Contact, TXT: removal.TXTPrefix, FilePath: removal.FilePath,
		MetaName: removal.MetaName, CanCheck: s.opts.Checker != nil}
	if domain == "" {
		return v
	}
	if ix := s.cur.Load(); ix != nil {
		v.InSnap = ix.Find(domain) >= 0
	}
	if s.opts.RemovalSecret != nil {
		secret, err := s.opts.RemovalSecret()
		if err != nil {
			s.log.Error("removal page: no secret for tokens", "err", err)
		} else {
			v.Token = removal.Token(secret, domain)
		}
	}
	return v
}

func (s *Server) removePage(w http.ResponseWriter, r *http.Request) {
	d, ok := s.domainParam(w, r, false)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "remove.html", pageData{Title: "Remove " + d, Domain: d, Body: s.removeView(d)})
}

// removeCheck looks for the domain's proofs with the removal package's
// checker (the same as `remove verify`). Checks reach out to the domain's
// servers, so they are rationed: one at a time, and each domain at most
// once a minute.
func (s *Server) removeCheck(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	d, ok := s.domainParam(w, r, false)
	if !ok {
		return
	}
	v := s.removeView(d)
	if s.opts.Checker == nil || v.Token == "" {
		s.render(w, r, http.StatusNotFound, "remove.html", pageData{Title: "Remove " + d, Domain: d, Body: v})
		return
	}
	release, wait := s.checks.take(d)
	if release == nil {
		w.Header().Set("Retry-After", "60")
		v.Busy = wait
		s.render(w, r, http.StatusTooManyRequests, "remove.html", pageData{Title: "Remove " + d, Domain: d, Body: v})
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), 90*time.Second)
	defer cancel()
	res := s.opts.Checker.Check(ctx, d, v.Token)
	v.Result = res
	switch {
	case !res.Verified():
		s.log.Info("removal check: no proof", "domain", d)
	case s.opts.Remove == nil:
		s.log.Warn("removal proven on the site: remove the domain with mapthenet remove verify", "domain", d, "proof", res.Proof())
	default:
		if err := s.opts.Remove(ctx, res); err != nil {
			s.log.Error("removal failed", "domain", d, "err", err)
			v.RemoveErr = "the removal failed; the operator has been told in the log"
		} else {
			v.Removed = true
		}
	}
	s.render(w, r, http.StatusOK, "remove.html", pageData{Title: "Remove " + d, Domain: d, Body: v})
}

// checkLimiter rations proof checks.
type checkLimiter struct {
	clock func() time.Time
	one   chan struct{}
	mu    sync.Mutex
	last  map[string]time.Time
}

const checkEvery = time.Minute

func newCheckLimiter(clock func() time.Time) *checkLimiter {
	return &checkLimiter{clock: clock, one: make(chan struct{}, 1), last: map[string]time.Time{}}
}

// take returns a release function, or nil and why not.
func (c *checkLimiter) take(domain string) (func(), string) {
	c.mu.Lock()
	now := c.clock()
	if t, ok := c.last[domain]; ok && now.Sub(t) < checkEvery {
		c.mu.Unlock()
		return nil, "This domain was checked less than a minute ago: wait a minute and check again."
	}
	select {
	case c.one <- struct{}{}:
	default:
		c.mu.Unlock()
		return nil, "Another check is running: try again in a minute."
	}
	if len(c.last) > 10_000 {
		for k, t := range c.last {
			if now.Sub(t) >= checkEvery {
				delete(c.last, k)
			}
		}
	}
	c.last[domain] = now
	c.mu.Unlock()
	return func() { <-c.one }, ""
}
