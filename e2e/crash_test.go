package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/simweb"
	"github.com/mapthenet/mapthenet/snapshot"
)

// Crash safety, tested on the real binary: kill -9 at random moments
// (seeded: the seed is logged, MAPTHENET_CRASH_SEED replays it), then check
// what the next run finds. One binary for all the subtests.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it some thirty times (about 30 s)")
	}
	bin := buildBinary(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MAPTHENET_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("MAPTHENET_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("kill delays from seed %d (MAPTHENET_CRASH_SEED=%d replays them)", seed, seed)
	t.Run("crawl killed", func(t *testing.T) { testCrawlKilled(t, bin, rand.New(rand.NewPCG(seed, 1))) })
	t.Run("rebuild killed", func(t *testing.T) { testRebuildKilled(t, bin, rand.New(rand.NewPCG(seed, 2))) })
	t.Run("full disk", func(t *testing.T) { testFullDisk(t, bin) })
	t.Run("unwritable data dir", func(t *testing.T) { testUnwritable(t, bin) })
}

// proc is one run of the binary.
type proc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	stdout bytes.Buffer
	exited chan error
}

func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	return p
}

// killAfter sends SIGKILL after d unless the process ends first; it reports
// whether the kill came first, and the exit error otherwise.
func (p *proc) killAfter(d time.Duration) (killed bool, err error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-p.exited:
		return false, err
	case <-timer.C:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return false, err
	}
	err = <-p.exited
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true, nil
		}
	}
	return false, err // it ended on its own just before the signal
}

// wait waits for the process (at most a minute) and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		default:
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("%v: still running after a minute; stderr:\n%s", p.cmd.Args, p.stderr.String())
	}
	return -1
}

// noCrash fails the test when stderr shows a Go panic or runtime fault.
func noCrash(t *testing.T, what string, stderr string) {
	t.Helper()
	for _, sign := range []string{"panic:", "fatal error:", "SIGBUS", "SIGSEGV", "goroutine "} {
		if strings.Contains(stderr, sign) {
			t.Errorf("%s: stderr shows %q:\n%s", what, sign, stderr)
			return
		}
	}
}

// recorded returns the domains of the "visit recorded" lines of a JSON log
// (logged after the store commits: crawl/recorder.go).
func recorded(t *testing.T, log []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg    string `json:"msg"`
			Domain string `json:"domain"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line cut by the kill, or not JSON
		}
		if line.Msg == "visit recorded" {
			out = append(out, line.Domain)
		}
	}
	return out
}

// The crawl is killed at random moments against the simulated web, 20
// times or more, restarting on the same data directory each time (a fresh
// one once a crawl gets to the end). After each kill the store opens, every
// visit the log says was recorded is there with all its edges, and no
// domain holds part of a visit: its edge set is all of one visit's or
// nothing.
func testCrawlKilled(t *testing.T, bin string, rng *rand.Rand) {
	w, err := simweb.New(simweb.Config{Seed: 17, Sites: 100, SpecialShare: 0.3,
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.WarmCertificates(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{} // src → its edges
	for _, e := range w.ExpectedEdges() {
		want[e.Src] = append(want[e.Src], fmt.Sprintf("%s nofollow=%v sitewide=%v", e.Dst, e.Nofollow, e.Sitewide))
	}

	const kills = 22
	var dir, seeds string
	var logged map[string]bool
	killed, runs, dirs := 0, 0, 0
	for killed < kills {
		if dir == "" {
			dir, logged = t.TempDir(), map[string]bool{}
			seeds = filepath.Join(dir, "seeds.txt")
			if err := w.WriteSeeds(seeds); err != nil {
				t.Fatal(err)
			}
			dirs++
		}
		// A few in flight and a real min-delay, so that a crawl of the
		// whole web takes some seconds and kills land all along it.
		p := start(t, bin, "crawl", "--create", "--data-dir", dir, "--log-format", "json", "--seeds", seeds, "--until-idle",
			"--min-delay", "20ms", "--max-sites-in-flight", "4", "--platform", "github.io=10ms",
			"--connect-to", w.ConnectTo(), "--ca-cert", w.CAFile(), "--now", now.Format(time.RFC3339))
		delay := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
		wasKilled, err := p.killAfter(delay)
		runs++
		for _, d := range recorded(t, p.stderr.Bytes()) {
			logged[d] = true
		}
		noCrash(t, "crawl", p.stderr.String())
		if wasKilled {
			killed++
		} else if err != nil {
			t.Fatalf("crawl ended by itself with %v:\n%s", err, p.stderr.String())
		}
		n := checkCrawlStore(t, filepath.Join(dir, "store"), logged, want)
		t.Logf("run %d: kill after %v: %s; %d visits logged, %d in the store", runs,
			delay.Round(time.Millisecond), map[bool]string{true: "killed", false: "finished first"}[wasKilled], len(logged), n)
		if t.Failed() {
			t.Fatalf("stopping after run %d (kill delay %v); its log:\n%s", runs, delay, p.stderr.String())
		}
		if !wasKilled {
			// The crawl got to the end: every site was visited.
			if n < len(w.Sites()) {
				t.Errorf("a finished crawl left %d visits, want one per site (%d)", n, len(w.Sites()))
			}
			dir = ""
		}
	}
	t.Logf("%d kills in %d runs over %d data directories", killed, runs, dirs)
}

// checkCrawlStore opens the store read-only and checks it against the
// visits logged as recorded and the web's expected edges; it returns the
// number of visits stored.
func checkCrawlStore(t *testing.T, dir string, logged map[string]bool, want map[string][]string) int {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if len(logged) > 0 {
			t.Errorf("no store, but %d visits logged as recorded", len(logged))
		}
		return 0 // killed before it made one
	}
	// Open a copy for writing, as the next crawl opens the store: Badger
	// refuses a read-only open of a store that was not closed (it must
	// truncate the write-ahead log's torn tail first), and the original
	// stays as the kill left it for the next crawl to recover.
	cp := filepath.Join(t.TempDir(), "store")
	copyDir(t, dir, cp)
	s, err := graph.Open(cp, graph.Options{Create: true})
	if err != nil {
		t.Errorf("the store does not open after the kill: %v", err)
		return 0
	}
	defer s.Close()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	names := map[uint32]string{}
	noErr(t, sn.Domains(func(st *data.DomainState) error { names[st.ID] = st.Name; return nil }))
	visits := map[string]int{}
	noErr(t, sn.Visits(func(v *data.VisitLogEntry) error { visits[names[v.DomainID]]++; return nil }))
	edges := map[string][]string{}
	noErr(t, sn.Edges(func(e *data.EdgeRecord) error {
		src := names[e.SrcID]
		edges[src] = append(edges[src], fmt.Sprintf("%s nofollow=%v sitewide=%v", names[e.DstID], e.Nofollow, e.Sitewide))
		return nil
	}))
	for d := range logged {
		if visits[d] == 0 {
			t.Errorf("%s: logged as recorded, but no visit in the store", d)
		}
	}
	n := 0
	for d, c := range visits {
		n += c
		if c != 1 {
			t.Errorf("%s: %d visits, want one (a visited seed is not visited again)", d, c)
		}
		got, exp := slices.Sorted(slices.Values(edges[d])), slices.Sorted(slices.Values(want[d]))
		if !slices.Equal(got, exp) {
			t.Errorf("%s: edges %v, want the whole visit's %v", d, got, exp)
		}
	}
	for src := range edges {
		if visits[src] == 0 {
			t.Errorf("%s: %d edges but no visit", src, len(edges[src]))
		}
	}
	return n
}

// copyDir copies dir to a new directory to, keeping sparse files sparse
// (Badger's value log and write-ahead files are gigabytes of holes).
func copyDir(t *testing.T, dir, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-R", "--sparse=always", dir, to).CombinedOutput(); err != nil {
		t.Fatalf("copying the store: %v\n%s", err, out)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A rebuild is killed at random moments, several times: `current` stays on
// the last complete snapshot, whose manifest is valid and whose files are
// all there, and the next rebuild succeeds and removes what the killed
// ones left.
func testRebuildKilled(t *testing.T, bin string, rng *rand.Rand) {
	dir := t.TempDir()
	fillStore(t, filepath.Join(dir, "store"), graphgen.Config{Domains: 8_000, Edges: 60_000, Seed: 5})
	rebuilds := snapshot.Local(dir)
	at := now
	run := func() *proc {
		at = at.Add(time.Hour)
		return start(t, bin, "rebuild", "--data-dir", dir, "--log-format", "json", "--now", at.Format(time.RFC3339))
	}

	// Two whole rebuilds first: the second, which starts its map from the
	// first's, is what the killed ones would take.
	var took time.Duration
	for range 2 {
		began := time.Now()
		p := run()
		if code := p.wait(t); code != 0 {
			t.Fatalf("rebuild: exit %d:\n%s", code, p.stderr.String())
		}
		took = time.Since(began)
	}
	last := at.Format(data.SnapshotIDLayout)
	t.Logf("a whole rebuild takes %v", took.Round(time.Millisecond))

	const kills = 6
	for i := 0; i < kills; i++ {
		// Mostly within the rebuild, now and then just after it.
		delay := time.Duration(rng.Int64N(int64(took * 6 / 5)))
		p := run()
		wasKilled, err := p.killAfter(delay)
		noCrash(t, "rebuild", p.stderr.String())
		switch {
		case !wasKilled && err != nil:
			t.Fatalf("rebuild ended by itself with %v:\n%s", err, p.stderr.String())
		case !wasKilled:
			last = at.Format(data.SnapshotIDLayout) // it completed
		default:
			// Killed after moving current (while pruning, say): then its
			// snapshot is the last complete one.
			if target, _ := rebuilds.Current(); target == at.Format(data.SnapshotIDLayout) {
				last = target
			}
		}
		t.Logf("rebuild %d: kill after %v: killed=%v; current should be %s", i, delay.Round(time.Millisecond), wasKilled, last)
		checkCurrent(t, rebuilds, last)
	}

	t.Logf("the killed rebuilds left %v", debris(t, rebuilds))
	p := run()
	if code := p.wait(t); code != 0 {
		t.Fatalf("rebuild after the kills: exit %d:\n%s", code, p.stderr.String())
	}
	checkCurrent(t, rebuilds, at.Format(data.SnapshotIDLayout))
	if left := debris(t, rebuilds); len(left) > 0 {
		t.Errorf("the rebuild after the kills left %q behind", left)
	}
	// The store the killed rebuilds had open still opens.
	s, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true, ReadOnly: true})
	if err != nil {
		t.Fatalf("store after the killed rebuilds: %v", err)
	}
	noErr(t, s.Close())
}

// debris lists what is in the snapshot directory besides the snapshots,
// `current` and the lock: what killed rebuilds left.
func debris(t *testing.T, rebuilds *snapshot.Dir) []string {
	t.Helper()
	ids, err := rebuilds.List()
	noErr(t, err)
	entries, err := os.ReadDir(rebuilds.Location("", ""))
	noErr(t, err)
	var left []string
	for _, e := range entries {
		if n := e.Name(); !slices.Contains(ids, n) && n != snapshot.CurrentName && n != snapshot.LockName {
			left = append(left, n)
		}
	}
	return left
}

// checkCurrent: rebuilds/current names want, and its manifest and files
// are whole.
func checkCurrent(t *testing.T, rebuilds *snapshot.Dir, want string) {
	t.Helper()
	target, err := rebuilds.Current()
	if err != nil || target == "" {
		t.Fatalf("current: %q, %v", target, err)
	}
	if target != want {
		t.Errorf("current -> %s, want the last complete snapshot %s", target, want)
	}
	m, err := snapshot.ReadManifest(rebuilds, target)
	if err != nil {
		t.Fatalf("current's manifest: %v", err)
	}
	if m.ID != target {
		t.Errorf("current -> %s holds the manifest of %s", target, m.ID)
	}
	for file, rows := range m.Counts {
		f, err := rebuilds.Open(target, file)
		if err != nil || f.Size() == 0 {
			t.Errorf("current's %s (%d rows in the manifest): %v", file, rows, err)
		}
		if f != nil {
			f.Close()
		}
	}
}

// fillStore records one complete visit per source domain of a graphgen
// graph, in batches.
func fillStore(t *testing.T, dir string, cfg graphgen.Config) {
	t.Helper()
	g, err := graphgen.New(cfg)
	noErr(t, err)
	s, err := graph.Open(dir, graph.Options{Create: true})
	noErr(t, err)
	defer s.Close()
	var batch []*data.VisitResult
	var cur *data.VisitResult
	flush := func() {
		noErr(t, s.RecordVisits(batch))
		batch = batch[:0]
	}
	noErr(t, g.Edges(func(src, dst uint32, nofollow bool) error {
		if cur == nil || cur.Domain != g.Name(src) {
			if len(batch) >= 500 {
				flush()
			}
			cur = &data.VisitResult{Domain: g.Name(src), StartedAt: now, FinishedAt: now.Add(time.Minute),
				RobotsReadAt: now, RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Complete: true}
			batch = append(batch, cur)
		}
		cur.Links = append(cur.Links, data.Link{Dst: g.Name(dst), Nofollow: nofollow})
		return nil
	}))
	flush()
	noErr(t, s.Close())
}

// mountTmpfs mounts a tmpfs of the given options at a new directory (the
// caller made sure it may: needMount, canMount).
func mountTmpfs(t *testing.T, flags uintptr, opts string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	noErr(t, os.Mkdir(dir, 0o755))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
		t.Fatalf("mount a tmpfs (%s): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// A full disk: the crawl says so and exits non-zero, never a runtime
// fault; the store stays whole. Badger writes through memory maps, so the
// store keeps a reserve (graph.DefaultMinFreeSpace) rather than let the
// disk fill under it.
func testFullDisk(t *testing.T, bin string) {
	if !needMount(t, bin) {
		return
	}
	w, err := simweb.New(simweb.Config{Seed: 19, Sites: 150, NoNamed: true})
	noErr(t, err)
	t.Cleanup(func() { w.Close() })
	noErr(t, w.Start())
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	noErr(t, w.WriteSeeds(seeds))
	crawl := func(dir string) *proc {
		return start(t, bin, "crawl", "--create", "--data-dir", dir, "--log-format", "json", "--seeds", seeds, "--until-idle",
			"--min-delay", "1ms", "--connect-to", w.ConnectTo(), "--ca-cert", w.CAFile(), "--now", now.Format(time.RFC3339))
	}

	t.Run("no room to start", func(t *testing.T) {
		mnt := mountTmpfs(t, 0, "size=2m")
		p := crawl(filepath.Join(mnt, "data"))
		code := p.wait(t)
		noCrash(t, "crawl", p.stderr.String())
		if code != 1 || !strings.Contains(p.stderr.String(), "not enough free disk space") {
			t.Errorf("crawl on a 2 MiB disk: exit %d, stderr:\n%s", code, p.stderr.String())
		}
	})

	t.Run("fills up midway", func(t *testing.T) {
		// The reserve plus a little: the crawl starts, records a few
		// visits and then finds the disk too full to go on.
		const margin = 40 << 10
		mnt := mountTmpfs(t, 0, fmt.Sprintf("size=%d", graph.DefaultMinFreeSpace+(4<<20)))
		data := filepath.Join(mnt, "data")
		// An empty crawl makes the store and the signing key first.
		empty := filepath.Join(t.TempDir(), "none.txt")
		noErr(t, os.WriteFile(empty, nil, 0o644))
		p := start(t, bin, "crawl", "--create", "--data-dir", data, "--seeds", empty, "--until-idle", "--connect-to", "::127.0.0.1:1")
		if code := p.wait(t); code != 0 {
			t.Fatalf("empty crawl: exit %d:\n%s", code, p.stderr.String())
		}
		var st syscall.Statfs_t
		noErr(t, syscall.Statfs(mnt, &st))
		free := int64(st.Bavail) * st.Bsize
		noErr(t, os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, free-graph.DefaultMinFreeSpace-margin), 0o644))

		p = crawl(data)
		code := p.wait(t)
		stderr := p.stderr.String()
		noCrash(t, "crawl", stderr)
		n := len(recorded(t, p.stderr.Bytes()))
		t.Logf("%d visits recorded before the disk was too full", n)
		if code != 1 || !strings.Contains(stderr, "not enough free disk space") {
			t.Errorf("crawl filling the disk: exit %d, %d visits recorded, stderr:\n%s", code, n, stderr)
		}
		// It stopped there rather than visit sites it could not record.
		if !strings.Contains(stderr, "stopping the crawl") || strings.Count(stderr, `"msg":"recording visits"`) > 10 {
			t.Errorf("the crawl went on after the store refused writes:\n%s", stderr)
		}
		// What was recorded is whole.
		s, err := graph.Open(filepath.Join(data, "store"), graph.Options{Create: true, ReadOnly: true})
		if err != nil {
			t.Fatalf("the store after a full disk: %v", err)
		}
		defer s.Close()
		for _, d := range recorded(t, p.stderr.Bytes()) {
			if st, ok, err := s.Domain(d); err != nil || !ok || !st.Visited() {
				t.Errorf("%s: logged as recorded, but not visited in the store (%v)", d, err)
			}
		}
	})
}

// An unwritable data directory: crawl and rebuild say what is wrong and
// exit non-zero, without a panic. Root ignores permission bits, so the
// directories are made unwritable by what even root cannot write through:
// a path under a regular file (ENOTDIR) and a read-only mount (EROFS).
func testUnwritable(t *testing.T, bin string) {
	file := filepath.Join(t.TempDir(), "a-file")
	noErr(t, os.WriteFile(file, []byte("not a directory\n"), 0o644))
	cases := map[string]struct{ dir, want string }{
		"under a file": {filepath.Join(file, "data"), "not a directory"},
	}
	switch mountErr := canMount(); {
	case os.Geteuid() != 0:
		ro := filepath.Join(t.TempDir(), "ro")
		noErr(t, os.Mkdir(ro, 0o500))
		cases["no write permission"] = struct{ dir, want string }{filepath.Join(ro, "data"), "permission denied"}
	case mountErr == nil:
		ro := mountTmpfs(t, syscall.MS_RDONLY, "size=1m")
		cases["read-only mount"] = struct{ dir, want string }{filepath.Join(ro, "data"), "read-only file system"}
	case os.Getenv(envRequire) == "1":
		t.Fatalf("no read-only mount case: cannot mount a tmpfs here (%v); %s=1 says it must run", mountErr, envRequire)
	default:
		// Root that may not mount (a container): permission bits do not
		// stop root, so only the case under a file is left.
		t.Logf("no read-only mount case: cannot mount a tmpfs here (%v)", mountErr)
	}
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	noErr(t, os.WriteFile(seeds, []byte("a.example\n"), 0o644))
	for name, c := range cases {
		for _, args := range [][]string{
			{"crawl", "--create", "--seeds", seeds, "--until-idle", "--connect-to", "::127.0.0.1:1"}, // mapped: no identity needed
			{"rebuild", "--create"},
		} {
			p := start(t, bin, append(args, "--data-dir", c.dir)...)
			code := p.wait(t)
			stderr := p.stderr.String()
			noCrash(t, name+" "+args[0], stderr)
			if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, filepath.Dir(c.dir)) {
				t.Errorf("%s: %s: exit %d, want 1 and an error naming %s and %q; stderr:\n%s", name, args[0], code, filepath.Dir(c.dir), c.want, stderr)
			}
		}
	}
}
