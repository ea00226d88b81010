package main

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mapthenet/mapthenet/crawl"
)

// identityFlags are the parts of the operator's identity crawl takes
// besides --user-agent, --robots-token and --signature-agent.
type identityFlags struct {
	From        string
	CrawlerInfo bool
}

func addIdentityFlags(f *pflag.FlagSet, id *identityFlags) {
	f.StringVar(&id.From, "from", "", "your e-mail address, sent as the From header (required for the real web: see mapthenet init)")
	f.BoolVar(&id.CrawlerInfo, "crawler-info", false, "also send X-Crawler-Info naming the bot page (the URL in --user-agent)")
}

// applyIdentity puts the operator's identity into o. A flag neither given
// nor set by a config file (--config, <data-dir>/config.toml) leaves its
// part empty, so that crawl.Run refuses to reach the real web without it;
// the built-in mapthenet.org identity fills in only for a crawl whose
// every host is mapped with --connect-to.
func applyIdentity(flags *pflag.FlagSet, id identityFlags, o *crawl.Options) error {
	if !flags.Changed("user-agent") {
		o.UserAgent = ""
	}
	if !flags.Changed("robots-token") {
		o.RobotsToken = ""
	}
	if !flags.Changed("signature-agent") {
		o.SignatureAgentURL = ""
	}
	o.From, o.CrawlerInfo = id.From, id.CrawlerInfo
	return checkIdentity(*o)
}

// checkIdentity is crawl's identity check as a usage error (exit 2): a
// missing or unusable identity is a configuration problem, found before
// the store is opened or a key made.
func checkIdentity(o crawl.Options) error {
	err := crawl.CheckIdentity(o)
	var ie *crawl.IdentityError
	switch {
	case errors.As(err, &ie):
		flags := "--" + strings.Join(ie.Missing, ", --")
		return usagef("crawl: say who runs this crawl before it reaches the real web: run mapthenet init (it writes %s), or give %s (only a crawl with --connect-to ::ADDR:PORT, mapping every host, goes without)",
			filepath.Join(o.DataDir, dataDirConfigName), flags)
	case err != nil:
		return usagef("--%v", err)
	}
	return nil
}
