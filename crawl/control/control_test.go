package control

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sockPath(t *testing.T) string {
	// Unix socket paths are short (108 bytes): t.TempDir can be too long.
	d, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, SocketName)
}

func TestCallAndServe(t *testing.T) {
	path := sockPath(t)
	s, err := Serve(path, map[string]Handler{
		"echo": func(ctx context.Context, args json.RawMessage) (any, error) {
			var in struct{ N int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return map[string]int{"twice": 2 * in.N}, nil
		},
		"fail": func(ctx context.Context, args json.RawMessage) (any, error) { return nil, errors.New("it broke") },
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v", st.Mode().Perm())
	}
	if _, err := Serve(path, nil, nil); err == nil {
		t.Error("second server on a live socket")
	}
	var out struct{ Twice int }
	if err := Call(context.Background(), path, "echo", map[string]int{"N": 21}, &out); err != nil || out.Twice != 42 {
		t.Fatalf("%+v %v", out, err)
	}
	if err := Call(context.Background(), path, "fail", nil, nil); err == nil || !strings.Contains(err.Error(), "it broke") {
		t.Fatalf("fail: %v", err)
	}
	if err := Call(context.Background(), path, "nope", nil, nil); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown: %v", err)
	}
	s.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("socket file left after Close")
	}
	if err := Call(context.Background(), path, "echo", nil, nil); !errors.Is(err, ErrNoServer) {
		t.Fatalf("after close: %v", err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	path := sockPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Serve(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestBusyAndHangUp(t *testing.T) {
	path := sockPath(t)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	s, err := Serve(path, map[string]Handler{
		"busy": func(ctx context.Context, args json.RawMessage) (any, error) {
			return nil, Busy("a rebuild is already running (pid 7)")
		},
		"wait": func(ctx context.Context, args json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = Call(context.Background(), path, "busy", nil, nil)
	if !errors.Is(err, ErrBusy) || err.Error() != "a rebuild is already running (pid 7)" {
		t.Fatalf("busy: %v", err)
	}
	// A caller that goes away cancels its command.
	ctx, cancel := context.WithCancel(context.Background())
	callDone := make(chan error, 1)
	go func() { callDone <- Call(ctx, path, "wait", nil, nil) }()
	<-started
	cancel()
	if err := <-callDone; !errors.Is(err, context.Canceled) {
		t.Errorf("call: %v", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("handler: %v", err)
	}
}

func TestLockAndOwner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, RebuildLockName)
	me := Owner{PID: os.Getpid(), Command: "mapthenet rebuild"}
	release, _, err := Lock(path, me)
	if err != nil {
		t.Fatal(err)
	}
	_, holder, err := Lock(path, Owner{PID: 1, Command: "other"})
	if !errors.Is(err, ErrBusy) || holder.PID != me.PID || holder.Command != me.Command {
		t.Fatalf("second lock: %v %+v", err, holder)
	}
	release()
	if o := ReadOwner(path); o.PID != 0 {
		t.Errorf("released lock still names %+v", o)
	}
	release2, _, err := Lock(path, me)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release2()

	op := filepath.Join(dir, StoreOwnerName)
	if o := ReadOwner(op); o.String() != "another process (pid unknown)" {
		t.Errorf("missing: %q", o.String())
	}
	if err := WriteOwner(op, Self("mapthenet crawl", time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	o := ReadOwner(op)
	want := "mapthenet crawl (pid " + strconv.Itoa(os.Getpid()) + ", started 2026-12-02T23:00:00Z)"
	if o.String() != want {
		t.Errorf("got %q, want %q", o.String(), want)
	}
	// A pid no process has (beyond the kernel's pid_max) reads as gone.
	dead := Owner{PID: 1 << 30, Command: "mapthenet crawl"}
	if !strings.HasSuffix(dead.String(), "no longer running)") {
		t.Errorf("dead: %q", dead.String())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A pid outside a pid_t's range is damage, never a live process: kill(2)
// would read 2^32+pid as pid and 2^32-1 as -1 (every process).
func TestOwnerPIDOutOfRange(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		pid   string
		alive bool
		want  string
	}{
		{strconv.Itoa(os.Getpid()), true, "mapthenet crawl (pid " + strconv.Itoa(os.Getpid()) + ")"},
		{"2147483647", false, "mapthenet crawl (pid 2147483647, no longer running)"},
		{strconv.FormatInt(1<<32+int64(os.Getpid()), 10), false, "mapthenet crawl (pid " + strconv.FormatInt(1<<32+int64(os.Getpid()), 10) + " is not a process id: the owner file is damaged)"},
		{"4294967295", false, "mapthenet crawl (pid 4294967295 is not a process id: the owner file is damaged)"},
		{"2147483648", false, "mapthenet crawl (pid 2147483648 is not a process id: the owner file is damaged)"},
		{"-1", false, "mapthenet crawl (pid -1 is not a process id: the owner file is damaged)"},
		{"0", false, "mapthenet crawl (pid unknown)"},
	} {
		p := filepath.Join(dir, StoreOwnerName)
		if err := os.WriteFile(p, []byte(`{"pid":`+tc.pid+`,"command":"mapthenet crawl"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		o := ReadOwner(p)
		if o.Alive() != tc.alive || o.String() != tc.want {
			t.Errorf("pid %s: alive %v, %q; want %v, %q", tc.pid, o.Alive(), o.String(), tc.alive, tc.want)
		}
	}
}

// ReadOwner reads whatever a file holds without failing or panicking.
func FuzzReadOwner(f *testing.F) {
	f.Add([]byte(`{"pid":1234,"command":"mapthenet crawl","started":"2026-12-02T23:00:00Z"}`))
	f.Add([]byte(`{"pid":-5}`))
	f.Add([]byte(`{"pid":"x"`))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "owner")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		o := ReadOwner(p)
		if s := o.String(); s == "" {
			t.Errorf("empty description of %+v", o)
		}
	})
}

// Shutdown lets a running command finish; a second Shutdown-cancelled one
// stops when its context ends.
func TestShutdown(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		path := sockPath(t)
		started, finish := make(chan struct{}), make(chan struct{})
		s, err := Serve(path, map[string]Handler{
			"work": func(ctx context.Context, args json.RawMessage) (any, error) {
				close(started)
				select {
				case <-finish:
					return "finished", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan string, 1)
		go func() {
			var out string
			if err := Call(context.Background(), path, "work", nil, &out); err != nil {
				out = err.Error()
			}
			res <- out
		}()
		<-started
		ctx, cancel := context.WithCancel(context.Background())
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(ctx) }()
		if cancelFirst {
			cancel()
		} else {
			close(finish)
		}
		if err := <-shut; err != nil {
			t.Errorf("shutdown: %v", err)
		}
		got := <-res
		cancel()
		// Cancelled, the caller hears either the handler's error or the
		// connection closing.
		if (got == "finished") != !cancelFirst {
			t.Errorf("cancelFirst=%v: got %q", cancelFirst, got)
		}
		if err := Call(context.Background(), path, "work", nil, nil); !errors.Is(err, ErrNoServer) {
			t.Errorf("after shutdown: %v", err)
		}
	}
}
