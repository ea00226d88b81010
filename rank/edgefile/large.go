package edgefile

import "github.com/mapthenet/mapthenet/internal/hugepage"

// makeLarge is make([]T, n, c) backed by huge pages (see package hugepage).
func makeLarge[T any](n, c int) []T { return hugepage.Make[T](n, c) }
