package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// LoadBatch is the number of writes per batch of a load.
const LoadBatch = 1000

// ProgressEvery is how many lookups run between two checks of the context
// and two progress reports, so that neither weighs on the figures.
const ProgressEvery = 4096

// Workload is what the bench command does to every store: load Keys
// present keys with their values (and Extra more during its write-heavy
// shape), and look up Lookups absent keys and Lookups present keys per
// measurement.
type Workload struct {
	Gen                      KeyGen
	Keys, ValueSize, Lookups int
	Extra                    int
}

// NewWorkload returns the workload of seed.
func NewWorkload(seed uint64, keys, valueSize, lookups int) *Workload {
	return &Workload{Gen: NewKeyGen(seed), Keys: keys, ValueSize: valueSize,
		Lookups: lookups, Extra: WriteHeavyKeys(keys)}
}

// WriteHeavyKeys is how many keys the write-heavy shape loads on top of
// keys: a quarter more, at least one batch.
func WriteHeavyKeys(keys int) int { return max(keys/4, LoadBatch) }

// LookupKey appends the key of lookup i: absent key i, or a present key
// among the first n loaded.
func (w *Workload) LookupKey(dst []byte, i, n int, present bool) []byte {
	if present {
		return w.Gen.Present(dst, w.Gen.Index(i, n))
	}
	return w.Gen.Absent(dst, i)
}

// Load writes present keys [lo, hi) into e in index order (random key
// order), in NoSync batches of LoadBatch writes, and reports each batch's
// writes to progress (which may be nil).
func (w *Workload) Load(ctx context.Context, e Engine, lo, hi int, progress func(n int)) error {
	for ; lo < hi; lo += LoadBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(LoadBatch, hi-lo)
		if err := w.LoadBatchAt(e, lo, n); err != nil {
			return err
		}
		if progress != nil {
			progress(n)
		}
	}
	return nil
}

// LoadBatchAt writes present keys [lo, lo+n) in one NoSync batch.
func (w *Workload) LoadBatchAt(e Engine, lo, n int) error {
	var key [KeySize]byte
	var value []byte
	return e.Apply(func(set func(key, value []byte) error) error {
		for i := lo; i < lo+n; i++ {
			value = w.Gen.Value(value[:0], i, w.ValueSize)
			if err := set(w.Gen.Present(key[:0], i), value); err != nil {
				return err
			}
		}
		return nil
	}, false)
}

// LookupRun is a run of lookups: Count of them starting at lookup First,
// of absent keys or of present keys among the first N loaded.
type LookupRun struct {
	Present bool
	N       int
	First   int
	Count   int
}

// RunLookups performs a run of lookups on e and returns the time they took.
// Every answer is checked: a present key must be found with a value of
// the workload's size, an absent one must not be. progress (may be nil)
// hears of every ProgressEvery lookups.
func (w *Workload) RunLookups(ctx context.Context, e Engine, run LookupRun, progress func(n int)) (time.Duration, error) {
	var buf [KeySize]byte
	start := time.Now()
	for i := run.First; i < run.First+run.Count; i++ {
		if (i-run.First)%ProgressEvery == 0 && i > run.First {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if progress != nil {
				progress(ProgressEvery)
			}
		}
		if err := CheckGet(e, w.LookupKey(buf[:0], i, run.N, run.Present), run.Present, w.ValueSize); err != nil {
			return 0, err
		}
	}
	elapsed := time.Since(start)
	if progress != nil && run.Count > 0 {
		progress((run.Count-1)%ProgressEvery + 1)
	}
	return elapsed, nil
}

// CheckGet looks key up in e and returns an error for a failed lookup or a
// wrong answer: found must be present, and a found value valueSize bytes
// long (any size when valueSize is negative).
func CheckGet(e Engine, key []byte, present bool, valueSize int) error {
	v, found, err := e.Get(key)
	switch {
	case err != nil:
		return fmt.Errorf("get %q: %w", key, err)
	case found != present:
		return fmt.Errorf("get %q: found=%t, want %t", key, found, present)
	case found && valueSize >= 0 && len(v) != valueSize:
		return fmt.Errorf("get %q: value of %d bytes, want %d", key, len(v), valueSize)
	}
	return nil
}

// VerifySample checks the values of up to 1000 of the first n keys byte
// for byte. Timed lookups check only their sizes, so as not to time the
// generator.
func (w *Workload) VerifySample(e Engine, n int) error {
	if err := e.Refresh(); err != nil {
		return err
	}
	var key [KeySize]byte
	var want []byte
	for i := 0; i < n; i += max(1, n/1000) {
		k := w.Gen.Present(key[:0], i)
		v, found, err := e.Get(k)
		if err != nil {
			return fmt.Errorf("get %q: %w", k, err)
		}
		want = w.Gen.Value(want[:0], i, w.ValueSize)
		if !found || !bytes.Equal(v, want) {
			return fmt.Errorf("get %q: found=%t, value differs from the one written", k, found)
		}
	}
	return nil
}

// Scan walks the whole store once, forward or backward, and returns the
// number of keys it saw.
func Scan(e Engine, forward bool) (int, error) {
	it, err := e.NewIter()
	if err != nil {
		return 0, err
	}
	first, next := it.First, it.Next
	if !forward {
		first, next = it.Last, it.Prev
	}
	n := 0
	for ok := first(); ok; ok = next() {
		n++
	}
	if err := it.Error(); err != nil {
		return n, errors.Join(err, it.Close())
	}
	return n, it.Close()
}
