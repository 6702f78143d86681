package bloompolicy_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// This file ports the scenarios of LevelDB's util/bloom_test.cc, RocksDB's
// util/bloom_test.cc and Pebble's bloom/bloom_test.go to bloomkv's API.

// le32 is the key of LevelDB's and Pebble's tests: i as 4 bytes,
// little-endian.
func le32(i int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(i)) }

// nextLength steps as LevelDB's NextLength: 1..10 by 1, to 100 by 10, to
// 1000 by 100, to 10000 by 1000.
func nextLength(n int) int {
	switch {
	case n < 10:
		return n + 1
	case n < 100:
		return n + 10
	case n < 1000:
		return n + 100
	}
	return n + 1000
}

// TestBloom_VaryingLengths is LevelDB's and Pebble's VaryingLengths (and
// RocksDB's FullVaryingLengths): filters of 1 to 10000 keys at 10 bits per
// key (and at a 1% target) find every key, stay within the size bound, keep
// each rate at most 2% over 10000 absent keys, and at most one filter in
// six is "mediocre" (over 1.25%). The keys are fixed, so the outcome is
// too: this is a regression test, not a statistical one.
func TestBloom_VaryingLengths(t *testing.T) {
	for _, p := range []*bloompolicy.Bloom{mustBits(t, 10), mustNew(t, 0.01)} {
		good, mediocre := 0, 0
		for n := 1; n <= 10000; n = nextLength(n) {
			w := p.NewWriter()
			for i := range n {
				w.AddKey(le32(i))
			}
			filter := w.Finish(nil)
			// LevelDB allows n*10/8 + 40 bytes; a blocked filter rounds up
			// to a whole 64-byte line and adds a trailer byte.
			if limit := n*10/8 + 65; len(filter) > limit {
				t.Errorf("%v: %d keys take %d bytes; want at most %d", p, n, len(filter), limit)
			}
			for i := range n {
				if !p.MayContain(filter, le32(i)) {
					t.Fatalf("%v: %d keys: key %d not found", p, n, i)
				}
			}
			fp := 0
			for i := range 10000 {
				if p.MayContain(filter, le32(i+1_000_000_000)) {
					fp++
				}
			}
			rate := float64(fp) / 10000
			if rate > 0.02 {
				t.Errorf("%v: %d keys: false-positive rate %.2f%%; want at most 2%%", p, n, 100*rate)
			}
			if rate > 0.0125 {
				mediocre++
			} else {
				good++
			}
		}
		t.Logf("%v: %d good filters, %d mediocre", p, good, mediocre)
		if good == 0 || mediocre > good/5 {
			t.Errorf("%v: %d mediocre filters, %d good; want at most one mediocre in six", p, mediocre, good)
		}
	}
}

// TestBloom_Small is Pebble's TestSmallBloomFilter: a filter of two keys
// finds them and not two others (fixed keys, so a fixed outcome).
func TestBloom_Small(t *testing.T) {
	p := mustBits(t, 10)
	w := p.NewWriter()
	w.AddKey([]byte("hello"))
	w.AddKey([]byte("world"))
	filter := w.Finish(nil)
	for k, want := range map[string]bool{"hello": true, "world": true, "x": false, "foo": false} {
		if got := p.MayContain(filter, []byte(k)); got != want {
			t.Errorf("MayContain(%q) = %v; want %v", k, got, want)
		}
	}
}

// TestBloom_CorruptFilters ports RocksDB's corrupt-filter checks: a
// trailer that names too many probes or a reserved layout, every
// truncation, every byte of the filter replaced, and random bytes: none
// may panic; bytes that do not decode answer true; and a well-formed
// filter never loses an added key.
func TestBloom_CorruptFilters(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	p := mustNew(t, 0.01)
	for _, n := range []int{1, 5, 300, 5000} {
		w := p.NewWriter()
		for i := range n {
			w.AddKey(le32(i))
		}
		filter := w.Finish(nil)
		last := len(filter) - 1
		layout := filter[last] &^ 63
		// Probes beyond what writers use are still a filter, which must
		// find its keys; zero probes or a reserved layout do not decode.
		for _, tag := range []byte{layout | 33, layout | 63, layout, 0x80 | filter[last]&63, 0xc0 | filter[last]&63} {
			g := append([]byte(nil), filter...)
			g[last] = tag
			_, err := bloompolicy.Inspect(g)
			for i := range n {
				if !p.MayContain(g, le32(i)) && (err != nil || tag&63 <= 32) {
					t.Fatalf("%d keys, trailer %#02x: key %d not found", n, tag, i)
				}
			}
			if err != nil && !p.MayContain(g, []byte("absent")) {
				t.Errorf("%d keys, trailer %#02x: undecodable (%v) yet answers false", n, tag, err)
			}
		}
		for cut := range len(filter) {
			p.MayContain(filter[:cut], le32(0))
			p.MayContain(filter[cut:], le32(0))
		}
		for range 2000 {
			g := append([]byte(nil), filter...)
			g[r.IntN(len(g))] = byte(r.Uint32())
			p.MayContain(g, le32(r.IntN(2*n)))
		}
	}
	for range 20000 {
		g := make([]byte, r.IntN(200))
		for i := range g {
			g[i] = byte(r.Uint32())
		}
		p.MayContain(g, le32(r.Int()))
	}
}

// TestBloom_EmptyAndDuplicateKeysLarge adds the empty key and keys repeated
// out of order to filters of both layouts: all are found, and repeats only
// make the filter larger, never its rate worse.
func TestBloom_EmptyAndDuplicateKeysLarge(t *testing.T) {
	p := mustNew(t, 0.01)
	for _, n := range []int{3, 200, 20000} {
		w := p.NewWriter()
		w.AddKey(nil)
		for range 2 {
			for i := range n {
				w.AddKey(le32(i))
			}
			w.AddKey([]byte{})
		}
		filter := w.Finish(nil)
		for _, k := range [][]byte{nil, le32(0), le32(n - 1)} {
			if !p.MayContain(filter, k) {
				t.Errorf("%d keys twice and the empty key: %x not found", n, k)
			}
		}
		info, err := bloompolicy.Inspect(filter)
		if err != nil || info.EstimatedFPR > 0.01 {
			t.Errorf("%d keys twice: %+v, %v; want a rate within 1%%", n, info, err)
		}
	}
}

// TestFPR_Prefixes builds per-block filters over key prefixes, as a table
// under a comparer with a Split does: 2000 blocks of 20 users with three
// fields each, every filter holding the 20 users' prefixes; the prefixes
// of absent users are the queries. The checks are those of shapes_test.go.
func TestFPR_Prefixes(t *testing.T) {
	base := testseed.Seed(t) % (1 << 30)
	prefixOf := func(user uint64) []byte { return fmt.Appendf(nil, "user/%d/", user) }
	for _, sp := range shapePolicies(t)[:3] {
		var c shapeCell
		var rates []float64
		w := sp.p.NewWriter()
		user := base
		for range 2000 {
			for u := range uint64(20) {
				for _, field := range []string{"email", "name", "plan"} {
					key := fmt.Appendf(nil, "user/%d/%s", user+u, field)
					w.AddKey(key[:splits.User(key)])
				}
			}
			filter := w.Finish(nil)
			for u := range uint64(20) {
				if !sp.p.MayContain(filter, prefixOf(user+u)) {
					t.Fatalf("%s: prefix %s not found", sp.name, prefixOf(user+u))
				}
			}
			user += 20
			info, _ := bloompolicy.Inspect(filter)
			for range 100 {
				if sp.p.MayContain(filter, prefixOf(user)) {
					c.falsePositives++
				}
				user++
			}
			c.queries += 100
			c.mu += 100 * info.EstimatedFPR
			c.variance += 100 * info.EstimatedFPR * (1 - info.EstimatedFPR)
			rates = append(rates, info.EstimatedFPR)
		}
		c.rate, c.rateSE = meanSE(rates)
		checkShapeCell(t, "prefix/n=20", sp, c, true)
	}
}
