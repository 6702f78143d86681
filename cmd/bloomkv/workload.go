package main

// keySize is the length of every generated key: 16 hexadecimal digits.
const keySize = 16

// keyGen derives keys and values from an index, so that a run needs no
// memory for them and every run with the same seed sees the same data.
//
// Key i of the present set is the hex form of mix64(base + 2i); key i of the
// absent set is that of mix64(base + 2i + 1). mix64 is a bijection on 64
// bits, so no absent key is ever a present one, and its output is spread
// uniformly: keys in index order arrive in random key order, and absent keys
// fall between present ones, inside the ranges of the tables.
type keyGen struct{ base uint64 }

func newKeyGen(seed uint64) keyGen { return keyGen{base: mix64(seed) &^ 1} }

// mix64 is the finalizer of SplitMix64: a bijection on uint64 (xor-shifts
// and multiplications by odd constants are all invertible) with good
// avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// present appends present key i to dst.
func (g keyGen) present(dst []byte, i int) []byte {
	return appendHex(dst, mix64(g.base+2*uint64(i)))
}

// absent appends absent key i to dst.
func (g keyGen) absent(dst []byte, i int) []byte {
	return appendHex(dst, mix64(g.base+2*uint64(i)+1))
}

// value appends the size-byte value of present key i to dst: pseudo-random
// bytes, which compression cannot shrink.
func (g keyGen) value(dst []byte, i, size int) []byte {
	x := mix64(g.base + 2*uint64(i))
	for n := 0; n < size; n += 8 {
		x = mix64(x + 0x9e3779b97f4a7c15)
		for j := 0; j < 8 && n+j < size; j++ {
			dst = append(dst, byte(x>>(8*j)))
		}
	}
	return dst
}

// appendHex appends the 16 lowercase hex digits of x to dst.
func appendHex(dst []byte, x uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[x>>uint(shift)&0xf])
	}
	return dst
}

// workload is what bench does to every store: load keys present keys with
// their values (and extra more during the write-heavy shape), and look up
// lookups absent keys and lookups present keys per measurement.
type workload struct {
	kg                       keyGen
	keys, valueSize, lookups int
	extra                    int // keys loaded during the write-heavy shape
}

func newWorkload(seed uint64, keys, valueSize, lookups int) *workload {
	return &workload{kg: newKeyGen(seed), keys: keys, valueSize: valueSize,
		lookups: lookups, extra: writeHeavyKeys(keys)}
}

// writeHeavyKeys is how many keys the write-heavy shape loads on top of
// keys: a quarter more, at least one batch.
func writeHeavyKeys(keys int) int { return max(keys/4, loadBatch) }

// presentIndex returns the index of the key that present lookup i reads
// among the first n keys loaded: uniform over them, in an order unrelated to
// the load order, the same in every store.
func (w *workload) presentIndex(i, n int) int {
	return int(mix64(w.kg.base^0x5851f42d4c957f2d+uint64(i)) % uint64(n))
}

// lookupKey appends the key of lookup i: absent key i, or a present key
// among the first n loaded.
func (w *workload) lookupKey(dst []byte, i, n int, present bool) []byte {
	if present {
		return w.kg.present(dst, w.presentIndex(i, n))
	}
	return w.kg.absent(dst, i)
}
