package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/site"
)

type serveOptions struct {
	Addr          string
	Authority     string
	Contact       string
	Token         string
	UserAgent     string
	Poll          time.Duration
	AllowRemovals bool
	RemovalChecks bool
}

func newServeCommand(a *app) *cobra.Command {
	var opts serveOptions
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT",
		Short: "Serve the map, the rankings and a page per domain over the current snapshot",
		Long: `serve is one read-only web server over the current snapshot: the map
(WebGL; search, links, permalinks), the rankings, a page per domain
(/d/example.com), a JSON API for the same (/api/...), the bot page (/bot),
the key directory (` + webbotauth.DirectoryPath + `) and the
removal page (/remove), which hands out a domain's verification token and
checks the owner's proof.

It loads the snapshot into memory (a million domains and ten million links
take a few hundred megabytes and seconds) and checks rebuilds/current every
--poll: a new snapshot is loaded beside the old one and swapped in whole.

A proof that holds is logged for the operator (mapthenet remove verify
DOMAIN); with --allow-removals the server removes the domain itself, as
remove verify does. Put it behind an HTTPS server for the public; it runs
until interrupted.`,
		Example: `  mapthenet serve --addr 127.0.0.1:8080
  curl -s http://127.0.0.1:8080/api/rankings?limit=10
  curl -s http://127.0.0.1:8080/api/d/example.com`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runServe(cmd.Context(), cmd.OutOrStdout(), opts, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&opts.Authority, "authority", "", "sign the key directory for this host[:port] (default: each request's Host)")
	f.StringVar(&opts.Contact, "contact", "", "e-mail address for removal requests, shown on the bot and removal pages")
	f.StringVar(&opts.Token, "robots-token", "", "the crawler's robots.txt token, named on the bot page (default MapTheNetBot; init writes yours to config.toml)")
	f.StringVar(&opts.UserAgent, "user-agent", "", "the crawler's User-Agent, named on the bot page")
	f.DurationVar(&opts.Poll, "poll", 10*time.Second, "how often to check whether rebuilds/current moved")
	f.BoolVar(&opts.RemovalChecks, "removal-checks", true, "let site owners check their removal proof from the removal page (the server then fetches from their domain)")
	f.BoolVar(&opts.AllowRemovals, "allow-removals", false, "remove a domain whose owner's proof holds, as remove verify does (default: log it for the operator)")
	return cmd
}

// runServe serves until ctx ends; ready, if set, gets the listening
// address (tests listen on port 0).
func (a *app) runServe(ctx context.Context, out io.Writer, opts serveOptions, ready func(addr string)) error {
	if opts.Poll <= 0 {
		return usagef("--poll %v: want a positive duration", opts.Poll)
	}
	if opts.AllowRemovals && !opts.RemovalChecks {
		return usagef("--allow-removals needs --removal-checks")
	}
	if opts.Authority != "" {
		auth, err := checkAuthority(opts.Authority)
		if err != nil {
			return err
		}
		opts.Authority = auth
	}
	dir := a.keysDir()
	so := site.Options{
		DataDir: a.DataDir,
		Logger:  a.logger,
		Contact: opts.Contact,
		Bot: webbotauth.HandlerOptions{
			Keys:      func() (*webbotauth.Keyring, error) { return webbotauth.Load(dir) },
			Authority: opts.Authority, Contact: opts.Contact, Token: opts.Token, UserAgent: opts.UserAgent,
			RemovalPage: "/remove",
		},
		RemovalSecret: func() ([]byte, error) { return removal.LoadOrCreateSecret(dir) },
	}
	if opts.RemovalChecks {
		chk, err := a.serveChecker()
		if err != nil {
			return err
		}
		so.Checker = chk
	}
	if opts.AllowRemovals {
		so.Remove = func(ctx context.Context, res *removal.Result) error {
			return a.withRemover(ctx, func(rm removal.Remover) error {
				return removal.RemoveProven(rm, res, time.Now(), a.logger)
			})
		}
	}
	s, err := site.New(so)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return usagef("--addr %s: %v", opts.Addr, err)
	}
	what := "snapshot " + s.Snapshot()
	if s.Snapshot() == "" {
		what = "no snapshot yet (waiting for the first rebuild)"
	}
	fmt.Fprintf(out, "serving the map at http://%s/ (%s)\n", ln.Addr(), what)
	if ready != nil {
		ready(ln.Addr().String())
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(wctx, opts.Poll)
	return site.Serve(ctx, ln, s, a.logger)
}

// serveChecker is the removal proof checker of the removal page: remove
// verify's (signed fetches when a signing key exists, the crawler's
// address guard and timeouts).
func (a *app) serveChecker() (site.ProofChecker, error) {
	kr, err := webbotauth.Load(a.keysDir())
	if err != nil || len(kr.Keys()) == 0 {
		rt := removal.NewTransport(nil)
		return &removal.Checker{Resolver: net.DefaultResolver, Client: removal.NewHTTPClient(rt)}, nil
	}
	signer, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{})
	if err != nil {
		return nil, err
	}
	return a.newRemovalChecker(signer, time.Now), nil
}
