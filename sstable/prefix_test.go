package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/cockroachdb/pebble/vfs"
)

// greedySlashComparer splits as itertest.SlashComparer does, but its
// Separator returns the largest separator it can find, just below b: the
// kind that, without the writer's care, lands a seek for b's prefix on a
// block that holds none of it while the next block does.
func greedySlashComparer() *base.Comparer {
	c := itertest.SlashComparer()
	c.Name = "test.greedy"
	c.Separator = func(dst, a, b []byte) []byte {
		if n := len(b); n > 0 && b[n-1] > 0 {
			k := append(append(dst, b[:n-1]...), b[n-1]-1)
			if bytes.Compare(a, k[len(dst):]) < 0 {
				return k
			}
		}
		return append(dst, a...)
	}
	return c
}

// TestTableIter_SeekPrefixGE_Model checks SeekPrefixGE against the sorted
// keys it was built from: when a key of the prefix lies at or after the
// seek key, the seek lands on the first key at or after it, as SeekGE
// does; otherwise it lands nowhere or on a key of another prefix. Tiny
// blocks and a greedy separator put prefixes across block boundaries.
// The last case writes the table without the Split, so that its
// separators are not cut below each new prefix, and reads it with the
// Split through prefix filters that BuildFilter built, as a store that
// caps its filter memory does.
func TestTableIter_SeekPrefixGE_Model(t *testing.T) {
	rng := seedRNG(t)
	noSplit := *greedySlashComparer()
	noSplit.Split, noSplit.SplitName = nil, ""
	for _, tc := range []struct {
		name        string
		write, read *base.Comparer
		built       bool
	}{
		{"slash", itertest.SlashComparer(), itertest.SlashComparer(), false},
		{"greedy", greedySlashComparer(), greedySlashComparer(), false},
		{"greedy-built", &noSplit, greedySlashComparer(), true},
	} {
		var keys []string
		for i := 0; i < 400; i++ {
			keys = append(keys, fmt.Sprintf("%c%c/%d", 'a'+rng.IntN(6), 'a'+rng.IntN(6), rng.IntN(20)))
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		var entries []testEntry
		for _, k := range keys {
			entries = append(entries, testEntry{base.MakeInternalKey([]byte(k), 1, base.KindSet), []byte(k)})
		}
		policy := hashSetPolicy{}
		data := buildBytes(t, entries, WriterOptions{BlockSize: 48, Comparer: tc.write, FilterPolicy: policy})
		r := openTable(t, data, ReaderOptions{Comparer: tc.read, Filters: filters(policy)})
		if tc.built {
			if r.HasFilter() {
				t.Fatalf("%s: the table's own filter, of whole keys, is usable under a Split", tc.name)
			}
			f, err := r.BuildFilter(policy)
			if err != nil {
				t.Fatal(err)
			}
			r.HoldFilter(f)
		}
		var st LookupStats
		it, err := r.NewIter(&IterOptions{Stats: &st})
		if err != nil {
			t.Fatal(err)
		}
		for _, seek := range keys {
			checkPrefixSeek(t, tc.read, it, keys, seek)
		}
		for i := 0; i < 2000; i++ {
			seek := fmt.Sprintf("%c%c/%d", 'a'+rng.IntN(7), 'a'+rng.IntN(7), rng.IntN(25))
			checkPrefixSeek(t, tc.read, it, keys, seek)
		}
		if st.FilterNegatives == 0 || st.FilterTruePositives == 0 {
			t.Errorf("%s: stats %+v: the seeks should meet both verdicts", tc.name, st)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// checkPrefixSeek seeks it to seek within seek's prefix and checks where it
// lands against the sorted keys.
func checkPrefixSeek(t *testing.T, cmp *base.Comparer, it base.PrefixIterator, keys []string, seek string) {
	t.Helper()
	prefix, err := cmp.Prefix([]byte(seek))
	if err != nil {
		t.Fatal(err)
	}
	ok := it.SeekPrefixGE(prefix, []byte(seek))
	i, _ := slices.BinarySearch(keys, seek)
	wantKey := i < len(keys) && cmp.HasPrefix([]byte(keys[i]), prefix)
	switch {
	case it.Error() != nil:
		t.Fatalf("%s: SeekPrefixGE(%s): %v", cmp.Name, seek, it.Error())
	case wantKey && (!ok || string(it.Key().UserKey) != keys[i]):
		t.Fatalf("%s: SeekPrefixGE(%s) = %v %s, want %s", cmp.Name, seek, ok, it.Key().UserKey, keys[i])
	case !wantKey && ok && cmp.HasPrefix(it.Key().UserKey, prefix):
		t.Fatalf("%s: SeekPrefixGE(%s) landed on %s, of a prefix that has no key >= %s", cmp.Name, seek, it.Key().UserKey, seek)
	case ok && string(it.Key().UserKey) != keys[i]:
		t.Fatalf("%s: SeekPrefixGE(%s) landed on %s, want %s or nothing", cmp.Name, seek, it.Key().UserKey, keys[i])
	}
}

// TestWriter_SplitWithoutName checks that a comparer with a Split but no
// SplitName is refused: its filters could not be told from whole-key ones.
func TestWriter_SplitWithoutName(t *testing.T) {
	cmp := itertest.SlashComparer()
	cmp.SplitName = ""
	_, err := writeBytes([]testEntry{{base.MakeInternalKey([]byte("a/1"), 1, base.KindSet), nil}}, WriterOptions{Comparer: cmp})
	if err == nil {
		t.Fatal("writing under a Split without a name succeeded")
	}
	data := buildBytes(t, []testEntry{{base.MakeInternalKey([]byte("a/1"), 1, base.KindSet), nil}}, WriterOptions{})
	if _, err := openBytes(data, ReaderOptions{Comparer: cmp}); err == nil {
		t.Fatal("reading under a Split without a name succeeded")
	}
}

// badSlashComparer splits as itertest.SlashComparer does, but cuts keys
// that start with "bad" past their end.
func badSlashComparer() *base.Comparer {
	c := itertest.SlashComparer()
	c.Split = func(k []byte) int {
		if bytes.HasPrefix(k, []byte("bad")) {
			return len(k) + 5
		}
		return itertest.SlashSplit(k)
	}
	return c
}

// TestSplit_OutOfRange checks that a Split cutting a key past its end
// gives an error wrapping ErrInvalidSplit from Writer.Add, which stays
// usable, and from Reader.Get; and that NewWriter refuses a Split that
// does so on every key.
func TestSplit_OutOfRange(t *testing.T) {
	cmp := badSlashComparer()
	opts := WriterOptions{Comparer: cmp, FilterPolicy: hashSetPolicy{}}
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, opts)
	for i, k := range []string{"a/1", "bad/2", "c/3"} {
		err := w.Add(base.MakeInternalKey([]byte(k), 1, base.KindSet), nil)
		if bad := i == 1; bad != errors.Is(err, ErrInvalidSplit) {
			t.Fatalf("Add(%s): %v", k, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after a refused key: %v", err)
	}
	data, err := readAll(fs, "t.sst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := openBytes(data, ReaderOptions{Comparer: cmp, Filters: map[string]bloompolicy.FilterPolicy{hashSetPolicy{}.Name(): hashSetPolicy{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, _, err := r.Get([]byte("bad/2"), base.SeqNumMax, nil); !errors.Is(err, ErrInvalidSplit) {
		t.Fatalf("Get(bad/2): %v, want ErrInvalidSplit", err)
	}
	if _, _, found, err := r.Get([]byte("c/3"), base.SeqNumMax, nil); !found || err != nil {
		t.Fatalf("Get(c/3): found=%v, %v", found, err)
	}

	always := itertest.SlashComparer()
	always.Split = func(k []byte) int { return -1 }
	_, err = writeBytes([]testEntry{{base.MakeInternalKey([]byte("a/1"), 1, base.KindSet), nil}}, WriterOptions{Comparer: always})
	if !errors.Is(err, ErrInvalidSplit) {
		t.Fatalf("writing under a Split that returns -1: %v, want ErrInvalidSplit", err)
	}
}

// TestReader_Check_Split checks that Check verifies a table's filters
// against its keys' prefixes under the comparer's Split, as the writer
// built them, and finds them sound.
func TestReader_Check_Split(t *testing.T) {
	cmp := itertest.SlashComparer()
	var entries []testEntry
	for _, k := range []string{"a/1", "a/2", "b/1", "c"} {
		entries = append(entries, testEntry{base.MakeInternalKey([]byte(k), 1, base.KindSet), nil})
	}
	policies := map[string]bloompolicy.FilterPolicy{hashSetPolicy{}.Name(): hashSetPolicy{}}
	data := buildBytes(t, entries, WriterOptions{Comparer: cmp, FilterPolicy: hashSetPolicy{}, BlockSize: 1})
	r, err := openBytes(data, ReaderOptions{Comparer: cmp, Filters: policies})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Properties().NumDataBlocks < 3 {
		t.Fatalf("%d data blocks, want one per key", r.Properties().NumDataBlocks)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}
