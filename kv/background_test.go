package kv_test

// A user callback that panics in a background goroutine (the flush loop, a
// compaction), wherever it is called there (the picker, the MANIFEST's
// version building, the table cache, the flush's split points, the table
// writer), becomes the DB's background error: the process survives, writes
// stop with an error wrapping compaction.ErrCallbackPanic, reads go on,
// and Close reports it.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/compaction"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// bgPanicker panics once, at the call after its first `after` calls from a
// background goroutine of the DB; calls from the test's own goroutine
// (writes, reads, Open, Close) never panic, so reads can go on.
type bgPanicker struct {
	after int64
	// outsideRun, when set, counts only calls made outside
	// compaction.Run, which recovered callback panics before background
	// goroutines did.
	outsideRun bool
	// site, when set, counts only calls with that function on the stack.
	site string

	calls atomic.Int64
	fired atomic.Bool
	mu    sync.Mutex
	where string // the function that called the callback that panicked
}

// check panics if this call is the one p waits for.
func (p *bgPanicker) check(callback string) {
	if p.fired.Load() {
		return
	}
	background, inRun, atSite := onStack(p.site)
	if !background || (p.outsideRun && inRun) || !atSite {
		return
	}
	if p.calls.Add(1) <= p.after || !p.fired.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	p.where = callerOutside(callback)
	p.mu.Unlock()
	panic(fmt.Sprintf("%s panics after %d background calls", callback, p.after))
}

// onStack reports whether the caller runs in a background goroutine of
// the DB, whether inside compaction.Run, and whether inside a function
// whose name holds site (always, for an empty site).
func onStack(site string) (background, inRun, atSite bool) {
	atSite = site == ""
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for more := true; more; {
		var f runtime.Frame
		f, more = frames.Next()
		switch {
		case strings.HasSuffix(f.Function, "kv.(*DB).flushLoop"), strings.HasSuffix(f.Function, "kv.(*DB).backgroundCompaction"):
			background = true
		case strings.HasSuffix(f.Function, "/compaction.Run"):
			inRun = true
		}
		atSite = atSite || strings.Contains(f.Function, site)
	}
	return background, inRun, atSite
}

// callerOutside names the innermost function of package kv on the stack:
// the store's code that met the panic.
func callerOutside(callback string) string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "/kv.") {
			return strings.TrimPrefix(f.Function, "github.com/bloomkv/bloomkv/")
		}
		if !more {
			return callback + " (caller unknown)"
		}
	}
}

// panickingCompare returns the slash comparer whose Compare consults p.
func panickingCompare(p *bgPanicker) *kv.Options {
	c := itertest.SlashComparer()
	cmp := c.Compare
	c.Compare = func(a, b []byte) int {
		p.check("Compare")
		return cmp(a, b)
	}
	return &kv.Options{FS: vfs.NewMem(), Comparer: c, MemTableSize: 32 << 10, L0CompactionThreshold: 2}
}

// checkPanicStops writes to db until a write fails, then checks that the
// failure wraps compaction.ErrCallbackPanic with p's panic and stack in it, that the
// first key written still reads, and that Close reports the error. It
// returns whether p fired.
func checkPanicStops(t *testing.T, db *kv.DB, p *bgPanicker) bool {
	t.Helper()
	var err error
	for i := 0; i < 20000 && err == nil; i++ {
		err = db.Set([]byte(fmt.Sprintf("k%03d/%05d", i%97, i)), make([]byte, 200), kv.NoSync)
		if i%300 == 299 && err == nil {
			err = db.DeleteRange([]byte(fmt.Sprintf("k%03d/", i%89+1)), []byte(fmt.Sprintf("k%03d/5", i%89+1)), kv.NoSync)
		}
	}
	if !p.fired.Load() {
		t.Errorf("after %d calls: the callback never panicked (%d background calls); last write: %v", p.after, p.calls.Load(), err)
		db.Close()
		return false
	}
	if !errors.Is(err, compaction.ErrCallbackPanic) || !strings.Contains(err.Error(), "panics after") || !strings.Contains(err.Error(), "goroutine ") {
		t.Errorf("after %d calls: writes fail with %v, want an error wrapping ErrCallbackPanic with the panic's value and stack", p.after, err)
	}
	if v, err := db.Get([]byte("k000/00000")); err != nil || len(v) != 200 {
		t.Errorf("after %d calls: Get after the panic: %d bytes, %v; want the value", p.after, len(v), err)
	}
	if err := db.Close(); !errors.Is(err, compaction.ErrCallbackPanic) {
		t.Errorf("after %d calls: Close: %v, want ErrCallbackPanic", p.after, err)
	}
	return true
}

// TestBackground_Panic_Compare checks a Compare that starts panicking
// after N calls from the background goroutines, outside compaction.Run
// (which guards its own): in the picker, in version building under d.mu,
// in the flush's split points, in a compaction's setup. Each N must end in
// a background error, whichever code met the panic.
func TestBackground_Panic_Compare(t *testing.T) {
	sites := map[string]int{}
	ran := 0
	for _, after := range []int64{0, 1, 3, 10, 30, 100, 300, 1000} {
		p := &bgPanicker{after: after, outsideRun: true}
		db, err := kv.Open("db", panickingCompare(p))
		if err != nil {
			t.Fatal(err)
		}
		if checkPanicStops(t, db, p) {
			ran++
			sites[p.where]++
		}
	}
	t.Logf("%d cases; panics met in %v", ran, sites)
	if ran != 8 {
		t.Fatalf("%d of 8 cases fired", ran)
	}
	if len(sites) < 2 {
		t.Errorf("panics met in %v: want at least two different sites", sites)
	}
}

// TestBackground_Panic_Compare_Sites checks a Compare that panics first
// in a chosen function of a background goroutine.
func TestBackground_Panic_Compare_Sites(t *testing.T) {
	ran := 0
	sites := []string{
		"compaction.(*Picker).Pick",
		"manifest.(*Version).Apply",
		"kv.(*tableCache).",
		"kv.(*DB).writeL0",
		"kv.(*DB).runCompaction",
	}
	for _, site := range sites {
		p := &bgPanicker{site: site, outsideRun: true}
		db, err := kv.Open("db", panickingCompare(p))
		if err != nil {
			t.Fatal(err)
		}
		if checkPanicStops(t, db, p) {
			ran++
			t.Logf("%s: panic met in %s", site, p.where)
		}
	}
	if ran != len(sites) {
		t.Fatalf("%d of %d cases fired", ran, len(sites))
	}
}

// panickingPolicy is a Bloom policy whose writers consult p in AddKey
// (spoilAdd) or Finish.
type panickingPolicy struct {
	bloompolicy.FilterPolicy
	p        *bgPanicker
	spoilAdd bool
}

func (pp panickingPolicy) NewWriter() bloompolicy.FilterWriter {
	return panickingWriter{FilterWriter: pp.FilterPolicy.NewWriter(), pp: pp}
}

type panickingWriter struct {
	bloompolicy.FilterWriter
	pp panickingPolicy
}

func (w panickingWriter) AddKey(key []byte) {
	if w.pp.spoilAdd {
		w.pp.p.check("AddKey")
	}
	w.FilterWriter.AddKey(key)
}

func (w panickingWriter) Finish(dst []byte) []byte {
	if !w.pp.spoilAdd {
		w.pp.p.check("Finish")
	}
	return w.FilterWriter.Finish(dst)
}

// TestBackground_Panic_FilterPolicy checks a filter policy whose AddKey
// panics in a flush, and one whose Finish panics later, in a flush or a
// background compaction.
func TestBackground_Panic_FilterPolicy(t *testing.T) {
	bloom, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range []struct {
		spoilAdd bool
		after    int64
	}{{true, 0}, {true, 500}, {false, 0}, {false, 40}, {false, 400}} {
		p := &bgPanicker{after: c.after}
		db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), MemTableSize: 32 << 10, L0CompactionThreshold: 2,
			BlockSize: 512, FilterPolicy: panickingPolicy{FilterPolicy: bloom, p: p, spoilAdd: c.spoilAdd}})
		if err != nil {
			t.Fatal(err)
		}
		if checkPanicStops(t, db, p) {
			ran++
			t.Logf("AddKey=%v after %d: panic met in %s", c.spoilAdd, c.after, p.where)
		}
	}
	if ran != 5 {
		t.Fatalf("%d of 5 cases fired", ran)
	}
}

// TestCommit_Panic_Compare checks a Compare that panics while a write
// inserts its batch into the memtable, in the writer's own goroutine: the
// write fails with an error wrapping compaction.ErrCallbackPanic, later
// writes fail too, and nothing of the batch, part of which may be in the
// memtable, becomes visible.
func TestCommit_Panic_Compare(t *testing.T) {
	c := itertest.SlashComparer()
	cmp := c.Compare
	var armed atomic.Bool
	c.Compare = func(a, b []byte) int {
		if armed.Load() && (string(a) == "boom" || string(b) == "boom") {
			panic("Compare meets boom")
		}
		return cmp(a, b)
	}
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := db.Set([]byte(k), []byte("v"), kv.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	armed.Store(true)
	b := db.NewBatch()
	for _, k := range []string{"c", "boom"} {
		if err := b.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Apply(b, kv.NoSync); !errors.Is(err, compaction.ErrCallbackPanic) || !strings.Contains(err.Error(), "Compare meets boom") {
		t.Fatalf("Apply of a batch whose insert panics: %v, want ErrCallbackPanic with the panic's value", err)
	}
	if err := db.Set([]byte("d"), []byte("v"), kv.NoSync); !errors.Is(err, compaction.ErrCallbackPanic) {
		t.Fatalf("Set after the panic: %v, want the error that stopped writes", err)
	}
	if v, err := db.Get([]byte("a")); err != nil || string(v) != "v" {
		t.Fatalf("Get(a) after the panic: %q, %v", v, err)
	}
	if _, err := db.Get([]byte("c")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(c), of the batch that failed: %v, want ErrNotFound", err)
	}
	_ = db.Close() // reports the stopped writes, or not: not this test's concern
}

// TestOpen_Panic_Compare reopens a store whose WAL holds writes with a
// Compare that panics: the WAL's replay inserts them into a memtable,
// and the panic must come out of Open as an error wrapping
// compaction.ErrCallbackPanic, with the store's LOCK and files let go,
// so that an Open with a sound comparer then finds every write.
func TestOpen_Panic_Compare(t *testing.T) {
	fs := vfs.NewMem()
	c := itertest.SlashComparer()
	db, err := kv.Open("db", &kv.Options{FS: fs, Comparer: c})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := db.Set(fmt.Appendf(nil, "k%02d", i), []byte("v"), kv.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	panicky := itertest.SlashComparer()
	panicky.Compare = func(a, b []byte) int { panic("Compare at Open") }
	db, err = kv.Open("db", &kv.Options{FS: fs, Comparer: panicky})
	if !errors.Is(err, compaction.ErrCallbackPanic) || !strings.Contains(err.Error(), "Compare at Open") {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open with a Compare that panics: %v, want ErrCallbackPanic with the panic's value", err)
	}
	db, err = kv.Open("db", &kv.Options{FS: fs, Comparer: c})
	if err != nil {
		t.Fatalf("Open after the Open that panicked: %v", err)
	}
	defer db.Close()
	for i := range 50 {
		if v, err := db.Get(fmt.Appendf(nil, "k%02d", i)); err != nil || string(v) != "v" {
			t.Fatalf("k%02d after reopening: %q, %v", i, v, err)
		}
	}
}
