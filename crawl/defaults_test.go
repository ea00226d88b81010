package crawl

import (
	"context"
	"net"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/pace"
)

// The defaults a site owner relies on (DESIGN.md, "Behaviour a site owner
// can see"). Each is a promise made in the README and the bot page: these
// tests fail when one changes, so that it changes only on purpose, with
// DESIGN.md and the README in the same commit.
func TestPinnedDefaults(t *testing.T) {
	mapped := []fetch.ConnectTo{{ToHost: "127.0.0.1", ToPort: "1"}}
	o := (&Options{ConnectTo: mapped}).withDefaults()
	pins := []struct {
		name      string
		got, want any
	}{
		{"user agent", DefaultUserAgent, "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)"},
		{"robots token", DefaultRobotsToken, "MapTheNetBot"},
		{"minimum gap", DefaultMinDelay, time.Second},
		{"minimum gap of a crawl that sets none", o.MinDelay, time.Second},
		{"shared platforms", DefaultPlatforms, []Platform{{Suffix: "neocities.org", Gap: 2 * time.Second}}},
		{"platforms of a crawl that sets none", o.Platforms, DefaultPlatforms},
		{"download cap", int64(DefaultMaxBody), int64(1024 * 1024)},
		{"download cap of a crawl that sets none", o.MaxBody, int64(1024 * 1024)},
		{"connect timeout", o.ConnectTimeout, 10 * time.Second},
		{"response timeout", o.ResponseTimeout, 30 * time.Second},
		{"redirects per page", o.MaxRedirects, 5},
		{"built-in identity: user agent", o.UserAgent, DefaultUserAgent},
		{"built-in identity: token", o.RobotsToken, DefaultRobotsToken},
		{"built-in identity: key directory", o.SignatureAgentURL, "https://www.mapthenet.org/.well-known/http-message-signatures-directory"},
		{"built-in identity: no From", o.From, ""},
	}
	for _, p := range pins {
		if !reflect.DeepEqual(p.got, p.want) {
			t.Errorf("%s = %v, want %v", p.name, p.got, p.want)
		}
	}
}

// What a crawl that sets nothing does with the defaults: a site's requests
// 1 s apart, every Neocities site sharing one pace of 2 s, pages read up to
// 1024 KB.
func TestPinnedDefaultsApplied(t *testing.T) {
	c, err := NewCrawler(Options{ConnectTo: []fetch.ConnectTo{{ToHost: "127.0.0.1", ToPort: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.fetch.MaxBody != 1024*1024 || c.reader.MaxBytes != 1024*1024 {
		t.Errorf("download caps: fetch %d, page reader %d; want 1024 KB", c.fetch.MaxBody, c.reader.MaxBytes)
	}
	if c.fetch.UserAgent != "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)" || c.reader.Token != "MapTheNetBot" {
		t.Errorf("user agent %q, token %q", c.fetch.UserAgent, c.reader.Token)
	}
	for _, tt := range []struct {
		host string
		want []pace.Key
	}{
		{"www.example.com", []pace.Key{{Name: "site:example.com", Gap: time.Second}}},
		// Whatever the Public Suffix List makes of a Neocities site's
		// registrable domain, it shares the platform's pace.
		{"alice.neocities.org", []pace.Key{{Name: "site:" + c.siteOf(&url.URL{Host: "alice.neocities.org"}), Gap: time.Second},
			{Name: "platform:neocities.org", Gap: 2 * time.Second}}},
	} {
		u, _ := url.Parse("https://" + tt.host + "/")
		v := &visit{c: c, domain: c.siteOf(u)}
		if got := v.paceKeys(context.Background(), u); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: paces %v, want %v", tt.host, got, tt.want)
		}
	}
}

// dualStack answers an A and an AAAA record for every name (the AAAA is ::1,
// so even a connection to it stays on loopback).
type dualStack struct{}

func (dualStack) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}, {IP: net.IPv6loopback}}, nil
}

// A domain with an AAAA record is recorded as supporting IPv6; one with
// only A records is not (TestVisitFacts).
func TestPinnedIPv6FromAAAA(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage())
	opts := w.options()
	opts.Resolver = dualStack{}
	res := visitOf(t, w, opts, "a.test", 8)
	if res.IPv6 == nil || !*res.IPv6 {
		t.Fatalf("ipv6 = %v, want true for a domain with an AAAA record", res.IPv6)
	}
}
