package iterator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/cockroachdb/datadriven"
)

func TestMerging(t *testing.T) {
	var children []string
	datadriven.RunTest(t, "testdata/merging", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			children = strings.Split(strings.TrimSpace(d.Input), "\n")
			return ""
		case "iter":
			iters := make([]base.InternalIterator, len(children))
			for i, line := range children {
				iters[i] = itertest.ParseEntries(t, line)
			}
			m := NewMerging(base.DefaultComparer.Compare, iters...)
			out, err := itertest.RunOps(m, d.Input, itertest.KeyValue)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				out += "close: " + err.Error() + "\n"
			}
			for i, it := range iters {
				if !it.(*itertest.SliceIter).Closed() {
					t.Fatalf("child %d not closed", i)
				}
			}
			return out
		default:
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
	})
}

// modelEntry is one entry of the sorted model the randomized test checks
// the merge against: the merge's order is internal key, then child.
type modelEntry struct {
	key   base.InternalKey
	value []byte
	child int
}

// randomChildren builds n children over a small key space, with duplicate
// internal keys across children so ties are exercised, and the sorted
// model of their union.
func randomChildren(rng *rand.Rand, n int) ([]*itertest.SliceIter, []modelEntry) {
	var model []modelEntry
	children := make([]*itertest.SliceIter, n)
	for c := range children {
		seen := map[string]bool{}
		var entries []modelEntry
		for range rng.IntN(30) {
			k := base.MakeInternalKey([]byte(fmt.Sprintf("k%02d", rng.IntN(40))),
				base.SeqNum(rng.IntN(5)), base.Kind(rng.IntN(2)))
			if id := k.String(); !seen[id] {
				seen[id] = true
				entries = append(entries, modelEntry{key: k, value: []byte(fmt.Sprintf("%s@%d", id, c)), child: c})
			}
		}
		sortModel(entries)
		it := itertest.NewSliceIter(bytes.Compare, nil, nil)
		for _, e := range entries {
			it.Keys = append(it.Keys, e.key)
			it.Vals = append(it.Vals, e.value)
		}
		children[c] = it
		model = append(model, entries...)
	}
	sortModel(model)
	return children, model
}

func sortModel(m []modelEntry) {
	sort.SliceStable(m, func(i, j int) bool {
		if c := base.InternalCompare(bytes.Compare, m[i].key, m[j].key); c != 0 {
			return c < 0
		}
		return m[i].child < m[j].child
	})
}

func TestMerging_Random(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 200 {
		children, model := randomChildren(rng, 1+rng.IntN(6))
		iters := make([]base.InternalIterator, len(children))
		for i, c := range children {
			iters[i] = c
		}
		m := NewMerging(bytes.Compare, iters...)
		checkAgainstModel(t, rng, m, model, fmt.Sprintf("seed %d round %d", seed, round))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAgainstModel drives it with random operations and checks every
// position against the model.
func checkAgainstModel(t *testing.T, rng *rand.Rand, it base.InternalIterator, model []modelEntry, ctx string) {
	pos := -1 // model index of the current entry; -1 or len(model): invalid
	var trace []string
	for range 100 {
		key := []byte(fmt.Sprintf("k%02d", rng.IntN(42)))
		var op string
		valid := pos >= 0 && pos < len(model)
		switch r := rng.IntN(10); {
		case r == 0:
			op, pos = "first", 0
			it.First()
		case r == 1:
			op, pos = "last", len(model)-1
			it.Last()
		case r == 2:
			op = "seek-ge " + string(key)
			pos = sort.Search(len(model), func(i int) bool { return bytes.Compare(model[i].key.UserKey, key) >= 0 })
			it.SeekGE(key)
		case r == 3:
			op = "seek-lt " + string(key)
			pos = sort.Search(len(model), func(i int) bool { return bytes.Compare(model[i].key.UserKey, key) >= 0 }) - 1
			it.SeekLT(key)
		case r < 7 && valid:
			op = "next"
			pos++
			it.Next()
		case valid:
			op = "prev"
			pos--
			it.Prev()
		default:
			continue
		}
		trace = append(trace, op)
		wantValid := pos >= 0 && pos < len(model)
		if it.Valid() != wantValid {
			t.Fatalf("%s: after %v: valid=%t, want %t", ctx, trace, it.Valid(), wantValid)
		}
		if wantValid {
			want := model[pos]
			if got := it.Key(); base.InternalCompare(bytes.Compare, got, want.key) != 0 || !bytes.Equal(it.Value(), want.value) {
				t.Fatalf("%s: after %v: at %s:%s, want %s:%s", ctx, trace, got, it.Value(), want.key, want.value)
			}
		}
	}
}

// benchChildren builds n children holding total entries between them,
// interleaved as table levels would be.
func benchChildren(n, total int) []base.InternalIterator {
	keys := make([][]base.InternalKey, n)
	vals := make([][][]byte, n)
	for i := range total {
		c := i % n
		keys[c] = append(keys[c], base.MakeInternalKey([]byte(fmt.Sprintf("key%08d", i)), base.SeqNum(i), base.KindSet))
		vals[c] = append(vals[c], []byte("value"))
	}
	iters := make([]base.InternalIterator, n)
	for c := range iters {
		iters[c] = itertest.NewSliceIter(bytes.Compare, keys[c], vals[c])
	}
	return iters
}

func BenchmarkMerging_Next(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			m := NewMerging(bytes.Compare, benchChildren(n, 100_000)...)
			b.ResetTimer()
			for range b.N {
				if !m.Next() {
					m.First()
				}
			}
		})
	}
}

func BenchmarkMerging_Prev(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			m := NewMerging(bytes.Compare, benchChildren(n, 100_000)...)
			b.ResetTimer()
			for range b.N {
				if !m.Prev() {
					m.Last()
				}
			}
		})
	}
}

func BenchmarkMerging_SeekGE(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			m := NewMerging(bytes.Compare, benchChildren(n, 100_000)...)
			rng := rand.New(rand.NewPCG(1, 1))
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key%08d", rng.IntN(100_000)))
			}
			b.ResetTimer()
			for i := range b.N {
				m.SeekGE(keys[i%len(keys)])
			}
		})
	}
}
