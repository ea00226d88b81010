package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/robots"
	"github.com/spf13/cobra"
)

func newRobotsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "robots",
		Short: "Read robots.txt files the way the crawler does",
		Long: `Commands for site owners and operators to see how mapthenet reads a
robots.txt file (RFC 9309).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("robots: unknown command %q (see \"mapthenet robots --help\")", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newRobotsCheckCommand())
	return cmd
}

type robotsCheckOptions struct {
	File  string
	Agent string
	JSON  bool
}

func newRobotsCheckCommand() *cobra.Command {
	var opts robotsCheckOptions
	cmd := &cobra.Command{
		Use:                   "check --file ROBOTS.TXT --agent TOKEN [--json] URL...",
		DisableFlagsInUseLine: true,
		Short:                 "Say whether a robots.txt lets a crawler fetch some URLs, and its crawl-delay",
		Long: `check reads a robots.txt file as the crawler does (RFC 9309: the group
for the agent's product token, else "*"; longest match, Allow wins ties;
"*" and "$"; percent-encoding normalised; /robots.txt always allowed;
at most the first 500 KiB read) and prints, for each URL, whether the
agent may fetch it, then the Crawl-delay that applies to the agent.

A URL is an http or https URL, or a path starting with "/". Only its path
and query are compared; the host is not checked against the file.`,
		Example: `  mapthenet robots check --file robots.txt --agent MapTheNetBot \
      https://example.com/ https://example.com/private/page
  allowed    https://example.com/
  disallowed https://example.com/private/page
  crawl-delay 10s

  mapthenet robots check --file robots.txt --agent MapTheNetBot --json /a /b?c=d`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRobotsCheck(cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.File, "file", "", "the robots.txt file to read (required)")
	f.StringVar(&opts.Agent, "agent", "", `the crawler's product token, such as MapTheNetBot (required; "*" for any other crawler)`)
	f.BoolVar(&opts.JSON, "json", false, `print one JSON object: {"agent", "crawl_delay_s" (seconds or null), "results": [{"url", "allowed"}]}`)
	return cmd
}

// robotsCheckOutput is the --json object (DESIGN.md, "Commands").
type robotsCheckOutput struct {
	Agent       string              `json:"agent"`
	CrawlDelayS *float64            `json:"crawl_delay_s"`
	Results     []robotsCheckResult `json:"results"`
}

type robotsCheckResult struct {
	URL     string `json:"url"`
	Allowed bool   `json:"allowed"`
}

func runRobotsCheck(stdout, stderr io.Writer, opts robotsCheckOptions, args []string) error {
	switch {
	case opts.File == "":
		return usagef("robots check: --file is required (the robots.txt to read)")
	case strings.TrimSpace(opts.Agent) == "":
		return usagef("robots check: --agent is required (a product token such as MapTheNetBot)")
	case len(args) == 0:
		return usagef("robots check: give at least one URL to check")
	}
	agent := strings.TrimSpace(opts.Agent)
	if agent != "*" && !robots.IsProductToken(agent) {
		return usagef("robots check: --agent %q: want a product token (letters, \"-\" and \"_\" only, RFC 9309), such as MapTheNetBot, or \"*\"", opts.Agent)
	}
	paths := make([]string, len(args))
	for i, a := range args {
		p, err := robotsCheckPath(a)
		if err != nil {
			return err
		}
		paths[i] = p
	}
	body, err := os.ReadFile(opts.File)
	if err != nil {
		return usagef("robots check: --file: %v", err)
	}

	r := robots.Parse(body)
	if r.Truncated() {
		fmt.Fprintf(stderr, "mapthenet: note: %s is longer than %d bytes; only its first %d bytes were read, as the crawler does\n",
			opts.File, robots.MaxBytes, robots.MaxBytes)
	}
	g := r.Group(agent)
	out := robotsCheckOutput{Agent: opts.Agent, Results: make([]robotsCheckResult, len(args))}
	for i, a := range args {
		out.Results[i] = robotsCheckResult{URL: a, Allowed: g.Allowed(paths[i])}
	}
	if d, ok := g.CrawlDelay(); ok {
		s := d.Seconds()
		out.CrawlDelayS = &s
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false) // URLs keep their "&"
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return writeRobotsCheckText(stdout, out)
}

// robotsCheckPath returns what robots compares for a URL argument: an
// http(s) URL's path and query, or a path as given.
func robotsCheckPath(arg string) (string, error) {
	u, err := url.Parse(arg)
	if err != nil {
		return "", usagef("robots check: %q is not a URL: %v", arg, err)
	}
	switch {
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		return robots.PathOf(u), nil
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(arg, "/"):
		return robots.PathOf(u), nil
	}
	return "", usagef("robots check: %q: want an http or https URL, or a path starting with \"/\"", arg)
}

func writeRobotsCheckText(w io.Writer, out robotsCheckOutput) error {
	var b strings.Builder
	for _, r := range out.Results {
		verdict := "disallowed"
		if r.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(&b, "%-10s %s\n", verdict, r.URL)
	}
	if out.CrawlDelayS == nil {
		b.WriteString("crawl-delay none\n")
	} else {
		fmt.Fprintf(&b, "crawl-delay %ss\n", strconv.FormatFloat(*out.CrawlDelayS, 'f', -1, 64))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkRobotsToken refuses a --robots-token that is not a product token
// (RFC 9309: letters, "-" and "_" only) rather than let it be cut to its
// leading letters ("Bot2" would be read as "Bot") or never match. Empty
// means the default.
func checkRobotsToken(token string) error {
	if token != "" && !robots.IsProductToken(token) {
		return usagef("--robots-token %q: want a product token (letters, \"-\" and \"_\" only, RFC 9309), such as %s", token, crawl.DefaultRobotsToken)
	}
	return nil
}
