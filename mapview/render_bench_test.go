package mapview

import (
	"io"
	"testing"
)

// go test ./mapview -run '^$' -bench . -benchtime 1x

func BenchmarkLoad200k(b *testing.B) {
	rows, words := genWeb(200_000, 1)
	s := writeSnapshot(b, b.TempDir(), rows, words)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Load(s, DefaultWords); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWritePNG200k(b *testing.B) {
	m := genMap(200_000, 1)
	b.ResetTimer()
	for b.Loop() {
		if err := WritePNG(io.Discard, m, PNGOptions{Width: 1600, Height: 1200, Labels: 40}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteHTML200k(b *testing.B) {
	m := genMap(200_000, 1)
	b.ResetTimer()
	for b.Loop() {
		if err := WriteHTML(io.Discard, m, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
