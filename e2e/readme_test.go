package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlock is one fenced code block of README.md.
type readmeBlock struct {
	lang string // the fence's info string: sh, sql, crontab, ...
	line int    // 1-based line of the opening fence
	text string
	skip string // why the test does not run it ("" : it runs)
}

// readmeBlocks reads README.md's fenced blocks. A block is marked not to run
// by a comment on the line before its fence: <!-- readme-test: skip WHY -->.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	var body []string
	prev := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n}
			if why, ok := strings.CutPrefix(strings.TrimSpace(prev), "<!-- readme-test: skip"); ok {
				cur.skip = strings.TrimSpace(strings.TrimSuffix(why, "-->"))
				if cur.skip == "" {
					t.Fatalf("README.md:%d: a skipped block says why", n)
				}
			}
			body = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("README.md:%d: fence never closed", cur.line)
	}
	return blocks
}

// TestREADME runs the README's shell and SQL blocks as pasted, in a
// directory where `make demo` has run (./bin/mapthenet, ./mapthenet-demo):
// shell with bash -eu, SQL through DuckDB (its Node API: .ci/run installs
// it and sets MAPTHENET_DUCKDB_NODE). Every SELECT must return rows. A
// block that cannot run here (the test suite itself, the real web, root)
// is marked in the README with the reason, and the reason is logged.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: the README test runs the demo")
	}
	bin := buildBinary(t)
	blocks := readmeBlocks(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "mapthenet")); err != nil {
		t.Fatal(err)
	}
	// What `make demo` does, from the checkout's root (here: work).
	demo := exec.Command("./bin/mapthenet", "demo", "--out", "mapthenet-demo")
	demo.Dir = work
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	duck := duckdbRunner(t)

	ran := 0
	for _, b := range blocks {
		switch {
		case b.lang != "sh" && b.lang != "sql":
			continue // output samples, crontab lines: not commands
		case b.skip != "":
			t.Logf("README.md:%d (%s) not run: %s", b.line, b.lang, b.skip)
			continue
		}
		ran++
		switch b.lang {
		case "sh":
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "MAPTHENET_DIR=", "ARCHIVE=") // the README's own defaults
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("README.md:%d: sh block failed: %v\n%s\n--- block:\n%s", b.line, err, out, b.text)
			}
		case "sql":
			if duck == nil {
				t.Logf("README.md:%d (sql) not run: no DuckDB (set MAPTHENET_DUCKDB_NODE)", b.line)
				continue
			}
			for _, r := range duck(work, b.text) {
				if r.Error != "" {
					t.Errorf("README.md:%d: %s\n%s", b.line, r.Error, r.SQL)
				} else if r.Rows == 0 {
					t.Errorf("README.md:%d: no rows from\n%s", b.line, r.SQL)
				}
			}
		}
	}
	if ran == 0 {
		t.Error("no README block ran")
	}
}

type duckResult struct {
	SQL   string `json:"sql"`
	Rows  int    `json:"rows"`
	Error string `json:"error"`
}

// duckdbRunner returns a function that runs SQL statements in dir through
// DuckDB's Node API, found in $MAPTHENET_DUCKDB_NODE/node_modules; nil
// (and a visible note) when there is none, unless MAPTHENET_REQUIRE_DUCKDB=1
// makes that a failure.
func duckdbRunner(t *testing.T) func(dir, sql string) []duckResult {
	t.Helper()
	root := os.Getenv("MAPTHENET_DUCKDB_NODE")
	node, nodeErr := exec.LookPath("node")
	if root == "" || nodeErr != nil {
		msg := "no DuckDB for the README's SQL: install @duckdb/node-api with npm and set MAPTHENET_DUCKDB_NODE to its folder (.ci/run does)"
		if os.Getenv("MAPTHENET_REQUIRE_DUCKDB") == "1" {
			t.Fatal(msg)
		}
		t.Log("SKIP (SQL blocks): " + msg)
		return nil
	}
	// An ES module resolves imports from its own folder: put the script
	// beside a link to the package's node_modules.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/duckdb-query.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "duckdb-query.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return func(work, sql string) []duckResult {
		cmd := exec.Command(node, script)
		cmd.Dir = work
		cmd.Stdin = strings.NewReader(sql)
		out, _ := cmd.Output() // failures are in the lines
		var rs []duckResult
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var r duckResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("duckdb runner: %q: %v", line, err)
			}
			rs = append(rs, r)
		}
		return rs
	}
}
