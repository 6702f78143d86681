package kv_test

// The port_iterator_*_test.go files port the behavioural iterator scenarios
// of RocksDB's db/db_iterator_test.cc (and the iterator parts of
// db_test.cc) and of Pebble v1.1.5's iterator tests (iterator_test.go,
// testdata/iterator*, testdata/iter_histories) to bloomkv's API. RocksDB's
// SeekForPrev(k) becomes SeekLT(ImmediateSuccessor(k)), SeekToFirst and
// SeekToLast become First and Last, Put becomes Set, and its perf counters
// (reseeks, skipped deletes) become what the iterator shows, with Stats
// where it counts something observable. Scenarios that need what bloomkv
// has not (merge operators, read-ahead, table filters, non-blocking reads,
// max_skippable_internal_keys) are skipped or kept to the behaviour that
// remains. Each test names what it ports.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// pitSmall returns options that spread a few hundred keys over many
// blocks, tables and levels.
func pitSmall() *kv.Options {
	return &kv.Options{
		MemTableSize:   16 << 10,
		BlockSize:      128,
		TargetFileSize: 4 << 10,
		LBaseMaxBytes:  16 << 10,
	}
}

// pitOpen opens a store on a fresh in-memory FS with a copy of o (nil:
// defaults) and closes it when the test ends.
func pitOpen(t *testing.T, o *kv.Options) *kv.DB {
	t.Helper()
	db := ldbOpen(t, vfs.NewMem(), o)
	t.Cleanup(func() { db.Close() })
	return db
}

// pitNewIter is what pitIter opens an iterator on: a DB, a Snapshot or an
// indexed Batch.
type pitNewIter interface {
	NewIter(*kv.IterOptions) (*kv.Iterator, error)
}

// pitIter opens an iterator on r and closes it when the test ends.
func pitIter(t *testing.T, r pitNewIter, o *kv.IterOptions) *kv.Iterator {
	t.Helper()
	it, err := r.NewIter(o)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	t.Cleanup(func() { it.Close() })
	return it
}

// pitStatus renders the iterator's position as RocksDB's IterStatus does:
// "key->value", or "(invalid)" (with the error, if any).
func pitStatus(it *kv.Iterator) string {
	if it.Valid() {
		return fmt.Sprintf("%s->%s", it.Key(), it.Value())
	}
	if err := it.Error(); err != nil {
		return fmt.Sprintf("(invalid: %v)", err)
	}
	return "(invalid)"
}

// pitStep is one move of a scripted scenario and the position it must
// reach, in pitStatus's words.
type pitStep struct {
	move string // "first", "last", "next", "prev", "ge:k", "lt:k", "le:k", "prefix:k"
	want string
}

// pitRun applies the steps to it, failing at the first position that
// differs; a move's result must agree with Valid.
func pitRun(t *testing.T, it *kv.Iterator, steps ...pitStep) {
	t.Helper()
	for i, s := range steps {
		ok := pitMove(it, s.move)
		if ok != it.Valid() {
			t.Fatalf("step %d (%s): returned %v, Valid %v", i, s.move, ok, it.Valid())
		}
		if got := pitStatus(it); got != s.want {
			t.Fatalf("step %d (%s): at %s, want %s", i, s.move, got, s.want)
		}
	}
}

// pitMove applies one move of pitStep's language.
func pitMove(it *kv.Iterator, move string) bool {
	switch move {
	case "first":
		return it.First()
	case "last":
		return it.Last()
	case "next":
		return it.Next()
	case "prev":
		return it.Prev()
	}
	if k, ok := strings.CutPrefix(move, "prefix:"); ok {
		return it.SeekPrefixGE([]byte(k))
	}
	op, k, _ := strings.Cut(move, ":")
	switch op {
	case "ge":
		return it.SeekGE([]byte(k))
	case "lt":
		return it.SeekLT([]byte(k))
	case "le":
		// RocksDB's SeekForPrev: the last key <= k.
		return it.SeekLT(sstable.ImmediateSuccessor([]byte(k)))
	}
	panic("pitMove: unknown move " + move)
}

// pitSlashComparer is bytewise with a Split that ends a key's prefix
// after its first '/' (a key without one is its own prefix), as Pebble's
// prefix-iteration tests cut keys.
func pitSlashComparer() *sstable.Comparer {
	return sstable.NewSplitComparer("port.slash", func(k []byte) int {
		for i, c := range k {
			if c == '/' {
				return i + 1
			}
		}
		return len(k)
	})
}

// pitTables returns the tables per level, "L0:2 L3:1", for messages and
// checks that keys were spread.
func pitTables(db *kv.DB) (string, int) {
	s, n := "", 0
	for l, lm := range db.Metrics().Levels {
		if lm.NumFiles > 0 {
			s += fmt.Sprintf("L%d:%d ", l, lm.NumFiles)
			n += lm.NumFiles
		}
	}
	return s, n
}

// pitLayouts runs a scenario once per layout of its writes, as RocksDB's
// ChangeOptions loop does: settle, called where the scenario has written
// what it reads, leaves the writes in the memtable ("mem"), flushes them
// to L0 ("flushed"), or compacts them down ("compacted"); "mixed"
// compacts at the first call, flushes at the second and leaves the rest
// in the memtable, so that a key's versions lie in different levels.
func pitLayouts(t *testing.T, o *kv.Options, run func(t *testing.T, db *kv.DB, settle func())) {
	for _, layout := range []string{"mem", "flushed", "compacted", "mixed"} {
		t.Run(layout, func(t *testing.T) {
			db := pitOpen(t, o)
			calls := 0
			run(t, db, func() {
				t.Helper()
				calls++
				switch {
				case layout == "flushed" || layout == "mixed" && calls == 2:
					ldbFlush(t, db)
				case layout == "compacted" || layout == "mixed" && calls == 1:
					ldbFlush(t, db)
					ldbCompact(t, db, "", "")
				}
			})
		})
	}
}
