package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The full-disk test and the read-only case of the unwritable test mount a
// tmpfs of a set size, which takes CAP_SYS_ADMIN: root, as .ci/run runs the
// tests (it sets MAPTHENET_REQUIRE_MOUNT=1 then, so that a mount refused in
// CI fails rather than skips). Anyone else gets a user and mount namespace
// of the test's own where the kernel allows one (unprivileged user
// namespaces: Debian's default): the subtest runs again in a child test
// process inside it, as root of that namespace (rerunInNamespace). Where
// neither works (a container without CAP_SYS_ADMIN, user namespaces turned
// off), the subtest skips and says why.
const (
	// envBin hands the child test process the binary already built.
	envBin = "MAPTHENET_E2E_BIN"
	// envInNamespace marks the child: it does not try a namespace again.
	envInNamespace = "MAPTHENET_E2E_IN_USERNS"
	envRequire     = "MAPTHENET_REQUIRE_MOUNT"
)

// canMount reports why this process cannot mount a tmpfs (nil: it can).
func canMount() error {
	dir, err := os.MkdirTemp("", "mapthenet-mount-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		return err
	}
	return syscall.Unmount(dir, 0)
}

// needMount returns true when the test may mount a tmpfs here. Otherwise it
// runs the test again inside a user namespace (false: the child did it and
// its verdict is reported here), or skips saying why (fails under
// MAPTHENET_REQUIRE_MOUNT=1).
func needMount(t *testing.T, bin string) bool {
	t.Helper()
	err := canMount()
	if err == nil {
		return true
	}
	why := fmt.Sprintf("cannot mount a tmpfs here (%v)", err)
	if os.Getenv(envInNamespace) == "" {
		ran, nsErr := rerunInNamespace(t, bin)
		if ran {
			return false
		}
		why += fmt.Sprintf(", nor in a user namespace of its own (%v)", nsErr)
	}
	why += ": this test needs root (as .ci/run runs it) or unprivileged user namespaces (Debian: sysctl kernel.unprivileged_userns_clone=1; Ubuntu: kernel.apparmor_restrict_unprivileged_userns=0)"
	if os.Getenv(envRequire) == "1" {
		t.Fatalf("%s; %s=1 says it must run", why, envRequire)
	}
	t.Skip(why)
	return false
}

// rerunInNamespace runs t again in a child test process inside a new user
// and mount namespace, mapping the caller to root there, so that it may
// mount a tmpfs (visible to the child and what it starts only). ran: the
// child ran and its verdict is t's; otherwise err says why no namespace
// could be had.
func rerunInNamespace(t *testing.T, bin string) (ran bool, err error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		return false, err
	}
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+part+"$")
	}
	cmd := exec.Command(exe, "-test.run", strings.Join(pattern, "/"), "-test.count", "1", "-test.v")
	cmd.Dir, _ = os.Getwd()
	cmd.Env = append(os.Environ(), envBin+"="+bin, envInNamespace+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			// What clone says when user.max_user_namespaces is reached (0: off).
			err = fmt.Errorf("%w: no user namespace may be made (sysctl user.max_user_namespaces)", err)
		}
		return false, err // no user namespace for us
	}
	werr := cmd.Wait()
	t.Logf("ran again as root of a user namespace of its own (%s):\n%s", filepath.Base(exe), out.String())
	switch {
	case werr != nil:
		t.Errorf("in the user namespace: %v", werr)
	case strings.Contains(out.String(), "--- SKIP: "+t.Name()+" "):
		t.Skip("skipped in the user namespace too (the reason is in the log above)")
	case !strings.Contains(out.String(), "--- PASS: "+t.Name()+" "):
		t.Errorf("in the user namespace: %s did not run", t.Name())
	}
	return true, nil
}
