package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// buildBlock encodes keys (as internal keys at seq 1) with values "v"+key.
func buildBlock(interval int, keys ...string) []byte {
	w := blockWriter{restartInterval: interval}
	for _, k := range keys {
		w.add(base.MakeInternalKey([]byte(k), 1, base.KindSet).AppendEncoded(nil), []byte("v"+k))
	}
	return bytes.Clone(w.finish())
}

// TestBlock_RoundTrip encodes blocks with several restart intervals and
// reads them back every way, with short keys and values (one-byte entry
// lengths) and with long ones (shared prefix, suffix and value lengths of
// two-byte uvarints).
func TestBlock_RoundTrip(t *testing.T) {
	for _, prefix := range []string{"", strings.Repeat("p", 200)} {
		var keys []string
		for _, k := range []string{"a", "aa", "aab", "abc", "b", "bcd", "bce", "c", "cc", "ccc", "d"} {
			keys = append(keys, prefix+k)
		}
		for _, interval := range []int{1, 2, 3, 16} {
			t.Run(fmt.Sprintf("prefix%d/interval%d", len(prefix), interval), func(t *testing.T) {
				checkBlockRoundTrip(t, keys, interval, prefix+"e")
			})
		}
	}
}

// checkBlockRoundTrip encodes keys, sorted, and reads them back; past
// sorts after all of them.
func checkBlockRoundTrip(t *testing.T, keys []string, interval int, past string) {
	data := buildBlock(interval, keys...)
	var it bidiBlockIter
	if err := it.init(data, bytes.Compare, "test", 0); err != nil {
		t.Fatal(err)
	}
	var fwd, back []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.ikey.UserKey)+"="+string(it.val))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append([]string{string(it.ikey.UserKey) + "=" + string(it.val)}, back...)
	}
	if fmt.Sprint(fwd) != fmt.Sprint(back) || len(fwd) != len(keys) {
		t.Fatalf("forward %v, backward %v", fwd, back)
	}
	for i, k := range keys {
		if fwd[i] != k+"=v"+k {
			t.Fatalf("entry %d is %s, want %s=v%s", i, fwd[i], k, k)
		}
		if !it.SeekGE(base.MakeSearchKey([]byte(k))) || string(it.ikey.UserKey) != k {
			t.Fatalf("SeekGE(%s) at %s", k, it.ikey)
		}
		ok := it.SeekLT(base.MakeSearchKey([]byte(k)))
		if i == 0 && ok || i > 0 && (!ok || string(it.ikey.UserKey) != keys[i-1]) {
			t.Fatalf("SeekLT(%s) = %v at %s", k, ok, it.ikey)
		}
	}
	if it.SeekGE(base.MakeSearchKey([]byte(past))) || !it.SeekLT(base.MakeSearchKey([]byte(past))) {
		t.Fatal("seeks past the end")
	}
}

// TestBlock_LongSharedPrefixAtEnd reads a block whose last entry shares
// more bytes with the key before it than the block has left: versions of
// a user key of 127 bytes or more, with short values, share the key and
// a byte of the trailer (a two-byte uvarint, 128). The decoder once
// bounded the shared length by the bytes left and called the block
// corrupt.
func TestBlock_LongSharedPrefixAtEnd(t *testing.T) {
	for _, n := range []int{126, 127, 200} {
		uk := []byte(strings.Repeat("x", n))
		w := blockWriter{restartInterval: 16}
		w.add(base.MakeInternalKey(uk, 2, base.KindSet).AppendEncoded(nil), []byte("v2"))
		w.add(base.MakeInternalKey(uk, 1, base.KindSet).AppendEncoded(nil), []byte("v1"))
		var it bidiBlockIter
		if err := it.init(bytes.Clone(w.finish()), bytes.Compare, "test", 0); err != nil {
			t.Fatal(err)
		}
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, fmt.Sprintf("%d#%d=%s", len(it.ikey.UserKey), it.ikey.SeqNum(), it.val))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, fmt.Sprintf("%d#%d=%s", len(it.ikey.UserKey), it.ikey.SeqNum(), it.val))
		}
		want := fmt.Sprintf("[%[1]d#2=v2 %[1]d#1=v1 %[1]d#1=v1 %[1]d#2=v2]", n)
		if it.err != nil || fmt.Sprint(got) != want {
			t.Fatalf("key of %d bytes: read %v (err %v), want %s", n, got, it.err, want)
		}
	}
}

// TestBlock_Empty reads a block with no entries.
func TestBlock_Empty(t *testing.T) {
	var it bidiBlockIter
	if err := it.init(buildBlock(16), bytes.Compare, "test", 0); err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Last() || it.SeekGE(base.MakeSearchKey(nil)) || it.SeekLT(base.MakeSearchKey([]byte("z"))) {
		t.Fatal("an empty block has an entry")
	}
}

// TestBlock_Bad feeds damaged blocks to the iterator: each must give
// ErrCorruption, never panic.
func TestBlock_Bad(t *testing.T) {
	good := buildBlock(2, "a", "ab", "abc", "b")
	restarts := func(b []byte, n uint32, offs ...uint32) []byte {
		b = bytes.Clone(b)
		for _, o := range offs {
			b = binary.LittleEndian.AppendUint32(b, o)
		}
		return binary.LittleEndian.AppendUint32(b, n)
	}
	entries := good[:len(good)-12] // two restarts and the count
	tests := []struct {
		name string
		data []byte
	}{
		{"short", []byte{1, 0}},
		{"restart count too large", restarts(nil, 5)},
		{"restarts without entries", restarts(nil, 1, 0)},
		{"entries without restarts", restarts(entries, 0)},
		{"first restart not 0", restarts(entries, 2, 1, 5)},
		{"restart out of range", restarts(entries, 2, 0, 1000)},
		{"restart mid-entry", restarts(entries, 2, 0, 3)},
		{"first entry with shared prefix", restarts(append([]byte{1, 8, 0}, "abcdefgh"...), 1, 0)},
		{"restart with shared prefix", restarts(entries, 2, 0, uint32(bytes.Index(entries, []byte("\x01\x0a"))))},
		{"length overruns", restarts([]byte{0, 50, 0, 'a'}, 1, 0)},
		{"bad varint", restarts(bytes.Repeat([]byte{0xff}, 12), 1, 0)},
		{"short internal key", restarts([]byte{0, 2, 0, 'a', 'b'}, 1, 0)},
		{"unknown kind", restarts(append([]byte{0, 8, 0}, 9, 0, 0, 0, 0, 0, 0, 0), 1, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := exerciseBlock(tt.data)
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("got %v, want corruption", err)
			}
		})
	}
}

// exerciseBlock runs every move over a block and returns the first error.
func exerciseBlock(data []byte) error {
	var it bidiBlockIter
	if err := it.init(data, bytes.Compare, "test", 0); err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
	}
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	for _, k := range []string{"", "a", "abc", "b", "zz"} {
		it.SeekGE(base.MakeSearchKey([]byte(k)))
		it.SeekLT(base.MakeSearchKey([]byte(k)))
	}
	return it.err
}

// TestBlock_RandomMoves mixes every move of a block iterator at random
// over blocks of random keys and restart intervals, comparing each
// position with the sorted keys: Prev within a restart interval serves
// entries from the interval's cache, and Next, seeks and Last must agree
// with it wherever they interleave. It prints its seed.
func TestBlock_RandomMoves(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := 0; round < 50; round++ {
		keys := randomBlockKeys(rng, 1+rng.IntN(80))
		interval := 1 + rng.IntN(20)
		var it bidiBlockIter
		if err := it.init(buildBlock(interval, keys...), bytes.Compare, "test", 0); err != nil {
			t.Fatal(err)
		}
		pos := -1 // the model: an index into keys, or -1 / len(keys) off either end
		for move := 0; move < 300; move++ {
			name, ok := randomBlockMove(rng, &it, keys, &pos)
			valid := pos >= 0 && pos < len(keys)
			if ok != valid || it.err != nil {
				t.Fatalf("round %d (interval %d), move %d %s: returned %v, want %v (err %v)", round, interval, move, name, ok, valid, it.err)
			}
			if valid && (string(it.ikey.UserKey) != keys[pos] || string(it.val) != "v"+keys[pos]) {
				t.Fatalf("round %d (interval %d), move %d %s: at %s=%s, want %s", round, interval, move, name, it.ikey.UserKey, it.val, keys[pos])
			}
		}
	}
}

// randomBlockKeys returns n distinct sorted keys sharing prefixes of
// random lengths.
func randomBlockKeys(rng *rand.Rand, n int) []string {
	set := map[string]bool{}
	for len(set) < n {
		set[strings.Repeat("k", rng.IntN(3)*40)+fmt.Sprintf("%04d", rng.IntN(5000))] = true
	}
	keys := make([]string, 0, n)
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// randomBlockMove makes one random move on it and on the model position
// pos over keys, and returns the move's name and result.
func randomBlockMove(rng *rand.Rand, it *bidiBlockIter, keys []string, pos *int) (string, bool) {
	valid := *pos >= 0 && *pos < len(keys)
	switch r := rng.IntN(10); {
	case r == 0:
		*pos = 0
		return "First", it.First()
	case r == 1:
		*pos = len(keys) - 1
		return "Last", it.Last()
	case r == 2 || r == 3:
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(2) == 0 {
			k += "0" // between keys
		}
		i, _ := slices.BinarySearch(keys, k)
		if r == 2 {
			*pos = i
			return "SeekGE(" + k + ")", it.SeekGE(base.MakeSearchKey([]byte(k)))
		}
		*pos = i - 1
		return "SeekLT(" + k + ")", it.SeekLT(base.MakeSearchKey([]byte(k)))
	case r < 6:
		if valid {
			*pos++
		}
		return "Next", it.Next()
	default:
		if valid {
			*pos--
		}
		return "Prev", it.Prev()
	}
}
