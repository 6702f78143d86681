package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	gosync "sync"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// The write modes compare what each engine's WAL promises an acknowledged
// NoSync write with what a write costs: one Set per write into an empty
// store, NoSync and then Sync, in bloomkv's two WAL modes and in Pebble.

// WriteMode is one engine in one WAL mode.
type WriteMode struct {
	// Name names the mode in reports.
	Name string
	// Engine is EngineKV or EnginePebble.
	Engine string
	// Promise says what becomes of an acknowledged NoSync write when the
	// process crashes (the machine staying up).
	Promise string
	// Open opens an empty store of the mode in dir.
	Open func(dir string) (Engine, error)
}

// The names of the write modes.
const (
	WriteModeKV           = "bloomkv, default"
	WriteModeKVBackground = "bloomkv, BackgroundWALWrites"
	WriteModePebble       = "Pebble v1.1.5"
)

// WriteModes returns bloomkv's two WAL modes and Pebble's (its default
// WAL), each opening a store with the options kvOpts or pebbleOpts
// returns afresh for every store.
func WriteModes(kvOpts func() *kv.Options, pebbleOpts func() *pebble.Options) []WriteMode {
	openKV := func(background bool) func(string) (Engine, error) {
		return func(dir string) (Engine, error) {
			opts := kvOpts()
			opts.BackgroundWALWrites = background
			return OpenKV(dir, opts)
		}
	}
	return []WriteMode{
		{Name: WriteModeKV, Engine: EngineKV, Open: openKV(false),
			Promise: "survives: its WAL record is in the file (on Linux, a mapped WAL) before Set returns"},
		{Name: WriteModeKVBackground, Engine: EngineKV, Open: openKV(true),
			Promise: "a prefix survives: at most the last 256 KiB of WAL records are lost"},
		{Name: WriteModePebble, Engine: EnginePebble,
			Promise: "a prefix survives: the records its WAL writer has not yet written are lost, without a bound",
			Open: func(dir string) (Engine, error) {
				return OpenPebble(dir, pebbleOpts(), PebbleGet)
			}},
	}
}

// WriteModeRun says what RunWriteModes does in each mode.
type WriteModeRun struct {
	Keys      int // keys of the NoSync fill
	SyncKeys  int // keys of the Sync fill
	ValueSize int
	Rounds    int    // fills of each kind per mode, the modes alternating
	Gen       KeyGen // the keys and values written
	// Writers is how many goroutines write each fill at once, writer w
	// the keys i ≡ w (mod Writers) in ascending i; 0 means one.
	Writers int
}

// SyncFillKeys returns the keys of a Sync fill beside a NoSync fill of
// keys: a 500th, at least 1000, at most keys. Each Sync Set waits for an
// fsync, so a few thousand take seconds.
func SyncFillKeys(keys int) int { return min(keys, max(keys/500, 1000)) }

// WriteModeResult is one mode's fills.
type WriteModeResult struct {
	Mode     WriteMode
	NoSync   []time.Duration // each round's NoSync fill
	Sync     []time.Duration // each round's Sync fill
	Keys     int             // keys of each NoSync fill
	SyncKeys int             // keys of each Sync fill
	// SyncWALSyncs is each round's WAL syncs during its Sync fill.
	SyncWALSyncs []int64
}

// SetsPerSync returns, for the best round's Sync fill, the Sync Sets per
// sync of the WAL: how many writers shared each (NaN without a round, or
// when the engine counts no syncs).
func (r WriteModeResult) SetsPerSync() float64 {
	if len(r.Sync) == 0 || len(r.SyncWALSyncs) != len(r.Sync) {
		return math.NaN()
	}
	best := slices.Index(r.Sync, slices.Min(r.Sync))
	if r.SyncWALSyncs[best] <= 0 {
		return math.NaN()
	}
	return float64(r.SyncKeys) / float64(r.SyncWALSyncs[best])
}

// NsPerSet returns the best round's time per NoSync Set (NaN without a
// round).
func (r WriteModeResult) NsPerSet() float64 { return bestPer(r.NoSync, r.Keys) }

// NsPerSyncSet returns the best round's time per Sync Set (NaN without a
// round).
func (r WriteModeResult) NsPerSyncSet() float64 { return bestPer(r.Sync, r.SyncKeys) }

// bestPer returns the shortest of rounds in ns per one of n writes.
func bestPer(rounds []time.Duration, n int) float64 {
	if len(rounds) == 0 {
		return math.NaN()
	}
	return NsPerWrite(slices.Min(rounds), n)
}

// NsPerWrite returns d in nanoseconds per one of n writes (NaN when n is
// not positive).
func NsPerWrite(d time.Duration, n int) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(d.Nanoseconds()) / float64(n)
}

// RunWriteModes fills a fresh store of each mode in dir (on fs, which
// must be where the modes' options put their stores), one Set per write
// from run.Writers writers at once: run.Keys NoSync, then, in another
// store, run.SyncKeys Sync. The modes take turns, round after round (in
// reverse order every other round, so that none always runs first), and
// each fill is timed from the first Set to the last one's return, with
// flushes and compactions going on in the background. Every fill is
// checked by reading back a sample of its keys, and each store is removed
// once closed. start (may be nil) shows each fill's progress.
func RunWriteModes(ctx context.Context, fs vfs.FS, dir string, modes []WriteMode, run WriteModeRun,
	start func(desc string, total int64) Progress) ([]WriteModeResult, error) {
	if run.Keys <= 0 || run.SyncKeys <= 0 || run.Rounds <= 0 || run.Writers < 0 {
		return nil, fmt.Errorf("bench: write modes: %d keys, %d Sync keys, %d rounds, %d writers: "+
			"want keys and rounds at least 1, writers at least 0", run.Keys, run.SyncKeys, run.Rounds, run.Writers)
	}
	if start == nil {
		start = func(string, int64) Progress { return nopProgress{} }
	}
	results := make([]WriteModeResult, len(modes))
	for i, m := range modes {
		results[i] = WriteModeResult{Mode: m, Keys: run.Keys, SyncKeys: run.SyncKeys}
	}
	for round := range run.Rounds {
		for k := range modes {
			i := k
			if round%2 == 1 {
				i = len(modes) - 1 - k
			}
			r := &results[i]
			for _, sync := range []bool{false, true} {
				n := run.Keys
				if sync {
					n = run.SyncKeys
				}
				desc := fmt.Sprintf("%s: round %d, %d %s Sets", r.Mode.Name, round+1, n, syncName(sync))
				p := start(desc, int64(n))
				d, syncs, err := fillMode(ctx, fs, fs.PathJoin(dir, fmt.Sprintf("mode%d-%s", i, syncName(sync))), r.Mode, run, n, sync, p)
				p.Done()
				if err != nil {
					return nil, fmt.Errorf("bench: %s, %s fill: %w", r.Mode.Name, syncName(sync), err)
				}
				if sync {
					r.Sync = append(r.Sync, d)
					r.SyncWALSyncs = append(r.SyncWALSyncs, syncs)
				} else {
					r.NoSync = append(r.NoSync, d)
				}
			}
		}
	}
	return results, nil
}

func syncName(sync bool) string {
	if sync {
		return "Sync"
	}
	return "NoSync"
}

// fillMode opens an empty store of mode m in dir, writes keys [0, n) one
// Set each, checks a sample, closes the store and removes dir. Only the
// writes are timed; it also returns the WAL syncs they made.
func fillMode(ctx context.Context, fs vfs.FS, dir string, m WriteMode, run WriteModeRun, n int, sync bool,
	p Progress) (d time.Duration, syncs int64, err error) {
	if err := fs.RemoveAll(dir); err != nil {
		return 0, 0, err
	}
	e, err := m.Open(dir)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		err = errors.Join(err, e.Close(), fs.RemoveAll(dir))
	}()
	before := e.Stats().WALSyncs
	if d, err = fillSets(ctx, e, run, n, sync, p); err != nil {
		return d, 0, err
	}
	return d, e.Stats().WALSyncs - before, checkFill(e, run, n)
}

// fillSets writes keys [0, n) into e, one Set each, from run.Writers
// goroutines at once (at least one), and returns the time from the first
// Set to the last one's return.
func fillSets(ctx context.Context, e Engine, run WriteModeRun, n int, sync bool, p Progress) (time.Duration, error) {
	writers := max(run.Writers, 1)
	var mu gosync.Mutex // serialises p.Add
	add := func(k int) {
		mu.Lock()
		p.Add(k)
		mu.Unlock()
	}
	errs := make([]error, writers)
	var wg gosync.WaitGroup
	t := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = fillShare(ctx, e, run, n, sync, w, writers, add)
		}()
	}
	wg.Wait()
	return time.Since(t), errors.Join(errs...)
}

// fillShare writes writer w's keys of [0, n), those i ≡ w (mod writers),
// reporting each LoadBatch of them to add.
func fillShare(ctx context.Context, e Engine, run WriteModeRun, n int, sync bool, w, writers int, add func(int)) error {
	var key [KeySize]byte
	value := make([]byte, 0, run.ValueSize)
	done := 0
	for i := w; i < n; i += writers {
		if done == LoadBatch {
			if err := ctx.Err(); err != nil {
				return err
			}
			add(done)
			done = 0
		}
		value = run.Gen.Value(value[:0], i, run.ValueSize)
		if err := e.Set(run.Gen.Present(key[:0], i), value, sync); err != nil {
			return err
		}
		done++
	}
	add(done)
	return nil
}

// fillChecks is how many keys checkFill reads back.
const fillChecks = 64

// checkFill reads back keys spread over [0, n), the last one included, and
// fails unless each holds its value.
func checkFill(e Engine, run WriteModeRun, n int) error {
	var key [KeySize]byte
	var want []byte
	for c := range fillChecks + 1 {
		i := min(c*n/fillChecks, n-1)
		got, found, err := e.Get(run.Gen.Present(key[:0], i))
		if err != nil {
			return err
		}
		want = run.Gen.Value(want[:0], i, run.ValueSize)
		if !found || !bytes.Equal(got, want) {
			return fmt.Errorf("key %d of %d written: found %v, value %x, want %x", i, n, found, got, want)
		}
	}
	return nil
}
