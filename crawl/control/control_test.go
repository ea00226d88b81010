package control

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
