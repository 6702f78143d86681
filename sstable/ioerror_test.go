package sstable

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// failOn returns an injector that fails the n-th operation of the given
// kinds (counting from 0) and every one after it.
func failOn(n int32, ops ...errorfs.Op) (errorfs.Injector, *atomic.Int32) {
	var count atomic.Int32
	return errorfs.InjectorFunc(func(op errorfs.Op, _ string) error {
		for _, o := range ops {
			if op == o && count.Add(1)-1 >= n {
				return errorfs.ErrInjected
			}
		}
		return nil
	}), &count
}

// TestWriter_IOErrors fails each write and the sync in turn: the error
// reaches Add or Close, wraps the I/O error, is not corruption, and the
// file is closed.
func TestWriter_IOErrors(t *testing.T) {
	entries, _ := smallTable(t, hashSetPolicy{})
	for n := int32(0); ; n++ {
		inj, count := failOn(n, errorfs.OpFileWrite, errorfs.OpFileSync)
		f, err := vfs.NewMem().Create("t.sst")
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(errorfs.WrapFile(f, inj), WriterOptions{BlockSize: 96, FilterPolicy: hashSetPolicy{}})
		for _, e := range entries {
			if err = e.addTo(w); err != nil {
				break
			}
		}
		cerr := w.Close()
		if err == nil {
			err = cerr
		}
		if count.Load() <= n { // no operation failed: every case is covered
			if err != nil {
				t.Fatalf("no failure injected, got %v", err)
			}
			return
		}
		if !errors.Is(err, errorfs.ErrInjected) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("failing op %d: got %v", n, err)
		}
		if err := w.Close(); err == nil {
			t.Fatalf("second Close succeeded")
		}
	}
}

// TestReader_IOErrors fails each read in turn, at open and during lookups
// and iteration: errors wrap the I/O error and are not corruption.
func TestReader_IOErrors(t *testing.T) {
	entries, data := smallTable(t, hashSetPolicy{})
	for n := int32(0); ; n++ {
		inj, count := failOn(n, errorfs.OpFileReadAt)
		fs := vfs.NewMem()
		f, _ := fs.Create("t.sst")
		f.Write(append([]byte(nil), data...))
		f.Close()
		f, _ = fs.Open("t.sst")
		r, err := NewReader(errorfs.WrapFile(f, inj), ReaderOptions{FileName: "t.sst", Filters: filters(hashSetPolicy{})})
		if err == nil {
			for _, e := range entries {
				if _, _, _, err = r.Get(e.key.UserKey, base.SeqNumMax, nil); err != nil {
					break
				}
			}
			if err == nil {
				err = verifyIter(r, entries, true)
			}
			if err == nil {
				err = verifyCompactionIter(r, entries)
			}
			r.Close()
		}
		if count.Load() <= n {
			if err != nil {
				t.Fatalf("no failure injected, got %v", err)
			}
			return
		}
		if !errors.Is(err, errorfs.ErrInjected) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("failing read %d: got %v", n, err)
		}
	}
}

// TestReader_Concurrent runs lookups and iterations on one reader and one
// cache from several goroutines (run it with -race).
func TestReader_Concurrent(t *testing.T) {
	entries, data := smallTable(t, hashSetPolicy{})
	r := openTable(t, data, ReaderOptions{Cache: NewCache(2 << 10), Filters: filters(hashSetPolicy{})})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				for _, e := range entries {
					want, _ := modelGet(entries, e.key.UserKey, e.key.SeqNum())
					v, _, _, err := r.Get(e.key.UserKey, e.key.SeqNum(), nil)
					if err != nil || string(v) != string(want.value) {
						t.Errorf("Get(%s) = %q, %v", e.key, v, err)
						return
					}
				}
				if err := verifyIter(r, entries, round%2 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
