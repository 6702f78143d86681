package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// This file ports the memtable scenarios of LevelDB's table_test.cc
// Harness (MemTableTest and the Harness run over a memtable) and of
// goleveldb's memdb tests: keys of unusual shapes, checked against the
// sorted model with Get and random iterator moves within random bounds.

// harnessKeys returns user keys of one shape.
func harnessKeys(rng *rand.Rand, shape string) [][]byte {
	var ks [][]byte
	switch shape {
	case "empty":
		// The empty key, and keys whose 8-byte summaries tie with it
		// (KeyPrefix pads with zeros).
		ks = [][]byte{{}, {0}, {0, 0}, make([]byte, 8), make([]byte, 9), []byte("a")}
	case "binary":
		for range 300 {
			k := make([]byte, rng.IntN(20))
			for i := range k {
				k[i] = []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}[rng.IntN(6)]
			}
			ks = append(ks, k)
		}
	case "lastbyte":
		// Keys differing only in the last byte, of lengths around the
		// summary's 8 bytes and the slot rooms' 16-byte steps up to 64.
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 300} {
			p := bytes.Repeat([]byte{'p'}, n-1)
			for range 8 {
				ks = append(ks, append(slices.Clip(p), byte(rng.IntN(256))))
			}
		}
	case "long":
		p := bytes.Repeat([]byte{'k'}, 64<<10)
		for range 20 {
			ks = append(ks, append(slices.Clip(p[:len(p)-rng.IntN(100)]), byte(rng.IntN(256))))
		}
	case "versions":
		ks = [][]byte{[]byte("a"), []byte("a\x00"), []byte("b")}
	}
	return ks
}

// harnessSeekKey returns a key to seek to or bound by, near one of md's
// (itertest.NearKey).
func harnessSeekKey(rng *rand.Rand, md model) []byte {
	return itertest.NearKey(rng, md[rng.IntN(len(md))].key.UserKey)
}

// TestMemTable_Harness adds keys of each shape, with many versions for
// the "versions" shape, values of 0 bytes, small and over 64 KiB (more
// than an arena chunk's share), in random, ascending or descending
// order through one Inserter, and checks Get and
// iterator moves against the model, under the bytewise comparer (keys
// summarized by their first 8 bytes) and one the table cannot summarize.
func TestMemTable_Harness(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, shape := range []string{"empty", "binary", "lastbyte", "long", "versions"} {
		for _, cmp := range []*Comparer{nil, wrappedBytewise(nil)} {
			for _, order := range []string{"random", "ascending", "descending"} {
				t.Run(fmt.Sprintf("%s/bytewise=%v/%s", shape, cmp == nil, order), func(t *testing.T) {
					m, md := New(cmp), harnessModel(rng, harnessKeys(rng, shape), shape == "versions")
					harnessAdd(t, rng, m, md, order)
					checkHarness(t, rng, m, md)
				})
			}
		}
	}
}

// harnessAdd adds md's entries to m through one Inserter, in random
// order or in internal-key order (the splice shortcut of ascending runs)
// or its reverse.
func harnessAdd(t *testing.T, rng *rand.Rand, m *MemTable, md model, order string) {
	t.Helper()
	idx := rng.Perm(len(md))
	switch order {
	case "ascending":
		slices.Sort(idx)
	case "descending":
		slices.Sort(idx)
		slices.Reverse(idx)
	}
	var ins Inserter
	for _, i := range idx {
		if err := ins.Add(m, md[i].key, md[i].value); err != nil {
			t.Fatal(err)
		}
	}
}

// harnessModel returns the entries of keys, sorted: one version of each,
// or up to 100 with versions.
func harnessModel(rng *rand.Rand, keys [][]byte, versions bool) model {
	var md model
	seq := base.SeqNum(1)
	for _, k := range keys {
		n := 1
		if versions {
			n = 1 + rng.IntN(100)
		}
		for range n {
			kind, v := base.KindSet, fmt.Appendf(nil, "v%d", seq)
			switch rng.IntN(10) {
			case 0:
				kind, v = base.KindDelete, nil
			case 1:
				v = []byte{}
			case 2:
				v = bytes.Repeat([]byte{byte(seq)}, 64<<10+rng.IntN(10))
			}
			md = append(md, entry{base.MakeInternalKey(k, seq, kind), v})
			seq++
		}
	}
	slices.SortFunc(md, func(a, b entry) int { return base.InternalCompare(bytes.Compare, a.key, b.key) })
	return slices.CompactFunc(md, func(a, b entry) bool { return bytes.Equal(a.key.UserKey, b.key.UserKey) && !versions })
}

func checkHarness(t *testing.T, rng *rand.Rand, m *MemTable, md model) {
	t.Helper()
	if m.Len() != len(md) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(md))
	}
	for range 300 {
		k, seq := harnessSeekKey(rng, md), base.SeqNum(rng.IntN(len(md)+2))
		v, kind, found := m.Get(k, seq)
		want, wantFound := md.get(k, seq)
		if found != wantFound || (found && (kind != want.key.Kind() || !bytes.Equal(v, want.value))) {
			t.Fatalf("Get(%.40q, %d) = %.20q, %s, %v; want %s %.20q", k, seq, v, kind, found, want.key, want.value)
		}
	}
	for round := range 30 {
		var lower, upper []byte
		if round%2 == 1 {
			lower = harnessSeekKey(rng, md)
		}
		if round%4 >= 2 {
			upper = harnessSeekKey(rng, md)
		}
		checkIterOps(t, rng, m.NewIter(lower, upper), md.within(lower, upper), func() []byte { return harnessSeekKey(rng, md) })
	}
}
