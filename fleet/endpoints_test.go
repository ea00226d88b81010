package fleet

import (
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string // a part of the error; "" = none
	}{
		{"etcd://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}, ""},
		{"etcd://h1:2379,h2:2379,h3:2379", []string{"http://h1:2379", "http://h2:2379", "http://h3:2379"}, ""},
		{"ETCD://Etcd-1.Example.org:02379", []string{"http://etcd-1.example.org:2379"}, ""},
		{"etcd://[::1]:2379,[2001:db8::1]:2380", []string{"http://[::1]:2379", "http://[2001:db8::1]:2380"}, ""},
		{"etcd://etcd.internal.:2379", []string{"http://etcd.internal.:2379"}, ""},
		{"", nil, "want etcd://HOST:PORT"},
		{"http://h1:2379", nil, "want etcd://HOST:PORT"},
		{"h1:2379", nil, "want etcd://HOST:PORT"},
		{"etcd://", nil, "no etcd member"},
		{"etcd://h1:2379,,h2:2379", nil, "member 2 (\"\"): empty"},
		{"etcd://h1:2379,", nil, "member 2"},
		{"etcd://h1", nil, "want HOST:PORT"},
		{"etcd://h1:", nil, "port \"\""},
		{"etcd://h1:0", nil, "want 1 to 65535"},
		{"etcd://h1:65536", nil, "want 1 to 65535"},
		{"etcd://h1:http", nil, "want 1 to 65535"},
		{"etcd://::1:2379", nil, "want HOST:PORT"},
		{"etcd://[::1%eth0]:2379", nil, "zoned"},
		{"etcd://h1:2379/v3", nil, "no path"},
		{"etcd://user:pw@h1:2379", nil, "no path, user"},
		{"etcd://h1:2379,H1:2379", nil, "listed twice"},
		{"etcd://-bad-:2379", nil, "not a host name"},
		{"etcd://h_1:2379", nil, "not a host name"},
		{"etcd://h1:2379 ,h2:2379", nil, "no path, user or spaces"},
		{"etcd://" + strings.Repeat("h:1,", 15) + "h:2", nil, "at most 15"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseURL(%q): %v", tt.in, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseURL(%q) error %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && !slices.Equal(got, tt.want):
			t.Errorf("ParseURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "--fleet") {
			t.Errorf("ParseURL(%q) error %q does not name the flag", tt.in, err)
		}
	}
}

func TestFormatURLRoundTrip(t *testing.T) {
	in := "etcd://10.0.0.1:2379,[::1]:2379,etcd-3.example.org:2379"
	eps, err := ParseURL(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatURL(eps); got != in {
		t.Errorf("FormatURL = %q, want %q", got, in)
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"etcd://h1:2379,h2:2379", "etcd://[::1]:1", "etcd://", "etcd://a:1,a:1", "etcd://[fe80::1%lo]:9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		eps, err := ParseURL(s)
		if err != nil {
			return
		}
		// What it accepts, it accepts again in its own words, unchanged.
		again, err := ParseURL(FormatURL(eps))
		if err != nil || !slices.Equal(again, eps) {
			t.Fatalf("ParseURL(%q) = %q, but its FormatURL %q parses to %q, %v", s, eps, FormatURL(eps), again, err)
		}
		for _, e := range eps {
			if !strings.HasPrefix(e, "http://") || strings.ContainsAny(e[len("http://"):], "/?#@ ,") {
				t.Fatalf("ParseURL(%q): endpoint %q", s, e)
			}
		}
	})
}

func TestCheckNodeName(t *testing.T) {
	for _, ok := range []string{"n1", "crawl-2.dc1", "a", "0node", "node_3", strings.Repeat("a", 63)} {
		if err := CheckNodeName(ok); err != nil {
			t.Errorf("CheckNodeName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "N1", "-n", ".n", "n/1", "n 1", "nöde", strings.Repeat("a", 64)} {
		if err := CheckNodeName(bad); err == nil {
			t.Errorf("CheckNodeName(%q) accepted", bad)
		}
	}
}
