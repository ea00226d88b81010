package webbotauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestInitAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := Init(dir, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.ID) != 43 || k.Path != filepath.Join(dir, k.ID+".jwk") {
		t.Errorf("key %s at %s", k.ID, k.Path)
	}
	fi, _ := os.Stat(k.Path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %o, want 600", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("keys dir mode %o, want 700", di.Mode().Perm())
	}
	if _, err := Init(dir, t0); !errors.Is(err, ErrKeyExists) {
		t.Errorf("second Init: %v, want ErrKeyExists", err)
	}
	kr, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := kr.Keys()
	if len(got) != 1 || got[0].ID != k.ID || !got[0].Private.Equal(k.Private) || !got[0].Created.Equal(t0) {
		t.Fatalf("loaded %+v", got)
	}
	if s, err := kr.Signing(t0); err != nil || s.ID != k.ID {
		t.Errorf("Signing: %v %v", s, err)
	}
	if _, err := kr.Signing(t0.Add(-time.Second)); !errors.Is(err, ErrNoKey) {
		t.Errorf("Signing before creation: %v", err)
	}
	raw, _ := os.ReadFile(k.Path)
	if !strings.Contains(string(raw), `"d":`) || !strings.Contains(string(raw), `"kid": "`+k.ID) {
		t.Errorf("key file:\n%s", raw)
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	kr, created, err := LoadOrCreate(dir, t0)
	if err != nil || !created || len(kr.Keys()) != 1 {
		t.Fatalf("first: %v %v %v", kr, created, err)
	}
	kr2, created, err := LoadOrCreate(dir, t0.Add(time.Hour))
	if err != nil || created || kr2.Keys()[0].ID != kr.Keys()[0].ID {
		t.Fatalf("second: created=%v err=%v", created, err)
	}
	// A removal secret or other files next to the keys are ignored.
	os.WriteFile(filepath.Join(dir, "removal.secret"), []byte("x"), 0o600)
	if kr3, err := Load(dir); err != nil || len(kr3.Keys()) != 1 {
		t.Errorf("with other files: %v", err)
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Run("open mode", func(t *testing.T) {
		dir := t.TempDir()
		k, err := Init(dir, t0)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(k.Path, 0o644)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("Load of a 0644 key: %v", err)
		}
	})
	t.Run("test key", func(t *testing.T) {
		dir := t.TempDir()
		if err := writeKey(dir, NewKey(testKey(t), t0), false); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "test key") {
			t.Errorf("Load of the RFC test key: %v", err)
		}
	})
	for name, content := range map[string]string{
		"not json":   "{",
		"wrong kty":  `{"kty":"RSA","crv":"Ed25519"}`,
		"short d":    `{"kty":"OKP","crv":"Ed25519","d":"AAAA"}`,
		"x mismatch": `{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","d":"` + strings.Repeat("A", 43) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "x.jwk"), []byte(content), 0o600)
			if _, err := Load(dir); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// The rotation timeline of the package doc.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	old, err := Init(dir, t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(30 * 24 * time.Hour)
	r, err := Rotate(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	sw := now.Add(24 * time.Hour)
	if !r.Switch.Equal(sw) || !r.New.NotBefore.Equal(sw) || len(r.Retiring) != 1 || r.Retiring[0].ID != old.ID {
		t.Fatalf("rotation %+v", r)
	}
	retire := sw.Add(5*time.Minute + 24*time.Hour)
	if !r.Retiring[0].SignUntil.Equal(sw) || !r.Retiring[0].Retire.Equal(retire) {
		t.Errorf("old key signs until %s, retires %s", r.Retiring[0].SignUntil, r.Retiring[0].Retire)
	}
	if _, err := Rotate(dir, now.Add(time.Hour)); !errors.Is(err, ErrRotationPending) {
		t.Errorf("second rotation before the switch: %v", err)
	}
	kr, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ks []*Key) (out []string) {
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	for _, step := range []struct {
		at        time.Time
		signer    string
		published []string
	}{
		{now, old.ID, []string{old.ID, r.New.ID}},                        // new key published at once
		{sw.Add(-time.Second), old.ID, []string{old.ID, r.New.ID}},       // old signs up to the switch
		{sw, r.New.ID, []string{old.ID, r.New.ID}},                       // new signs from the switch
		{retire.Add(-time.Second), r.New.ID, []string{old.ID, r.New.ID}}, // old still published
		{retire, r.New.ID, []string{r.New.ID}},                           // then gone
	} {
		s, err := kr.Signing(step.at)
		if err != nil || s.ID != step.signer {
			t.Errorf("at %s: signer %v (%v), want %s", step.at, s, err, step.signer)
		}
		if got := strings.Join(ids(kr.Published(step.at)), ","); got != strings.Join(step.published, ",") {
			t.Errorf("at %s: published %s, want %s", step.at, got, step.published)
		}
	}
	// The next rotation after the old key retired deletes its file.
	r2, err := Rotate(dir, retire.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Removed) != 1 || r2.Removed[0] != old.Path {
		t.Errorf("removed %v, want %s", r2.Removed, old.Path)
	}
	if _, err := os.Stat(old.Path); !os.IsNotExist(err) {
		t.Errorf("retired key file still there: %v", err)
	}
	if len(r2.Retiring) != 1 || r2.Retiring[0].ID != r.New.ID {
		t.Errorf("second rotation retires %v", ids(r2.Retiring))
	}
}

func TestRotateWithoutKey(t *testing.T) {
	if _, err := Rotate(t.TempDir(), t0); !errors.Is(err, ErrNoKey) {
		t.Errorf("Rotate with no key: %v", err)
	}
}
