package mapview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func testMap(t testing.TB, n int) *Map {
	t.Helper()
	rows, words := genWeb(n, 1)
	s := writeSnapshot(t, t.TempDir(), rows, words)
	m, err := Load(s, DefaultWords)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWritePNG(t *testing.T) {
	m := testMap(t, 800)
	for _, tc := range []struct {
		name          string
		width, height int
		color         ColorBy
	}{
		// Small pictures: make test runs under -race, which slows pixel
		// loops twentyfold.
		{"tier", 800, 600, ColorTier},
		{"tld", 400, 400, ColorTLD},
		{"operator", 300, 450, ColorOperator},
		{"small", MinSide, MinSide, ColorTier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := PNGOptions{Width: tc.width, Height: tc.height, Color: tc.color, Labels: 30}
			if err := WritePNG(&buf, m, o); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != tc.width || b.Dy() != tc.height {
				t.Errorf("size %v, want %dx%d", b, tc.width, tc.height)
			}
			if n := inkPixels(img); n < tc.width*tc.height/100 {
				t.Errorf("only %d pixels differ from the background", n)
			}
			// Deterministic: the same map and options, the same bytes.
			if tc.name == "small" {
				var again bytes.Buffer
				if err := WritePNG(&again, m, o); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), again.Bytes()) {
					t.Error("two renderings of one map differ")
				}
			}
			checkGolden(t, "png-"+tc.name+".sha256", buf.Bytes())
			if *update {
				os.WriteFile(filepath.Join("testdata", "png-"+tc.name+".png"), buf.Bytes(), 0o644)
			}
		})
	}
}

// checkGolden compares the picture's hash with testdata/<name>. Only on
// amd64: other architectures fuse multiply-adds, which moves antialiased
// edges by a shade. Rewrite with -update after a deliberate change, and
// look at testdata/png-*.png then.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	sum := sha256.Sum256(got)
	hash := hex.EncodeToString(sum[:])
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(hash+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOARCH != "amd64" {
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if strings.TrimSpace(string(want)) != hash {
		t.Errorf("picture hash %s, golden %s: if the change is deliberate, go test ./mapview -run TestWritePNG -update and look at testdata/png-*.png", hash, strings.TrimSpace(string(want)))
	}
}

// inkPixels counts pixels that are not the background colour.
func inkPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	br, bg, bb, _ := background.RGBA()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r != br || g != bg || bl != bb {
				n++
			}
		}
	}
	return n
}
