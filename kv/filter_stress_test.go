package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// TestFilterCap_Stress writes users under a tight cap with few tables
// open, flushing and compacting, while readers look present users up
// (Get and SeekPrefixGE) and a sampler watches the filter bytes held:
// every lookup finds its key, whatever filter a table holds or is being
// given, the bytes held never pass the cap, and the holder's counts
// match the open tables' filters once quiet and are zero after Close.
func TestFilterCap_Stress(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmp  *sstable.Comparer
	}{{"bytewise", nil}, {"split", stressComparer()}} {
		t.Run(tc.name, func(t *testing.T) { testFilterCapStress(t, tc.cmp) })
	}
}

// testFilterCapStress is TestFilterCap_Stress under comparer cmp (nil:
// the default, without a Split; with one, readers seek by prefix too).
func testFilterCapStress(t *testing.T, cmp *sstable.Comparer) {
	seed := testseed.Seed(t)
	const capBytes = 6000
	d, err := Open("db", &Options{FS: vfs.NewMem(), Comparer: cmp, MemTableSize: 32 << 10, TargetFileSize: 16 << 10,
		LBaseMaxBytes: 64 << 10, MaxOpenFiles: MinMaxOpenFiles, FilterBudget: &bloompolicy.Budget{Bytes: capBytes}})
	if err != nil {
		t.Fatal(err)
	}
	duration := 2 * time.Second
	if testing.Short() {
		duration = 500 * time.Millisecond
	}
	var written atomic.Int64 // users 0..written-1 are all written
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the sampler
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if held := d.Metrics().Filters.HeldBytes; held > capBytes || held < 0 {
				fail("%d filter bytes held under a cap of %d", held, capBytes)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	if cmp != nil {
		wg.Add(1)
		go func() { // a long-lived iterator's prefix seeks
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 100))
			for !stopped(stop) {
				n := int(written.Load())
				if n == 0 {
					continue
				}
				it, err := d.NewIter(nil)
				if err != nil {
					fail("NewIter: %v", err)
					return
				}
				for range 500 {
					key := stressKey(rng.IntN(n), stressFields[rng.IntN(len(stressFields))])
					if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
						fail("long-lived SeekPrefixGE(%q): valid %v, %v", key, it.Valid(), it.Error())
					}
				}
				if err := it.Close(); err != nil {
					fail("Iterator.Close: %v", err)
				}
			}
		}()
	}
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n := written.Load(); n > 0 {
					checkStressUser(d, rng, rng.IntN(int(n)), cmp != nil, fail)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	deadline := time.Now().Add(duration)
	for id := 0; time.Now().Before(deadline) && !failed.Load(); id++ {
		for _, f := range stressFields {
			if err := d.Set(stressKey(id, f), fmt.Appendf(nil, "%d", id), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		written.Store(int64(id + 1))
		switch rng.IntN(3000) {
		case 0:
			if err := d.Compact([]byte("user/"), []byte("user0")); err != nil {
				t.Fatal(err)
			}
		case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.waitFilterPasses()
	checkHolderCounts(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if held, built := d.filterMem.held.Load(), d.filterMem.built.Load(); held != 0 || built != 0 {
		t.Fatalf("after Close: %d filter bytes held, %d tables holding a built filter", held, built)
	}
}

// stopped reports whether stop is closed.
func stopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// stressKey is field f of user id, the users spread over the key space
// so that flushes overlap the tables below.
func stressKey(id int, f string) []byte {
	return fmt.Appendf(nil, "user/%08d/%s", uint32(id)*2654435761%1e8, f)
}

// stressFields are the fields of every user.
var stressFields = []string{"email", "name", "plan"}

// stressComparer is bytewise with itertest.UserSplit: a key's prefix is
// its user.
func stressComparer() *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = itertest.UserSplit, "test.user"
	return &c
}

// checkStressUser looks up a field of user id, which is present, with
// Get and, under a Split, SeekPrefixGE.
func checkStressUser(d *DB, rng *rand.Rand, id int, split bool, fail func(string, ...any)) {
	key := stressKey(id, stressFields[rng.IntN(len(stressFields))])
	if v, err := d.Get(key); err != nil || string(v) != fmt.Sprint(id) {
		if !errors.Is(err, ErrClosed) {
			fail("Get(%q) = %q, %v", key, v, err)
		}
		return
	}
	if !split {
		return
	}
	it, err := d.NewIter(nil)
	if err != nil {
		fail("NewIter: %v", err)
		return
	}
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		fail("SeekPrefixGE(%q): valid %v, %v", key, it.Valid(), it.Error())
	}
	if err := it.Close(); err != nil {
		fail("Iterator.Close: %v", err)
	}
}

// checkHolderCounts checks, with nothing running, that the holder's
// counts are those of the open tables' filters.
func checkHolderCounts(t *testing.T, d *DB) {
	t.Helper()
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	h := d.filterMem
	var held, built int64
	for _, e := range entries {
		s := h.filterState(nil, e)
		if (s.heldBytes > 0) != e.reader.FilterHeld() {
			t.Errorf("table %s: %d bytes charged, filter held %v", e.num, s.heldBytes, e.reader.FilterHeld())
		}
		held += s.heldBytes
		if s.heldBuilt {
			built++
		}
	}
	if held != h.held.Load() || built != h.built.Load() {
		t.Fatalf("holder counts %d bytes, %d built; the open tables hold %d bytes, %d built",
			h.held.Load(), h.built.Load(), held, built)
	}
	if held > h.cap {
		t.Fatalf("%d bytes held over the cap of %d", held, h.cap)
	}
}

// TestFilterCap_CloseWhileBuilding closes a store while a pass builds
// filters, table reads slowed so that it is mid-build: Close waits for
// it, and lets go of every filter.
func TestFilterCap_CloseWhileBuilding(t *testing.T) {
	var slow atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if slow.Load() && op == errorfs.OpFileReadAt && strings.HasSuffix(path, ".sst") {
			time.Sleep(200 * time.Microsecond)
		}
		return nil
	}))
	opts := &Options{FS: fs, DisableAutomaticCompactions: true, MaxOpenFiles: MinMaxOpenFiles}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for table := range 12 {
		for k := range 2000 {
			if err := d.Set(capKey(2000*table+k), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for try := range 5 {
		slow.Store(false)
		opts.FilterBudget = &bloompolicy.Budget{Bytes: 6000}
		d, err := Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		slow.Store(true)
		for k := range 50 {
			if _, err := d.Get(capKey(k * 401)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if held, built := d.filterMem.held.Load(), d.filterMem.built.Load(); held != 0 || built != 0 {
			t.Fatalf("try %d: after Close, %d filter bytes held, %d tables holding a built filter (%d built)",
				try, held, built, d.filterMem.builds.Load())
		}
	}
}
