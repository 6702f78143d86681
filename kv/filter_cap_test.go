package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// waitFilterPasses waits until no pass over the filters under a cap is
// running or asked for.
func (d *DB) waitFilterPasses() {
	for {
		d.mu.Lock()
		running := d.filterMem.running
		d.mu.Unlock()
		if !running {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// capKey is key i of the cap tests: 8 bytes, big-endian, so that keys
// sort by i.
func capKey(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }

// TestFilterCap_Growth loads a store to 40 times its first flush under a
// cap of 4 bits per key of the final size, sampling the filter bytes held
// from another goroutine all along: they never exceed the cap. Lookups of
// present and absent keys during the load give the traffic model work and
// must all answer right, held filter or not.
func TestFilterCap_Growth(t *testing.T) {
	const total = 200_000
	capBytes := int64(4 * total / 8)
	d, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10, TargetFileSize: 128 << 10,
		LBaseMaxBytes: 256 << 10, FilterBudget: &bloompolicy.Budget{Bytes: capBytes}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var samples, over atomic.Int64
	var maxHeld atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			held := d.Metrics().Filters.HeldBytes
			samples.Add(1)
			if held > capBytes {
				over.Add(1)
			}
			if held > maxHeld.Load() {
				maxHeld.Store(held)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	order := rng.Perm(total)
	val := make([]byte, 16)
	gets := 0
	for i, k := range order {
		if err := d.Set(capKey(2*k), val, NoSync); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			mustGetKey(t, d, capKey(2*order[rng.IntN(i)]))
			if _, err := d.Get(capKey(2*rng.IntN(total) + 1)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("absent key: %v", err)
			}
			gets += 2
		}
	}
	waitIdle(t, d)        // compactions and the cap's filter passes
	for i := range 2000 { // open the tables again, as the load left them
		if _, err := d.Get(capKey(2*rng.IntN(total) + 1)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("absent key %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	m := d.Metrics()
	t.Logf("%d samples, most held %d of a cap of %d; now held %d, %d tables not held, index %d B; %d gets\n%s",
		samples.Load(), maxHeld.Load(), capBytes, m.Filters.HeldBytes, m.Filters.TablesNotHeld, m.Filters.IndexBytes, gets, m)
	if samples.Load() < 100 {
		t.Fatalf("only %d samples", samples.Load())
	}
	if over.Load() > 0 || m.Filters.HeldBytes > capBytes {
		t.Fatalf("filter bytes held above the cap of %d in %d samples (most %d)", capBytes, over.Load(), maxHeld.Load())
	}
	if m.Filters.CapBytes != capBytes || m.Filters.IndexBytes == 0 || m.Filters.HeldBytes == 0 {
		t.Fatalf("filter metrics %+v", m.Filters)
	}
	var filterBytes int64
	for _, l := range m.Levels {
		filterBytes += l.FilterBytes
	}
	if filterBytes > capBytes && m.Filters.TablesNotHeld == 0 && m.Filters.TablesBuilt == 0 {
		t.Fatalf("tables hold %d filter bytes over the cap of %d, and none is left out or holds a smaller one built", filterBytes, capBytes)
	}
}

// flushCapTables writes tables L0 tables of keys entries each, keyed
// capKey(0) onward in order, flushing after each and waiting for the
// filter pass the flush asks for under a cap, so that a pass sees each
// L0 the flushes leave.
func flushCapTables(t *testing.T, d *DB, tables, keys int) {
	t.Helper()
	for table := range tables {
		for k := range keys {
			if err := d.Set(capKey(keys*table+k), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		d.waitFilterPasses()
	}
}

// mustGetKey fails t unless key is found.
func mustGetKey(t testing.TB, d *DB, key []byte) {
	t.Helper()
	if _, err := d.Get(key); err != nil {
		t.Fatalf("get %x: %v", key, err)
	}
}

// TestFilterCap_ReopenOtherSettings writes a store under a cap and reopens
// it without one, with filters disabled and under a cap again: every key
// answers the same.
func TestFilterCap_ReopenOtherSettings(t *testing.T) {
	fs := vfs.NewMem()
	settings := []*Options{
		{FilterBudget: &bloompolicy.Budget{Bytes: 4 << 10}},
		{},
		{DisableFilters: true},
		{FilterBudget: &bloompolicy.Budget{BitsPerKey: 6}},
		{FilterBudget: &bloompolicy.Budget{Bytes: 1}},
	}
	checked := 0
	for i, o := range settings {
		o.FS, o.MemTableSize = fs, 32<<10
		d, err := Open("db", o)
		if err != nil {
			t.Fatalf("setting %d: %v", i, err)
		}
		for k := range 5000 {
			if err := d.Set(capKey(2*(k+5000*i)), []byte(fmt.Sprint(k)), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		d.waitFilterPasses()
		for k := range 5000 * (i + 1) {
			mustGetKey(t, d, capKey(2*k))
			if _, err := d.Get(capKey(2*k + 1)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("setting %d: absent key: %v", i, err)
			}
			checked++
		}
		if m := d.Metrics(); o.FilterBudget != nil && o.FilterBudget.Bytes > 0 && m.Filters.HeldBytes > o.FilterBudget.Bytes {
			t.Fatalf("setting %d: %d bytes held over the cap", i, m.Filters.HeldBytes)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if checked != 5000*15 {
		t.Fatalf("checked %d keys", checked)
	}
}

// TestFilterCap_HoldOwnNoGap: a table holding a filter built for it that
// loads its own (holdOwn) asks one filter or the other throughout: while
// its own filter block is read, the built one is still held, so no
// lookup meanwhile reads the table without a filter.
func TestFilterCap_HoldOwnNoGap(t *testing.T) {
	var watched atomic.Pointer[tableEntry]
	var reads, gaps atomic.Int64
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if e := watched.Load(); e != nil && op == errorfs.OpFileReadAt && strings.HasSuffix(path, ".sst") {
			reads.Add(1)
			if !e.reader.FilterHeld() {
				gaps.Add(1)
			}
		}
		return nil
	}))
	d, err := Open("db", &Options{FS: fs, FilterBudget: &bloompolicy.Budget{Bytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for k := range 2000 {
		if err := d.Set(capKey(k), []byte("v"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	d.waitFilterPasses()
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	if len(entries) != 1 {
		t.Fatalf("%d open tables, want 1", len(entries))
	}
	e, h := entries[0], d.filterMem
	if held, _ := h.holdBuilt(e, 5); !held || !h.filterState(nil, e).heldBuilt {
		t.Fatalf("built filter not held: %v", held)
	}
	watched.Store(e)
	owns := h.holdOwn(e)
	watched.Store(nil)
	if s := h.filterState(nil, e); !owns || s.heldBuilt || s.heldBytes != e.filterBytes || h.held.Load() != e.filterBytes {
		t.Fatalf("holdOwn %v: built %v, %d bytes held of %d, holder %d", owns, s.heldBuilt, s.heldBytes, e.filterBytes, h.held.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("the own filter block was not read while watched")
	}
	if gaps.Load() != 0 {
		t.Fatalf("%d of %d reads of the table found it holding no filter", gaps.Load(), reads.Load())
	}
}

// TestFilterCap_OpenedPlannedBuilt: a table the plan gives a built filter,
// opened again (as after the table cache let it go), loads and charges
// nothing of its own filter, though it would fit: it waits, holding none,
// for the pass it asks for, which builds it one.
func TestFilterCap_OpenedPlannedBuilt(t *testing.T) {
	const capBytes = 1100 // about 14 bits per key: more than the tables' own filters
	fs := vfs.NewMem()
	for _, budget := range []*bloompolicy.Budget{nil, {Bytes: capBytes}} {
		d, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true, FilterBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if budget != nil {
			checkOpenedPlannedBuilt(t, d, capBytes)
		} else {
			flushCapTables(t, d, 2, 300)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkOpenedPlannedBuilt drops, then opens again, each open table of d
// that holds the built filter its plan gives it, with no pass running
// meanwhile, and checks that opening loads nothing.
func checkOpenedPlannedBuilt(t *testing.T, d *DB, capBytes int64) {
	d.waitFilterPasses()
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	h := d.filterMem
	checked := 0
	for _, e := range entries {
		d.waitFilterPasses()
		if p, ok := h.plan(e.num); !ok || p.hold != holdBuilt || !h.filterState(nil, e).heldBuilt {
			t.Fatalf("table %s: plan %+v (%v), built %v", e.num, p, ok, h.filterState(nil, e).heldBuilt)
		}
		holdPasses(d)
		h.drop(e)
		before := h.held.Load()
		h.opened(e)
		held, charged := e.reader.FilterHeld(), h.held.Load()-before
		e.filterMu.Lock()
		entryBytes := e.heldBytes
		e.filterMu.Unlock()
		d.mu.Lock()
		asked := h.again
		h.running, h.again = false, false
		h.scheduleLocked()
		d.mu.Unlock()
		if before+e.filterBytes > capBytes {
			t.Fatalf("table %s: its own filter (%d B) would not fit beside %d B held", e.num, e.filterBytes, before)
		}
		if held || charged != 0 || entryBytes != 0 || !asked {
			t.Fatalf("table %s opened: filter held %v, %d bytes charged (entry %d), pass asked %v", e.num, held, charged, entryBytes, asked)
		}
		d.waitFilterPasses()
		if s := h.filterState(nil, e); !s.heldBuilt || !e.reader.FilterHeld() || h.held.Load() > capBytes {
			t.Fatalf("table %s after the pass: built %v, held %v, %d bytes", e.num, s.heldBuilt, e.reader.FilterHeld(), h.held.Load())
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("%d tables checked, want 2", checked)
	}
}

// holdPasses waits for the filter passes of d and keeps new ones from
// starting, as if one ran, until d.filterMem.running is cleared.
func holdPasses(d *DB) {
	for {
		d.waitFilterPasses()
		d.mu.Lock()
		running := d.filterMem.running
		d.filterMem.running = true
		d.mu.Unlock()
		if !running {
			return
		}
	}
}

// TestFilterCap_PassWhenWorkEnds: a pass planned while background work
// ran keeps a reserve for L0 as deep as it stood; when the last of that
// work ends and leaves the tree unchanged, a pass plans the tree as it
// stands, and the compacted table may hold nearly the whole cap. Here a
// manual operation (as an Ingest beside the load would be) runs
// throughout two flushes and a Compact, so that every pass over them
// plans for a busy store (one after each flush sees L0 at its deepest,
// two tables), and ends after them.
func TestFilterCap_PassWhenWorkEnds(t *testing.T) {
	const capBytes = 700 // about 9 bits per key of the 600 keys
	d, err := Open("db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true,
		FilterBudget: &bloompolicy.Budget{Bytes: capBytes}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.mu.Lock()
	d.mu.manual++
	d.mu.Unlock()
	end := sync.OnceFunc(func() {
		d.mu.Lock()
		d.mu.manual--
		d.workEndedLocked()
		d.mu.Unlock()
	})
	defer end()
	flushCapTables(t, d, 2, 300)
	if err := d.Compact(capKey(0), capKey(600)); err != nil {
		t.Fatal(err)
	}
	d.waitFilterPasses()
	e := compactedEntry(t, d)
	if s := d.filterMem.filterState(nil, e); s.heldBytes > capBytes/2 {
		t.Fatalf("planned while busy: table %s holds %d B, want at most half the cap beside the reserve", e.num, s.heldBytes)
	}
	end()
	d.waitFilterPasses()
	if s := d.filterMem.filterState(nil, e); s.heldBytes < capBytes*9/10 || s.heldBytes > capBytes {
		t.Fatalf("settled: table %s holds %d B (built %v), want nearly the whole cap, %d B", e.num, s.heldBytes, s.heldBuilt, capBytes)
	}
}

// compactedEntry returns the entry of the one open table of d, with the
// Version holding one table.
func compactedEntry(t *testing.T, d *DB) *tableEntry {
	t.Helper()
	v := refCurrentVersion(d)
	defer d.unrefVersion(v)
	var files int
	for _, level := range v.Levels {
		files += len(level)
	}
	entries := d.tableCache.refAll()
	defer d.tableCache.releaseAll(entries)
	if files != 1 || len(entries) != 1 {
		t.Fatalf("%d tables, %d open, want 1", files, len(entries))
	}
	return entries[0]
}

// TestFilterCap_LooseCapBuildsNothing: a cap larger than the tree needs
// at capMaxBitsPerKey bits per key gives every table those bits, so a
// growing store writes each table with the filter it keeps, holds them
// all, and builds none in memory. (When the allocation could give some
// runs more than the bound, their shares moved as the tree grew, and
// passes rebuilt filters that the cap never asked to shrink.)
func TestFilterCap_LooseCapBuildsNothing(t *testing.T) {
	const total = 60_000
	d, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10, TargetFileSize: 128 << 10,
		LBaseMaxBytes: 256 << 10, FilterBudget: &bloompolicy.Budget{Bytes: 40 * total / 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	order := rng.Perm(total)
	val := make([]byte, 16) // random, so that tables are not compressed small
	for i, k := range order {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		if err := d.Set(capKey(2*k), val, NoSync); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			mustGetKey(t, d, capKey(2*order[rng.IntN(i)]))
			if _, err := d.Get(capKey(2*rng.IntN(total) + 1)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("absent key: %v", err)
			}
		}
	}
	waitIdle(t, d)
	m := d.Metrics()
	var tables, compactions, filterBytes int64
	for _, l := range m.Levels {
		tables += int64(l.NumFiles)
		compactions += l.Compactions
		filterBytes += l.FilterBytes
	}
	if tables < 10 || compactions == 0 {
		t.Fatalf("%d tables, %d compactions: the load did not grow a tree", tables, compactions)
	}
	if m.Filters.FiltersBuilt != 0 || m.Filters.TablesBuilt != 0 || m.Filters.TablesNotHeld != 0 {
		t.Fatalf("under a loose cap: %d filters built (%d B read), %d tables hold one, %d hold none",
			m.Filters.FiltersBuilt, m.Filters.BuildBytesRead, m.Filters.TablesBuilt, m.Filters.TablesNotHeld)
	}
	if m.Filters.HeldBytes != filterBytes {
		t.Fatalf("%d filter bytes held, the tables carry %d", m.Filters.HeldBytes, filterBytes)
	}
}
