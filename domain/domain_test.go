package domain

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  error
	}{
		{"example.com", "example.com", nil},
		{"www.example.com", "example.com", nil},
		{"WWW.Example.COM", "example.com", nil},
		{"example.com.", "example.com", nil},
		{"example.com:8080", "example.com", nil},
		{"https://a.b.example.co.uk/path?q=1#f", "example.co.uk", nil},
		{"http://user:pw@Sub.Example.org:81/", "example.org", nil},
		{"//cdn.example.net/x.js", "example.net", nil},
		{"example.com/path", "example.com", nil},
		{"  example.com  ", "example.com", nil},
		{"foo.github.io", "foo.github.io", nil},           // PSL private section
		{"bar.foo.blogspot.com", "foo.blogspot.com", nil}, // private section
		{"s0001.example", "s0001.example", nil},           // unknown TLD: the simulated web
		{"www.site7.test", "site7.test", nil},             // unknown TLD
		{"http://site7.test:8443/a", "site7.test", nil},   // with port
		{"bücher.de", "xn--bcher-kva.de", nil},            // IDNA
		{"xn--bcher-kva.de", "xn--bcher-kva.de", nil},     // already an A-label
		{"www.BÜCHER.de", "xn--bcher-kva.de", nil},        // mapped to lower case
		{"例え.テスト", "xn--r8jz45g.xn--zckzah", nil},         // U-labels all through
		{"example.com\u3002", "example.com", nil},         // ideographic full stop
		{"", "", ErrEmptyHost},
		{"   ", "", ErrEmptyHost},
		{"http:///path", "", ErrEmptyHost},
		{"127.0.0.1", "", ErrIPAddress},
		{"127.0.0.1:80", "", ErrIPAddress},
		{"http://127.0.0.1/", "", ErrIPAddress},
		{"::1", "", ErrIPAddress},
		{"[::1]", "", ErrIPAddress},
		{"[2001:db8::1]:443", "", ErrIPAddress},
		{"http://[2001:db8::1]/x", "", ErrIPAddress},
		{"fe80::1%eth0", "", ErrIPAddress},
		{"127.1", "", ErrIPAddress},
		{"10.0.0.256", "", ErrIPAddress},
		{"localhost", "", ErrLocalhost},
		{"LOCALHOST:8080", "", ErrLocalhost},
		{"app.localhost", "", ErrLocalhost},
		{"intranet", "", ErrSingleLabel},
		{"com", "", ErrSingleLabel},
		{"co.uk", "", ErrPublicSuffix},
		{"github.io", "", ErrPublicSuffix},
		{"http://co.uk/", "", ErrPublicSuffix},
		{"a..example.com", "", ErrInvalidDomain},
		{".example.com", "", ErrInvalidDomain},
		{"example.com..", "", ErrInvalidDomain},
		{"exa mple.com", "", ErrInvalidDomain},
		{"ex_ample.com", "", ErrInvalidDomain},
		{"-example.com", "", ErrInvalidDomain},
		{"xn--zzzzzzzz-.com", "", ErrInvalidDomain},
		{"http://exa%20mple.com/", "", ErrInvalidDomain},
		{repeat("a", 64) + ".com", "", ErrInvalidDomain}, // label > 63
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Normalize(%q) = %q, %v; want error %v", tt.in, got, err, tt.err)
				}
				var de *Error
				if !errors.As(err, &de) || de.Input != tt.in {
					t.Fatalf("error %v is not an *Error naming the input", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			again, err := Normalize(got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: Normalize(%q) = %q, %v", got, again, err)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestErrorMessage(t *testing.T) {
	_, err := Normalize("192.168.1.1")
	if got, want := err.Error(), `domain "192.168.1.1" is an IP address, not a domain name`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"example.com", "www.example.co.uk", "s0001.example", "site7.test:8080",
		"https://bücher.de/x", "xn--bcher-kva.de", "[::1]:80", "127.0.0.1", "localhost",
		"co.uk", "a..b", "例え.テスト", "foo.github.io.", "http://user@host.example:1/p?q#f",
		"xn--.com", "a.xn--", "ＥＸＡＭＰＬＥ．ＣＯＭ", "0x7f.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Normalize(in)
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("Normalize(%q): error %v is not an *Error", in, err)
			}
			return
		}
		again, err := Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", in, out, out, again, err)
		}
	})
}

// FuzzNormalizeFastPath checks that the shortcut for plain host names
// agrees with the full path (URL parsing and IDNA) on every input.
func FuzzNormalizeFastPath(f *testing.F) {
	for _, s := range []string{"example.com", "a-b.c-d.example", "ab--cd.com", "xn--bcher-kva.de",
		"s0001.example", "localhost", "co.uk", "127.0.0.1", "1.2.3", "a.b", "-a.com", "a-.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fast, ferr := normalize(in, true)
		slow, serr := normalize(in, false)
		if fast != slow || !errors.Is(ferr, errors.Unwrap(serr)) && serr != nil || (ferr == nil) != (serr == nil) {
			t.Fatalf("%q: fast path %q, %v; full path %q, %v", in, fast, ferr, slow, serr)
		}
	})
}

// FuzzIsIP checks isIP's shortcut against netip's parsers alone.
func FuzzIsIP(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4:80", "[::1]:443", "::1", "fe80::1%eth0", "example.com", "1.2.3", "0x7f.0.0.1", "[::1", "1..2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slow := false
		if _, err := netip.ParseAddr(s); err == nil {
			slow = true
		} else if _, err := netip.ParseAddrPort(s); err == nil {
			slow = true
		} else if strings.HasPrefix(s, "[") {
			if i := strings.IndexByte(s, ']'); i > 0 {
				if _, err := netip.ParseAddr(s[1:i]); err == nil {
					slow = true
				}
			}
		}
		if got := isIP(s); got != slow {
			t.Errorf("isIP(%q) = %v, the parsers say %v", s, got, slow)
		}
	})
}

// TestCheck: Check accepts exactly Normalize's outputs.
func TestCheck(t *testing.T) {
	for in, want := range map[string]error{
		"example.com":      nil,
		"xn--bcher-kva.de": nil,
		"www.example.com":  ErrInvalidDomain, // Normalize gives example.com
		"Example.com":      ErrInvalidDomain,
		"bücher.de":        ErrInvalidDomain, // not an A-label
		"":                 ErrEmptyHost,
		"127.0.0.1":        ErrIPAddress,
		"co.uk":            ErrPublicSuffix,
	} {
		err := Check(in)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("Check(%q) = %v, want %v", in, err, want)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Input != in) {
			t.Errorf("Check(%q): %v is not an *Error naming the input", in, err)
		}
	}
}
