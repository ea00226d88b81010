package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/mapthenet/mapthenet/buildinfo"
	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// app is one command line's state: the flags every command takes
// (DESIGN.md, "Commands"), the logger they set up, and the seams tests
// replace. run makes a new one for each command line and hands it to the
// commands, so that command lines run side by side in one process (the
// tests do) share nothing.
type app struct {
	DataDir   string
	Config    string
	LogFormat string
	LogLevel  string
	Now       string // RFC 3339; empty: the clock
	logger    *slog.Logger

	removeSnapshots string // remove's --snapshots, which withRemover reads

	// newRemovalChecker builds the proof checker of remove verify and of
	// serve's removal page; tests point the domain at a fake resolver and
	// web (an appOption given to run).
	newRemovalChecker func(signer *webbotauth.Signer, clock func() time.Time) *removal.Checker
}

// newApp is the app of a command line before its flags are parsed: the
// real seams.
func newApp() *app { return &app{newRemovalChecker: systemRemovalChecker} }

// appOption changes the app of a command line before it runs (tests replace
// a seam with one).
type appOption func(*app)

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "mapthenet",
		Short: "A polite crawler and ranking pipeline for a map of the web's domains",
		Long: `mapthenet crawls the web politely, keeps only which domain links to which,
and rebuilds ranked Parquet snapshots of that graph for DuckDB.

Start with "mapthenet demo": it crawls a simulated web on loopback and
rebuilds it, with nothing to set up.`,
		Example: `  mapthenet demo
  mapthenet crawl --seeds data/seeds/default.txt --until-idle
  mapthenet rebuild
  mapthenet rank --top 20`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := applyConfig(cmd); err != nil {
				return err
			}
			if err := a.applyDataDirConfig(cmd); err != nil {
				return err
			}
			return a.setup(cmd.ErrOrStderr())
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.DataDir, "data-dir", defaultDataDir(), "data directory (env MAPTHENET_DIR)")
	pf.StringVar(&a.Config, "config", "", "YAML or TOML file of flag values (flags on the command line win)")
	pf.StringVar(&a.LogFormat, "log-format", "text", "log format: text or json (one object a line, the fatal error included)")
	pf.StringVar(&a.LogLevel, "log-level", "info", "least severe log lines written: debug, info, warn or error")
	root.Version = buildinfo.Get().String()
	root.SetVersionTemplate("mapthenet {{.Version}}\n")

	root.AddCommand(
		newInitCommand(a),
		newCrawlCommand(a),
		newRebuildCommand(a),
		newRankCommand(a),
		newScheduleCommand(a),
		newRobotsCommand(),
		newKeysCommand(a),
		newRemoveCommand(a),
		newMapCommand(a),
		newServeCommand(a),
		newDemoCommand(a),
		newStoreCommand(a),
		newStatusCommand(a),
		newFleetCommand(a),
		newVersionCommand(),
	)
	typeUsageErrors(root)
	return root
}

func defaultDataDir() string {
	if d := os.Getenv("MAPTHENET_DIR"); d != "" {
		return d
	}
	return "./mapthenet-data"
}

// addNowFlag gives a command that depends on the date its --now flag.
func addNowFlag(cmd *cobra.Command, a *app) {
	cmd.Flags().StringVar(&a.Now, "now", "", "the time to act as of, RFC 3339 (default: the clock); for cron replays and tests")
}

// now returns --now, or the clock.
func (a *app) now() (time.Time, error) {
	if a.Now == "" {
		return time.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, a.Now)
	if err != nil {
		return time.Time{}, usagef("--now %q: want an RFC 3339 time such as 2026-12-02T03:00:00Z", a.Now)
	}
	if err := checkNow(t, time.Now()); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func (a *app) setup(stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.LogLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", a.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch a.LogFormat {
	case "text":
		h = slog.NewTextHandler(stderr, opts)
	case "json":
		h = slog.NewJSONHandler(stderr, opts)
	default:
		return usagef("--log-format %q: want text or json", a.LogFormat)
	}
	a.logger = slog.New(h)
	return nil
}

// applyConfig sets, from --config, every flag not given on the command line.
// Keys are flag names ("min-delay: 2s"); a key that names no flag of the
// command is an error, so that typos do not pass silently.
func applyConfig(cmd *cobra.Command) error {
	path, _ := cmd.Flags().GetString("config")
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return usagef("--config: %v", err)
	}
	values := map[string]any{}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		err = toml.Unmarshal(raw, &values)
	case ".yaml", ".yml":
		err = yaml.Unmarshal(raw, &values)
	default:
		return usagef("--config %s: want a .yaml, .yml or .toml file", path)
	}
	if err != nil {
		return usagef("--config %s: %v", path, err)
	}
	for key, v := range values {
		f := cmd.Flags().Lookup(key)
		if f == nil {
			return usagef("--config %s: %q is not a flag of %q", path, key, cmd.CommandPath())
		}
		if f.Changed {
			continue
		}
		for _, s := range configStrings(v) {
			if err := cmd.Flags().Set(key, s); err != nil {
				return usagef("--config %s: %s: %v", path, key, err)
			}
		}
	}
	return nil
}

// configStrings turns a config value into flag values: a list sets a
// repeatable flag once per element.
func configStrings(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	default:
		return []string{fmt.Sprint(x)}
	}
}

// typeUsageErrors makes every command's argument check, and the
// required-flag and flag-group checks cobra runs after it, return a
// usageError, so that exit code 2 is decided by the error's type and never
// by its text. A command that only groups others keeps cobra's own
// unknown-subcommand check (findCommand types that one).
func typeUsageErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		typeUsageErrors(sub)
	}
	if c.Args == nil && c.HasSubCommands() {
		return
	}
	check := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(cmd, args); err != nil {
				return asUsage(err)
			}
		}
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return asUsage(err)
		}
		return asUsage(cmd.ValidateFlagGroups())
	}
}

// findCommand resolves the command line before it runs: an unknown command
// is a usage error (cobra's Find says which, with suggestions).
func findCommand(root *cobra.Command, args []string) error {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	_, _, err := root.Find(args)
	return asUsage(err)
}

func asUsage(err error) error {
	var ue usageError
	if err == nil || errors.As(err, &ue) {
		return err
	}
	return usageError{err}
}
