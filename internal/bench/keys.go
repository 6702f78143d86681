package bench

// KeySize is the length of every generated key: 16 hexadecimal digits.
const KeySize = 16

// KeyGen derives keys and values from an index, so that a run needs no
// memory for them and every run with the same seed sees the same data.
//
// Key i of the present set is the hex form of Mix64(base + 2i); key i of
// the absent set is that of Mix64(base + 2i + 1). Mix64 is a bijection on
// 64 bits, so no absent key is ever a present one, and its output is
// spread uniformly: keys in index order arrive in random key order, and
// absent keys fall between present ones, inside the ranges of the tables.
type KeyGen struct{ base uint64 }

// NewKeyGen returns the generator of seed.
func NewKeyGen(seed uint64) KeyGen { return KeyGen{base: Mix64(seed) &^ 1} }

// Mix64 is the finalizer of SplitMix64: a bijection on uint64 (xor-shifts
// and multiplications by odd constants are all invertible) with good
// avalanche.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Present appends present key i to dst.
func (g KeyGen) Present(dst []byte, i int) []byte {
	return appendHex(dst, Mix64(g.base+2*uint64(i)))
}

// Absent appends absent key i to dst.
func (g KeyGen) Absent(dst []byte, i int) []byte {
	return appendHex(dst, Mix64(g.base+2*uint64(i)+1))
}

// Sequential appends key i of a sequential load to dst: keys in index
// order arrive in key order. They are not Present's keys.
func (g KeyGen) Sequential(dst []byte, i int) []byte {
	return appendHex(dst, uint64(i))
}

// Value appends the size-byte value of key i to dst: pseudo-random bytes,
// which compression cannot shrink.
func (g KeyGen) Value(dst []byte, i, size int) []byte {
	x := Mix64(g.base + 2*uint64(i))
	for n := 0; n < size; n += 8 {
		x = Mix64(x + 0x9e3779b97f4a7c15)
		for j := 0; j < 8 && n+j < size; j++ {
			dst = append(dst, byte(x>>(8*j)))
		}
	}
	return dst
}

// Index returns the index of the key lookup i reads among n keys: uniform
// over them, in an order unrelated to the load order, the same in every
// store.
func (g KeyGen) Index(i, n int) int {
	return int(Mix64(g.base^0x5851f42d4c957f2d+uint64(i)) % uint64(n))
}

// appendHex appends the 16 lowercase hex digits of x to dst.
func appendHex(dst []byte, x uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[x>>uint(shift)&0xf])
	}
	return dst
}
