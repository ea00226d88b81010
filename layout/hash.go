package layout

import "math"

// Key is the stable key of a node for seeding its initial position and
// jitter: a 64-bit FNV-1a hash of its name. It is the same on every
// machine and for every run (unlike hash/maphash).
func Key(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return mix(h)
}

// mix is SplitMix64's finaliser: it spreads every input bit over the output.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// unit maps 53 bits of h to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// square is a point uniform in [-r, r]² drawn from key and seed.
func square(key, seed uint64, r float64) (x, y float64) {
	h := mix(key ^ mix(seed+0x51ed2701))
	return (2*unit(h) - 1) * r, (2*unit(mix(h)) - 1) * r
}

// disk is an offset uniform in the disk of radius r drawn from key and
// seed: the jitter that keeps nodes placed at one spot apart.
func disk(key, seed uint64, r float64) (dx, dy float64) {
	h := mix(key ^ mix(seed+0x2545f491))
	a := 2 * math.Pi * unit(h)
	d := r * math.Sqrt(unit(mix(h)))
	return d * math.Cos(a), d * math.Sin(a)
}
