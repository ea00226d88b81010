package main

import (
	"errors"
	"io"
	"testing"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

func TestCrawlSignatureAgentFlags(t *testing.T) {
	t.Parallel()
	good := crawlFlags{AgentURL: webbotauth.DefaultAgentURL, AgentForm: "dictionary", MinDelay: 1}
	tests := []struct {
		name      string
		url, form string
		wantForm  webbotauth.AgentForm
		wantUsage bool
	}{
		{"defaults", good.AgentURL, "dictionary", webbotauth.FormDictionary, false},
		{"string form", "https://bot.example.org/.well-known/http-message-signatures-directory", "string", webbotauth.FormString, false},
		{"unknown form", good.AgentURL, "list", 0, true},
		{"plain http", "http://bot.example.org/", "dictionary", 0, true},
		{"not a URL", "bot.example.org", "dictionary", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl := good
			fl.AgentURL, fl.AgentForm = tt.url, tt.form
			o, err := newApp().crawlOptions(fl, io.Discard)
			var ue usageError
			if tt.wantUsage {
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.SignatureAgentURL != tt.url || o.SignatureAgentForm != tt.wantForm {
				t.Errorf("options %q %v, want %q %v", o.SignatureAgentURL, o.SignatureAgentForm, tt.url, tt.wantForm)
			}
		})
	}
}

func TestCrawlNameCacheFlag(t *testing.T) {
	t.Parallel()
	good := crawlFlags{AgentURL: webbotauth.DefaultAgentURL, AgentForm: "dictionary", MinDelay: 1}
	for _, n := range []int{-2, -100} {
		fl := good
		fl.NameCache = n
		var ue usageError
		if _, err := newApp().crawlOptions(fl, io.Discard); !errors.As(err, &ue) {
			t.Errorf("--name-cache %d: err = %v, want a usage error", n, err)
		}
	}
	// What reaches graph.Options.NameCache: 0 there would mean the default.
	for in, want := range map[int]int{-1: -1, 0: -1, 5000: 5000} {
		if got := nameCache(in); got != want {
			t.Errorf("nameCache(%d) = %d, want %d", in, got, want)
		}
	}
}
