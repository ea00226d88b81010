// Package objstoretest starts a real S3-compatible server on loopback for
// tests: versitygw (github.com/versity/versitygw, Apache-2.0) with its
// posix backend in a temporary directory. .ci/run installs it with
//
//	GOBIN=<dir> go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// and sets MAPTHENET_VERSITYGW to the binary and MAPTHENET_REQUIRE_S3=1.
// Without the binary a test that needs the server skips and says why;
// with MAPTHENET_REQUIRE_S3=1 it fails instead.
package objstoretest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mapthenet/mapthenet/objstore"
)

// Credentials the server accepts (its root account).
const (
	AccessKey = "mapthenet-test"
	SecretKey = "mapthenet-test-secret"
	Bucket    = "snapshots"
)

// Server is a running versitygw on 127.0.0.1 with one bucket, Bucket.
type Server struct {
	Endpoint string // http://127.0.0.1:port

	t    testing.TB
	bin  string
	addr string
	root string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	out    syncBuffer // the server's output, for failure messages
}

// syncBuffer is a bytes.Buffer the server's output goroutines and the test
// may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Binary returns the versitygw to run: $MAPTHENET_VERSITYGW, or versitygw
// on $PATH. When there is none it skips t, or fails it under
// MAPTHENET_REQUIRE_S3=1.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("MAPTHENET_VERSITYGW")
	if bin == "" {
		bin, _ = exec.LookPath("versitygw")
	}
	if bin != "" {
		if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
			return bin
		}
	}
	msg := "no S3 server to test against: set MAPTHENET_VERSITYGW to a versitygw binary " +
		"(GOBIN=$HOME/.cache/mapthenet-versitygw go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; .ci/run does)"
	if os.Getenv("MAPTHENET_REQUIRE_S3") == "1" {
		t.Fatal(msg)
	}
	t.Skip("SKIP: " + msg)
	return ""
}

// Start starts a server with an empty bucket; it is stopped when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Endpoint: "http://" + addr, t: t, bin: bin, addr: addr, root: t.TempDir()}
	t.Cleanup(s.Stop)
	s.Restart()
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(context.Background(), Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("versitygw: make bucket: %v\n%s", err, s.output())
	}
	return s
}

// Restart starts the server again (after Stop) on the same address and
// directory, so it serves what it stored before.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("versitygw: Restart while it runs")
	}
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", AccessKey, "--secret", SecretKey, "--quiet",
		"posix", s.root)
	cmd.Stdout = &s.out
	cmd.Stderr = &s.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	// Wait until it accepts connections (it starts in well under a second).
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("versitygw exited at start: %s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw did not listen on %s within 15 s: %s", s.addr, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, as a crash or a cut power would) and
// waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

func (s *Server) output() string { return s.out.String() }

// Env is the environment Location.Open reads to reach the server.
func (s *Server) Env() func(string) string {
	env := map[string]string{
		"AWS_ACCESS_KEY_ID":     AccessKey,
		"AWS_SECRET_ACCESS_KEY": SecretKey,
		"AWS_ENDPOINT_URL_S3":   s.Endpoint,
		"AWS_REGION":            "us-east-1",
		"AWS_MAX_ATTEMPTS":      "2",
	}
	return func(k string) string { return env[k] }
}

// URL is s3://<Bucket>/<prefix>.
func (s *Server) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s", Bucket, prefix)
}

// Config is an S3Config for the bucket under prefix, with two tries per
// request (tests that break the server should not wait for ten).
func (s *Server) Config(prefix string) objstore.S3Config {
	return objstore.S3Config{
		Bucket:          Bucket,
		Prefix:          prefix,
		Endpoint:        s.Endpoint,
		AccessKeyID:     AccessKey,
		SecretAccessKey: SecretKey,
		MaxAttempts:     2,
	}
}

// Store opens the bucket under prefix with cfg's fields changed by edit
// (nil: none).
func (s *Server) Store(prefix string, edit func(*objstore.S3Config)) *objstore.S3 {
	s.t.Helper()
	cfg := s.Config(prefix)
	if edit != nil {
		edit(&cfg)
	}
	st, err := objstore.NewS3(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// Root is the server's directory: the bucket's objects are files below
// Root/Bucket.
func (s *Server) Root() string { return s.root }
