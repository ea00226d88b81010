package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
	"github.com/mapthenet/mapthenet/schedule"
)

// dataDirConfigName is the data directory's own config file, read by every
// command run on it (mapthenet init writes it).
const dataDirConfigName = "config.toml"

// skipDataDirConfig is the annotation of a command that does not read the
// data directory's config (init, which writes it: an old file it is
// replacing must neither fill its flags nor stop it with a bad key).
const skipDataDirConfig = "mapthenet/skip-data-dir-config"

// applyDataDirConfig sets, from <data-dir>/config.toml, every flag of cmd
// that neither the command line nor --config set: flags > --config >
// the data directory's config > defaults. Keys are flag names, as in
// --config. The file is shared by every command, so a key that is a flag
// of another command (crawl's user-agent when running rank) is skipped; a
// key that is a flag of no command is an error, so that typos do not pass
// silently. A missing file is no config.
func (a *app) applyDataDirConfig(cmd *cobra.Command) error {
	if _, skip := cmd.Annotations[skipDataDirConfig]; skip {
		return nil
	}
	path := filepath.Join(a.DataDir, dataDirConfigName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // no config; the command says what is wrong with the directory
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	values := map[string]any{}
	if err := toml.Unmarshal(raw, &values); err != nil {
		return usagef("%s: %v", path, err)
	}
	known := allFlagNames(cmd.Root())
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same key named first in every error
	for _, key := range keys {
		switch {
		case key == "data-dir" || key == "config":
			return usagef("%s: %q cannot be set in the data directory's own config (pass --%s)", path, key, key)
		case !known[key]:
			return usagef("%s: %q is not a flag of any mapthenet command", path, key)
		}
		f := cmd.Flags().Lookup(key)
		if f == nil || f.Changed {
			continue
		}
		for _, s := range configStrings(values[key]) {
			if err := cmd.Flags().Set(key, s); err != nil {
				return usagef("%s: %s: %v", path, key, err)
			}
		}
	}
	return nil
}

// allFlagNames is every flag name of root and its commands.
func allFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	add := func(f *pflag.Flag) { names[f.Name] = true }
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return names
}

// writeDataDirConfig writes the config init makes: the identity crawl
// sends, and what keys serve and keys directory need to publish it. It is
// written whole or not at all (a temporary file, fsync, rename, fsync of
// the directory), mode 0644: nothing in it is secret, every request
// carries it.
func writeDataDirConfig(path string, id identity, now time.Time) error {
	sa, err := url.Parse(id.SignatureAgent)
	if err != nil {
		return err
	}
	values := []struct{ key, v, why string }{
		{"robots-token", id.RobotsToken, "crawl: the product token site owners name in robots.txt"},
		{"user-agent", id.UserAgent, "crawl: User-Agent, naming the bot page"},
		{"from", id.From, "crawl: From, who answers for the crawl"},
		{"signature-agent", id.SignatureAgent, "crawl: Signature-Agent, where the key directory is published"},
		{"authority", sa.Host, "keys directory, keys serve: the host the key directory is served from"},
		{"contact", id.From, "keys serve: the address the bot page gives for removal requests"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The data directory's config, written by mapthenet init at %s.\n", now.UTC().Format(time.RFC3339))
	b.WriteString("# Every command run on this directory reads it. Keys are flag names; flags on the\n")
	b.WriteString("# command line and --config win; a key that is a flag of no command is an error.\n")
	want := map[string]any{}
	for _, v := range values {
		fmt.Fprintf(&b, "\n# %s\n%s = %s\n", v.why, v.key, tomlString(v.v))
		want[v.key] = v.v
	}
	b.WriteString("\n# crawl: also send X-Crawler-Info naming the bot page\n")
	if id.CrawlerInfo {
		b.WriteString("crawler-info = true\n")
		want["crawler-info"] = true
	} else {
		b.WriteString("# crawler-info = true\n")
	}
	// The defaults, commented out: where to change them, once for both.
	b.WriteString("\n# crawl, rebuild: the revisit policy, one tier table (MAXRANK:DAYS:PAGES, best first)\n")
	b.WriteString("# and one discovery threshold (linking domains a never-visited domain needs) for both\n")
	fmt.Fprintf(&b, "# tiers = %s\n# min-in-domains = %d\n", tomlString(schedule.DefaultTiers.String()), schedule.DefaultMinInDomains)
	// What is read back must be what was meant, whatever the quoting.
	got := map[string]any{}
	if err := toml.Unmarshal([]byte(b.String()), &got); err != nil || !maps.Equal(got, want) {
		return fmt.Errorf("config: cannot write these values as TOML (%v)", err)
	}
	return writeFileAtomic(path, []byte(b.String()), 0o644)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeFileAtomic replaces path with data: readers see the old file or the
// new one, never a part, and after a crash the new one is whole or absent
// (atomicfile.WriteFile).
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := atomicfile.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
