package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
)

// This file ports the scenarios of LevelDB's table_test.cc Harness (and
// of the table tests of goleveldb and Pebble) to bloomkv: tables built
// under many restart intervals and block sizes, from keys of unusual
// shapes, are checked against a sorted model with Get and with random
// mixes of First, Last, SeekGE, SeekLT, Next and Prev, exhausted at both
// ends, within random bounds. The code is bloomkv's own; the model
// (iterModel, modelGet) is reader_test.go's.

// harnessShape makes the user keys of one harness table.
type harnessShape struct {
	name string
	keys func(rng *rand.Rand) [][]byte
}

var harnessShapes = []harnessShape{
	// The empty key is a key like any other (LevelDB's "EmptyKey").
	{"empty", func(rng *rand.Rand) [][]byte {
		return [][]byte{{}, {0}, []byte("a"), []byte("ab"), []byte("b")}
	}},
	// Keys of 0x00 and 0xff bytes: separators and successors meet bytes
	// that cannot be incremented, and key prefixes padded with zeros.
	{"binary", func(rng *rand.Rand) [][]byte {
		var ks [][]byte
		for range 150 {
			k := make([]byte, rng.IntN(12))
			for i := range k {
				k[i] = []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}[rng.IntN(6)]
			}
			ks = append(ks, k)
		}
		return ks
	}},
	// Keys that differ only in their last byte, after a shared prefix of
	// any length up to a few hundred bytes (varint lengths of 2 bytes).
	{"lastbyte", func(rng *rand.Rand) [][]byte {
		var ks [][]byte
		for range 6 {
			p := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(300))
			for range 30 {
				ks = append(ks, append(slices.Clip(p), byte(rng.IntN(256))))
			}
		}
		return ks
	}},
	// Keys of 64 KiB and more, sharing most of their bytes.
	{"long", func(rng *rand.Rand) [][]byte {
		p := bytes.Repeat([]byte{'k'}, 64<<10+rng.IntN(1000))
		var ks [][]byte
		for range 12 {
			k := append(slices.Clip(p[:len(p)-rng.IntN(200)]), byte(rng.IntN(256)), byte(rng.IntN(256)))
			ks = append(ks, k)
		}
		return append(ks, []byte("short"), p)
	}},
	// Few user keys, each with many versions: versions straddle blocks.
	{"versions", func(rng *rand.Rand) [][]byte {
		return [][]byte{[]byte("a"), []byte("m"), []byte("m\x00"), []byte("z")}
	}},
}

// harnessEntries returns the table entries of keys: each user key once,
// with one version, or 1-200 versions for the "versions" shape; values of
// 0 bytes, small, or (one in 32) 64 KiB and more.
func harnessEntries(rng *rand.Rand, shape string, keys [][]byte) []testEntry {
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	var entries []testEntry
	for _, k := range keys {
		versions := 1
		if shape == "versions" {
			versions = 1 + rng.IntN(200)
		}
		seq := base.SeqNum(1000)
		for range versions {
			kind, val := base.KindSet, harnessValue(rng)
			if rng.IntN(6) == 0 {
				kind, val = base.KindDelete, nil
			}
			entries = append(entries, testEntry{base.MakeInternalKey(k, seq, kind), val})
			seq -= base.SeqNum(1 + rng.IntN(3))
		}
	}
	return entries
}

func harnessValue(rng *rand.Rand) []byte {
	switch rng.IntN(32) {
	case 0, 1, 2, 3:
		return []byte{}
	case 4:
		return bytes.Repeat([]byte{byte(rng.IntN(256))}, 64<<10+rng.IntN(100))
	}
	return fmt.Appendf(nil, "v%d", rng.IntN(1e6))
}

// harnessSeekKey returns a key to seek to or bound by, near one of the
// table's (itertest.NearKey).
func harnessSeekKey(rng *rand.Rand, entries []testEntry) []byte {
	return itertest.NearKey(rng, entries[rng.IntN(len(entries))].key.UserKey)
}

// TestHarness_Table builds tables of every key shape under restart
// intervals of 1, 2, 16 and more than any block holds, and blocks of 1
// byte (one entry each), 256 bytes and 4 MiB (one block for the table),
// compressed or not, with or without filters, and checks Get and random iterator moves against the
// model, then Reader.Check.
func TestHarness_Table(t *testing.T) {
	rng := seedRNG(t)
	for _, shape := range harnessShapes {
		entries := harnessEntries(rng, shape.name, shape.keys(rng))
		for _, interval := range []int{1, 2, 16, 1 << 20} {
			for _, blockSize := range []int{1, 256, 4 << 20} {
				if testing.Short() && rng.IntN(4) > 0 {
					continue // a quarter of the configurations, at random
				}
				compression := []Compression{NoCompression, SnappyCompression}[rng.IntN(2)]
				policy := testPolicies(t)[rng.IntN(3)]
				name := fmt.Sprintf("%s/restart=%d/block=%d/%s/%s", shape.name, interval, blockSize, compression, policyName(policy))
				t.Run(name, func(t *testing.T) {
					opts := WriterOptions{BlockSize: blockSize, BlockRestartInterval: interval, Compression: compression, FilterPolicy: policy}
					data := buildBytes(t, entries, opts)
					checkHarnessScans(t, openTable(t, data, ReaderOptions{}), entries)
					r := openTable(t, data, ReaderOptions{Cache: NewCache(32 << 20), Filters: filters(policy)})
					checkHarnessTable(t, rng, r, entries)
				})
			}
		}
	}
}

// checkHarnessScans scans r, which has no block cache, forward and
// backward (reading ahead once the scan has read a few blocks) and with
// a compaction iterator, and checks each scan returns entries.
func checkHarnessScans(t *testing.T, r *Reader, entries []testEntry) {
	t.Helper()
	for _, forward := range []bool{true, false} {
		got, err := scanEntries(t, r, forward)
		if err != nil {
			t.Fatal(err)
		}
		requireEntries(t, got, entries)
	}
	got, err := scanCompaction(t, r, new(Iter))
	if err != nil {
		t.Fatal(err)
	}
	requireEntries(t, got, entries)
}

// checkHarnessTable checks r, written from entries, against the model.
func checkHarnessTable(t *testing.T, rng *rand.Rand, r *Reader, entries []testEntry) {
	t.Helper()
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		key := harnessSeekKey(rng, entries)
		seq := base.SeqNum(990 + rng.IntN(20))
		want, wantFound := modelGet(entries, key, seq)
		v, kind, found, err := r.Get(key, seq, nil)
		if err != nil || found != wantFound || found && (kind != want.key.Kind() || !bytes.Equal(v, want.value)) {
			t.Fatalf("Get(%q, %d) = %.20q %v %v %v, want %.20q %v %v", key, seq, v, kind, found, err, want.value, want.key.Kind(), wantFound)
		}
	}
	for round := range 20 {
		var lower, upper []byte
		if round%4 == 1 || round%4 == 3 {
			lower = harnessSeekKey(rng, entries)
		}
		if round%4 >= 2 {
			upper = harnessSeekKey(rng, entries)
		}
		m := newIterModel(entries, lower, upper)
		it, err := r.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			t.Fatal(err)
		}
		for step := range 60 {
			op, got, want := m.step(rng, it, func() []byte { return harnessSeekKey(rng, entries) })
			if got != want {
				t.Fatalf("round %d step %d, bounds [%.40q, %.40q): %.60s gave %.200s, want %.200s", round, step, lower, upper, op, got, want)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
