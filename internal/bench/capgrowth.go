package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// This file is the growth of a store under a filter cap
// (kv.Options.FilterBudget with Bytes set): keys loaded in steps up to a
// final size, under a cap of a few bits per key of that final size, the
// filter bytes held sampled all along, and the wasted reads per absent
// lookup measured after each step. The cap is the promise under test: the
// bytes held never exceed it, however far the store outgrows it.

// CapGrowthConfig sizes a growth under a cap.
type CapGrowthConfig struct {
	// Steps are the key counts after which the store is settled and
	// measured, ascending; the last is the final size.
	Steps     []int
	ValueSize int // bytes per value
	Lookups   int // absent lookups measured after each step
	// CapBitsPerKey is the cap, in bits per key of the final size.
	CapBitsPerKey float64
	// SampleEvery is the writes between two samples of the filter bytes
	// held; the store is also sampled after every flush and compaction.
	SampleEvery int
	Sizes       Sizes  // the store's sizes (Sizes.KVOptions)
	FS          vfs.FS // where the store lives (nil: Sizes.KVOptions's)
	Dir         string // the store's directory
	Seed        uint64
}

// CapGrowthStep is the store after one step.
type CapGrowthStep struct {
	Keys int
	// MostHeld is the most filter bytes held in any sample of the step
	// (its load and settling), Samples how many were taken.
	MostHeld int64
	Samples  int
	// Held is the filter bytes held once settled, TableFilterBytes those
	// of every table's filter (held or not), TablesNotHeld the tables
	// whose filter the cap leaves out.
	Held, TableFilterBytes, TablesNotHeld int64
	// Built is the filters built in memory during the step (its load,
	// settling and lookups), each a read of its whole table; BuildRead
	// the data-block bytes they read, and CompactRead those the step's
	// compactions read.
	Built, BuildRead, CompactRead int64
	// Wasted is the data-block reads per absent lookup: with no key to
	// find, every read is wasted.
	Wasted float64
	Shape  []LevelShape
	// Load is the time the step's writes and settling took.
	Load time.Duration
}

// CapGrowthResult is a whole growth.
type CapGrowthResult struct {
	CapBytes int64
	Steps    []CapGrowthStep
	// MostHeld and Samples are over all steps; Over counts the samples
	// above the cap (the cap's promise is that there are none).
	MostHeld      int64
	Samples, Over int
}

// heldSampler samples a store's filter bytes held, from the loader and
// from the DB's event listener alike.
type heldSampler struct {
	mu       sync.Mutex
	db       *kv.DB // nil until open
	cap      int64
	most     int64
	samples  int
	over     int
	stepMost int64
	stepN    int
}

// sample reads the bytes held now.
func (s *heldSampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return
	}
	held := s.db.Metrics().Filters.HeldBytes
	s.samples, s.stepN = s.samples+1, s.stepN+1
	s.most, s.stepMost = max(s.most, held), max(s.stepMost, held)
	if held > s.cap {
		s.over++
	}
}

// endStep returns the most held and the samples since the last call.
func (s *heldSampler) endStep() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	most, n := s.stepMost, s.stepN
	s.stepMost, s.stepN = 0, 0
	return most, n
}

// CapGrowth runs a growth under a cap. progress, if not nil, is told of
// each step. It fails if c is invalid or the store fails, not when the
// bytes held exceed the cap: the result's Over says so.
func CapGrowth(ctx context.Context, c CapGrowthConfig, progress func(CapGrowthStep)) (CapGrowthResult, error) {
	if err := c.check(); err != nil {
		return CapGrowthResult{}, err
	}
	final := c.Steps[len(c.Steps)-1]
	res := CapGrowthResult{CapBytes: max(1, int64(c.CapBitsPerKey*float64(final)/8))}
	s := &heldSampler{cap: res.CapBytes}
	db, err := kv.Open(c.Dir, c.options(res.CapBytes, s))
	if err != nil {
		return res, err
	}
	s.mu.Lock()
	s.db = db
	s.mu.Unlock()
	loaded := 0
	for _, n := range c.Steps {
		step, err := c.step(ctx, db, s, loaded, n)
		if err != nil {
			return res, errors.Join(fmt.Errorf("bench: growth under a cap, step %d keys: %w", n, err), db.Close())
		}
		loaded = n
		res.Steps = append(res.Steps, step)
		if progress != nil {
			progress(step)
		}
	}
	s.mu.Lock()
	res.MostHeld, res.Samples, res.Over = s.most, s.samples, s.over
	s.db = nil
	s.mu.Unlock()
	return res, db.Close()
}

// check rejects a config that cannot run.
func (c CapGrowthConfig) check() error {
	switch {
	case len(c.Steps) == 0 || c.Steps[0] <= 0:
		return fmt.Errorf("bench: growth steps %v: want at least one, all positive", c.Steps)
	case c.CapBitsPerKey <= 0:
		return fmt.Errorf("bench: cap of %v bits per key: want a positive cap", c.CapBitsPerKey)
	case c.Lookups <= 0 || c.SampleEvery <= 0:
		return fmt.Errorf("bench: %d lookups, a sample every %d writes: want both positive", c.Lookups, c.SampleEvery)
	}
	for i := 1; i < len(c.Steps); i++ {
		if c.Steps[i] <= c.Steps[i-1] {
			return fmt.Errorf("bench: growth steps %v: want them ascending", c.Steps)
		}
	}
	return nil
}

// options returns the store's options: c.Sizes under a cap of capBytes,
// sampled by s after every flush and compaction.
func (c CapGrowthConfig) options(capBytes int64, s *heldSampler) *kv.Options {
	o := c.Sizes.KVOptions()
	if c.FS != nil {
		o.FS = c.FS
	}
	o.FilterBudget = &bloompolicy.Budget{Bytes: capBytes}
	o.EventListener = &kv.EventListener{
		FlushEnd:      func(kv.FlushInfo) { s.sample() },
		CompactionEnd: func(kv.CompactionInfo) { s.sample() },
	}
	return o
}

// step loads keys [from, to), settles the store and measures it.
func (c CapGrowthConfig) step(ctx context.Context, db *kv.DB, s *heldSampler, from, to int) (CapGrowthStep, error) {
	start, atStart := time.Now(), db.Metrics()
	g := NewKeyGen(c.Seed)
	var key, value []byte
	for i := from; i < to; i++ {
		key, value = g.Present(key[:0], i), g.Value(value[:0], i, c.ValueSize)
		if err := db.Set(key, value, kv.NoSync); err != nil {
			return CapGrowthStep{}, err
		}
		if (i+1)%c.SampleEvery == 0 {
			s.sample()
		}
	}
	if err := db.Flush(); err != nil {
		return CapGrowthStep{}, err
	}
	if err := db.WaitIdle(ctx); err != nil {
		return CapGrowthStep{}, err
	}
	s.sample()
	st := CapGrowthStep{Keys: to, Load: time.Since(start)}
	before := db.Metrics().Lookups.BlockReads
	for i := range c.Lookups {
		key = g.Absent(key[:0], g.Index(i, to))
		if _, err := db.Get(key); !errors.Is(err, kv.ErrNotFound) {
			return st, fmt.Errorf("absent key %s: %v", key, err)
		}
		if (i+1)%c.SampleEvery == 0 {
			s.sample()
		}
	}
	s.sample()
	m := db.Metrics()
	st.Wasted = float64(m.Lookups.BlockReads-before) / float64(c.Lookups)
	st.Held, st.TablesNotHeld = m.Filters.HeldBytes, m.Filters.TablesNotHeld
	st.Built = m.Filters.FiltersBuilt - atStart.Filters.FiltersBuilt
	st.BuildRead = m.Filters.BuildBytesRead - atStart.Filters.BuildBytesRead
	st.CompactRead = m.Compact.BytesRead - atStart.Compact.BytesRead
	for level, l := range m.Levels {
		st.TableFilterBytes += l.FilterBytes
		if l.NumFiles > 0 {
			st.Shape = append(st.Shape, LevelShape{Level: level, Tables: l.NumFiles, Bytes: l.Size})
		}
	}
	st.MostHeld, st.Samples = s.endStep()
	return st, nil
}
