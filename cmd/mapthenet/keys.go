package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

func (a *app) keysDir() string { return filepath.Join(a.DataDir, "keys") }

// defaultAuthority is the host the key directory is published on: that of
// the Signature-Agent URL every request carries.
func defaultAuthority() string {
	u, _ := url.Parse(webbotauth.DefaultAgentURL)
	return u.Host
}

func newKeysCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage the Web Bot Auth signing keys and their published directory",
		Long: `Every crawler request is signed with Web Bot Auth (RFC 9421 HTTP Message
Signatures, Ed25519). The private keys live in <data-dir>/keys/ (mode 0600),
one <keyid>.jwk file each; the keyid is the key's RFC 7638 thumbprint.

Verifiers find the public keys in the key directory, which must be served
with status 200 (no redirect) at
  ` + webbotauth.DefaultAgentURL + `
the URL every signed request names in its Signature-Agent field.

Rotation: "keys rotate" adds a key that is published at once but signs only
24 hours later (the directory's cache lifetime), and keeps the old key
published until 24 h 5 min after that, when its last signature has expired
and every cached directory has been refreshed.`,
		Example: `  mapthenet keys init
  mapthenet keys directory > directory.http
  mapthenet keys serve --addr 127.0.0.1:8080
  mapthenet keys rotate`,
	}
	cmd.RunE = unknownSubcommand
	cmd.AddCommand(newKeysInitCommand(a), newKeysRotateCommand(a), newKeysDirectoryCommand(a), newKeysServeCommand(a))
	return cmd
}

func newKeysInitCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the first signing key (never overwrites one)",
		Long: `init creates an Ed25519 signing key in <data-dir>/keys/ and prints its keyid,
its file and where its key directory must be published. It refuses to run
when a key exists: use "keys rotate" to replace a key.

"crawl" also creates the key on first use when keys/ is empty.`,
		Example: `  mapthenet keys init
  mapthenet --data-dir /var/lib/mapthenet keys init`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now, err := a.now()
			if err != nil {
				return err
			}
			k, err := webbotauth.Init(a.keysDir(), now)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "created signing key %s\n", k.ID)
			fmt.Fprintf(out, "  file:   %s (keep it secret: it is the crawler's identity)\n", k.Path)
			fmt.Fprintf(out, "  signs:  from %s\n", k.NotBefore.Format(time.RFC3339))
			printPublishHint(out)
			return nil
		},
	}
	addNowFlag(cmd, a)
	return cmd
}

func printPublishHint(out io.Writer) {
	fmt.Fprintf(out, "publish the key directory (status 200, no redirect) at\n  %s\n", webbotauth.DefaultAgentURL)
	fmt.Fprintf(out, "with: mapthenet keys serve --addr HOST:PORT (behind HTTPS for %s),\n", defaultAuthority())
	fmt.Fprintln(out, "or:   mapthenet keys directory (the signed response, to serve as it is; re-run it daily)")
}

func newKeysRotateCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Add a new signing key; the old one signs until the new one takes over",
		Long: `rotate adds a new key to <data-dir>/keys/. The new key is published in the
key directory at once and signs from 24 hours later (the directory's
Cache-Control max-age, so every verifier's cached copy lists it by then).
The old key signs until that switch and stays published for 24 h 5 min
after it: its last signature expires 5 minutes after the switch, and the
extra day covers cached directories. Keys whose time has passed are
deleted. A second rotation before the switch is refused.

Republish the key directory right after rotating (keys serve does so by
itself; a static copy from keys directory must be regenerated).`,
		Example: `  mapthenet keys rotate
  mapthenet keys directory > directory.http   # if you publish a static copy`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now, err := a.now()
			if err != nil {
				return err
			}
			r, err := webbotauth.Rotate(a.keysDir(), now)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "added signing key %s\n  file:   %s\n  published from now, signs from %s\n",
				r.New.ID, r.New.Path, r.Switch.Format(time.RFC3339))
			for _, k := range r.Retiring {
				fmt.Fprintf(out, "key %s signs until %s, published until %s\n", k.ID,
					k.SignUntil.Format(time.RFC3339), k.Retire.Format(time.RFC3339))
			}
			for _, p := range r.Removed {
				fmt.Fprintf(out, "deleted retired key %s\n", p)
			}
			fmt.Fprintln(out, "republish the key directory now (keys serve does so by itself)")
			return nil
		},
	}
	addNowFlag(cmd, a)
	return cmd
}

func newKeysDirectoryCommand(a *app) *cobra.Command {
	var authority string
	cmd := &cobra.Command{
		Use:   "directory [--authority HOST]",
		Short: "Print the signed key directory response as an HTTP/1.1 message",
		Long: `directory prints the response to serve at
/.well-known/http-message-signatures-directory: status line, header fields
(Content-Type application/http-message-signatures-directory+json,
Cache-Control, ETag, Content-Digest, Signature-Input, Signature), a blank
line and the JWK Set of the published keys (public parts only).

Each key signs the response for --authority (the host verifiers fetch the
directory from; default ` + defaultAuthority() + `), valid for 7 days: regenerate
it daily, and after every rotation.`,
		Example: `  mapthenet keys directory
  mapthenet keys directory --authority crawler.example.org > directory.http
  mapthenet keys directory | sed '1,/^\r$/d'    # the body alone`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now, err := a.now()
			if err != nil {
				return err
			}
			host, err := checkAuthority(authority)
			if err != nil {
				return err
			}
			kr, err := a.loadKeys()
			if err != nil {
				return err
			}
			status, h, body := webbotauth.DirectoryResponse(kr, host, now)
			return webbotauth.WriteMessage(cmd.OutOrStdout(), status, h, body)
		},
	}
	cmd.Flags().StringVar(&authority, "authority", defaultAuthority(), "host[:port] the directory is served from (its @authority)")
	addNowFlag(cmd, a)
	return cmd
}

// checkAuthority accepts host or host:port (lower-cased, https's default
// port dropped), nothing else.
func checkAuthority(a string) (string, error) {
	u, err := url.Parse("https://" + a)
	if a == "" || err != nil || u.Host != a || u.User != nil {
		return "", usagef("--authority %q: want a host or host:port, such as %s", a, defaultAuthority())
	}
	return webbotauth.Authority("https", a), nil
}

func (a *app) loadKeys() (*webbotauth.Keyring, error) {
	kr, err := webbotauth.Load(a.keysDir())
	if err != nil {
		return nil, err
	}
	if len(kr.Keys()) == 0 {
		return nil, fmt.Errorf("no signing key in %s: run mapthenet keys init", a.keysDir())
	}
	return kr, nil
}

type keysServeOptions struct {
	Addr      string
	Authority string
	Contact   string
	Token     string // robots.txt token the bot page names ("": MapTheNetBot)
	UserAgent string // User-Agent the bot page names
}

func newKeysServeCommand(a *app) *cobra.Command {
	var opts keysServeOptions
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT",
		Short: "Serve the key directory and the bot's information page over HTTP",
		Long: `serve answers GET and HEAD for
  /.well-known/http-message-signatures-directory  the signed key directory (200, never a redirect)
  /  and  /bot                                     a page on what the bot does and how to opt out
reading the keys on every request, so a rotation shows at once. Put it
behind an HTTPS server for ` + defaultAuthority() + ` (verifiers require HTTPS) that
passes the Host header through; or give --authority to sign for a fixed host.
It runs until interrupted.`,
		Example: `  mapthenet keys serve --addr 127.0.0.1:8080
  curl -si http://127.0.0.1:8080/.well-known/http-message-signatures-directory`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runKeysServe(cmd.Context(), cmd.OutOrStdout(), opts, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&opts.Authority, "authority", "", "sign the directory for this host[:port] (default: each request's Host)")
	f.StringVar(&opts.Contact, "contact", "", "e-mail address for removal requests, shown on the bot page")
	f.StringVar(&opts.Token, "robots-token", "", "the crawler's robots.txt token, named on the bot page (default MapTheNetBot; init writes yours to config.toml)")
	f.StringVar(&opts.UserAgent, "user-agent", "", "the crawler's User-Agent, named on the bot page")
	return cmd
}

// runKeysServe serves until ctx ends; ready, if set, gets the listening
// address (tests listen on port 0).
func (a *app) runKeysServe(ctx context.Context, out io.Writer, opts keysServeOptions, ready func(addr string)) error {
	if opts.Authority != "" {
		auth, err := checkAuthority(opts.Authority)
		if err != nil {
			return err
		}
		opts.Authority = auth
	}
	if _, err := a.loadKeys(); err != nil {
		return err
	}
	dir := a.keysDir()
	h := webbotauth.NewHandler(webbotauth.HandlerOptions{
		Keys:      func() (*webbotauth.Keyring, error) { return webbotauth.Load(dir) },
		Authority: opts.Authority,
		Logger:    a.logger,
		Contact:   opts.Contact,
		Token:     opts.Token,
		UserAgent: opts.UserAgent,
	})
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return usagef("--addr %s: %v", opts.Addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	fmt.Fprintf(out, "serving the key directory at http://%s%s\n", ln.Addr(), webbotauth.DirectoryPath)
	if ready != nil {
		ready(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// noPositionalArgs refuses positional arguments as a usage error (exit 2).
func noPositionalArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments (got %q)", cmd.CommandPath(), args)
	}
	return nil
}

// unknownSubcommand is the RunE of a command that only groups others: an
// unknown subcommand is a usage error (cobra would print help and exit 0).
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s: unknown command %q (see \"%s --help\")", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return cmd.Help()
}
