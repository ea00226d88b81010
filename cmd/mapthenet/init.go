package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

type initFlags struct {
	RobotsToken    string
	BotPage        string
	From           string
	UserAgent      string
	SignatureAgent string
	CrawlerInfo    bool
	Force          bool
	Shards         int
}

func newInitCommand(a *app) *cobra.Command {
	var fl initFlags
	cmd := &cobra.Command{
		Use:   "init --robots-token TOKEN --bot-page URL --from EMAIL",
		Short: "Set up a data directory: store, signing key, and the crawler's identity in config.toml",
		Long: `init makes a data directory ready for crawling the real web: the
directory, the link store, a signing key in keys/ (kept if one exists),
and <data-dir>/config.toml with the identity every request carries:

  robots-token     the product token site owners name in robots.txt
  user-agent       names the bot page (default: TOKEN/1.0 (+BOT-PAGE))
  from             your e-mail address, sent as From
  signature-agent  your key directory (default: on the bot page's host,
                   at /.well-known/http-message-signatures-directory)

and, for keys serve and keys directory, the directory's host (authority)
and your address for the bot page (contact).

Every command run on the data directory reads config.toml: keys are flag
names, flags on the command line and --config win, and a key that is a
flag of no command is an error. init refuses to replace an existing
config.toml (exit 1) unless --force is given.`,
		Example: `  mapthenet --data-dir /var/lib/mapthenet init --robots-token ExampleBot \
      --bot-page https://crawler.example.org/bot --from crawler@example.org`,
		Args:        noPositionalArgs,
		Annotations: map[string]string{skipDataDirConfig: ""},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runInit(cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.RobotsToken, "robots-token", "", "your crawler's product token, as site owners name it in robots.txt (required)")
	f.StringVar(&fl.BotPage, "bot-page", "", "URL of the page that says what your crawler does and how to opt out (required)")
	f.StringVar(&fl.From, "from", "", "e-mail address of whoever answers for the crawl, sent as From (required)")
	f.StringVar(&fl.UserAgent, "user-agent", "", "User-Agent; must contain the token and the bot page (default: TOKEN/1.0 (+BOT-PAGE))")
	f.StringVar(&fl.SignatureAgent, "signature-agent", "", "URL of your published key directory (default: https://BOT-PAGE-HOST"+webbotauth.DirectoryPath+")")
	f.BoolVar(&fl.CrawlerInfo, "crawler-info", false, "have crawl send X-Crawler-Info naming the bot page")
	f.BoolVar(&fl.Force, "force", false, "replace an existing config.toml")
	f.IntVar(&fl.Shards, "shards", 1, "shards of a new store: each its own Badger store, committed in parallel (ingest speed; a crawl fleet gives each node whole shards). Fixed once made: `store reshard` changes it")
	addNowFlag(cmd, a)
	return cmd
}

// identity is what init writes and crawl sends.
type identity struct {
	RobotsToken, UserAgent, From, SignatureAgent string
	CrawlerInfo                                  bool
}

// initIdentity checks init's flags and fills in the derived values.
func initIdentity(fl initFlags) (identity, error) {
	var missing []string
	for _, p := range []struct{ name, v string }{{"--robots-token", fl.RobotsToken}, {"--bot-page", fl.BotPage}, {"--from", fl.From}} {
		if p.v == "" {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		return identity{}, usagef("init needs %s: who runs the crawl, as site owners will see it (see mapthenet init --help)", strings.Join(missing, ", "))
	}
	u, err := url.Parse(fl.BotPage)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || crawl.BotPage(fl.BotPage) != fl.BotPage {
		return identity{}, usagef("--bot-page %q: want an http or https URL such as https://crawler.example.org/bot", fl.BotPage)
	}
	id := identity{RobotsToken: fl.RobotsToken, UserAgent: fl.UserAgent, From: fl.From,
		SignatureAgent: fl.SignatureAgent, CrawlerInfo: fl.CrawlerInfo}
	if id.UserAgent == "" {
		id.UserAgent = fl.RobotsToken + "/1.0 (+" + fl.BotPage + ")"
	}
	if id.SignatureAgent == "" {
		id.SignatureAgent = crawl.DirectoryURL(u.Host)
	}
	if err := crawl.CheckUserAgent(id.UserAgent, id.RobotsToken); err != nil {
		return identity{}, usagef("--%v", err)
	}
	if crawl.BotPage(id.UserAgent) != fl.BotPage {
		return identity{}, usagef("--user-agent %q: name the bot page %s in it", id.UserAgent, fl.BotPage)
	}
	if err := crawl.CheckFrom(id.From); err != nil {
		return identity{}, usagef("--%v", err)
	}
	if err := crawl.CheckSignatureAgent(id.SignatureAgent); err != nil {
		return identity{}, usagef("--%v", err)
	}
	return id, nil
}

func (a *app) runInit(out io.Writer, fl initFlags) error {
	now, err := a.now()
	if err != nil {
		return err
	}
	id, err := initIdentity(fl)
	if err != nil {
		return err
	}
	dir := a.DataDir
	configPath := filepath.Join(dir, dataDirConfigName)
	if _, err := os.Lstat(configPath); err == nil && !fl.Force {
		return fmt.Errorf("%s exists: pass --force to replace it", configPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if fl.Shards < 1 || fl.Shards > shard.MaxShards {
		return usagef("--shards %d: want 1 to %d", fl.Shards, shard.MaxShards)
	}
	k, err := a.createStore(dir, fl.Shards)
	if err != nil {
		return err
	}
	key, made, err := a.initKey(now)
	if err != nil {
		return err
	}
	if err := writeDataDirConfig(configPath, id, now); err != nil {
		return err
	}

	fmt.Fprintf(out, "data directory %s\n", dir)
	fmt.Fprintf(out, "  store:   %s (%s)\n", filepath.Join(dir, "store"), k)
	if made {
		fmt.Fprintf(out, "  key:     created %s (%s; keep it secret: it is the crawler's identity)\n", key.ID, key.Path)
	} else {
		fmt.Fprintf(out, "  key:     kept %s (%s)\n", key.ID, a.keysDir())
	}
	fmt.Fprintf(out, "  config:  %s\n", configPath)
	fmt.Fprintf(out, "every request will carry\n  User-Agent: %s\n  From: %s\n  Signature-Agent: %s\n", id.UserAgent, id.From, id.SignatureAgent)
	if id.CrawlerInfo {
		fmt.Fprintf(out, "  X-Crawler-Info: %s\n", fl.BotPage)
	}
	sa, _ := url.Parse(id.SignatureAgent)
	fmt.Fprintf(out, "before crawling:\n")
	fmt.Fprintf(out, "  1. publish %s: what the crawler does, how to opt out (robots.txt token %s), how to reach you\n", fl.BotPage, id.RobotsToken)
	fmt.Fprintf(out, "  2. publish the key directory (status 200, no redirect) at %s:\n", id.SignatureAgent)
	fmt.Fprintf(out, "       mapthenet keys serve --addr 127.0.0.1:8080   (behind HTTPS for %s)\n", sa.Host)
	fmt.Fprintf(out, "     or mapthenet keys directory > directory.http   (a static copy: regenerate it daily)\n")
	fmt.Fprintf(out, "  3. mapthenet crawl --seeds data/seeds/default.txt --until-idle\n")
	return nil
}

// createStore makes the link store of shards shards, routed by the
// default platform table (or opens the one there: init keeps a store, as
// it keeps a key, if it has that many shards). A crawl holding it is busy
// (exit 3). It says how many shards the store has.
func (a *app) createStore(dir string, shards int) (string, error) {
	s, err := openStore(dir, shard.Options{Graph: graph.Options{Logger: a.logger}, Create: true, Shards: shards,
		Platforms: platformSuffixes(nil)})
	if errors.Is(err, graph.ErrLocked) {
		return "", busyError{fmt.Errorf("data dir %s is in use: init a data directory no crawl is running on", dir)}
	}
	if err != nil {
		return "", err
	}
	k := storeShards(s)
	return k, s.Close()
}

// initKey makes the first signing key, or keeps the one there.
func (a *app) initKey(now time.Time) (k *webbotauth.Key, made bool, err error) {
	k, err = webbotauth.Init(a.keysDir(), now)
	if err == nil {
		return k, true, nil
	}
	if !errors.Is(err, webbotauth.ErrKeyExists) {
		return nil, false, err
	}
	kr, err := webbotauth.Load(a.keysDir())
	if err != nil {
		return nil, false, err
	}
	keys := kr.Keys()
	if len(keys) == 0 {
		return nil, false, fmt.Errorf("keys: %s holds a key file no key could be read from", a.keysDir())
	}
	return keys[len(keys)-1], false, nil
}
