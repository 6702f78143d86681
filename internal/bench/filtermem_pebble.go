package bench

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// This file runs the filter-memory study's Pebble strategies: Pebble
// v1.1.5 with its own Bloom filter at the same bits per key on every level
// (the uniform baseline inside Pebble), and with the levels' filters sized
// by pebbleadapter.SetLevelFilters for the same memory.
//
// Pebble answers through SeekPrefixGE with UseL6Filters (PebbleSeekPrefix),
// so every table a lookup reaches has its filter checked. Pebble counts no
// data-block reads apart from index and filter blocks, so wasted reads are
// read off its filter counters: every "maybe" reads a data block, and the
// one that found the key was not wasted. Its merging iterator seeks every
// level, so a present key's lookup also checks the levels below the one
// that holds it (bloomkv's Get stops there). Each key is loaded once, so
// that a found key is in one table only.

// The Pebble strategies of the study.
const (
	// StrategyPebbleBloom is Pebble with bloom.FilterPolicy(bits) on every
	// level.
	StrategyPebbleBloom FilterStrategy = "pebble-bloom"
	// StrategyPebbleLevels is Pebble with pebbleadapter.SetLevelFilters
	// sizing each level's filters for a budget of the same bits per key.
	StrategyPebbleLevels FilterStrategy = "pebble+SetLevelFilters"
)

// PebbleStrategies lists the Pebble strategies in the order the study
// reports them.
var PebbleStrategies = []FilterStrategy{StrategyPebbleBloom, StrategyPebbleLevels}

// pebbleEntryOverhead is the bytes a Pebble table spends per entry beyond
// its key and value: the internal key's 8-byte trailer, the block entry's
// varint lengths and a share of the restart points.
const pebbleEntryOverhead = 12

// measurePebble loads one Pebble store with strategy s at bits per key and
// measures every mix on it. Pebble's Bloom filter takes whole bits per
// key, so StrategyPebbleBloom is left out at other memories.
func (c FilterMemConfig) measurePebble(ctx context.Context, s FilterStrategy, bits float64, out *[]FilterMemResult, progress func(FilterMemResult)) error {
	if s == StrategyPebbleBloom && bits != math.Trunc(bits) {
		return nil
	}
	e, err := c.loadPebble(ctx, s, bits)
	if err != nil {
		return fmt.Errorf("bench: %s at %v bits/key: %w", s, bits, err)
	}
	defer e.Close()
	return c.measureMixes(s, bits, out, progress, func(m LookupMix, ranking int) (FilterMemResult, error) {
		return c.measurePebbleMix(e, m, ranking)
	})
}

// pebbleOptions returns the options of a Pebble study store: the sizes of
// the bloomkv stores (filterMemOptions) in memory, with s's filters.
func (c FilterMemConfig) pebbleOptions(s FilterStrategy, bits float64) (*pebble.Options, error) {
	o := filterMemSizes.PebbleOptions()
	o.FS = vfs.NewMem()
	if s == StrategyPebbleBloom {
		WithPebbleFilter(o, bloom.FilterPolicy(int(bits)))
		return o, nil
	}
	err := pebbleadapter.SetLevelFilters(o, pebbleadapter.LevelBudget{
		Budget: bloompolicy.Budget{BitsPerKey: bits}, Keys: int64(c.Keys),
		BytesPerKey: float64(KeySize + c.ValueSize + pebbleEntryOverhead)})
	if err != nil {
		o.Cache.Unref()
	}
	return o, err
}

// loadPebble builds and settles a Pebble store for strategy s.
func (c FilterMemConfig) loadPebble(ctx context.Context, s FilterStrategy, bits float64) (*Pebble, error) {
	o, err := c.pebbleOptions(s, bits)
	if err != nil {
		return nil, err
	}
	e, err := OpenPebble("db", o, PebbleSeekPrefix)
	if err != nil {
		return nil, err
	}
	g := NewKeyGen(c.Seed)
	var key, value []byte
	for i := range c.Keys {
		key, value = g.Present(key[:0], i), g.Value(value[:0], i, c.ValueSize)
		if err := e.Set(key, value, false); err != nil {
			return nil, errors.Join(err, e.Close())
		}
	}
	if err := e.Flush(); err == nil {
		err = e.WaitIdle(ctx)
	}
	if err == nil {
		err = e.Refresh()
	}
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// measurePebbleMix runs c.Lookups lookups of mix m on its ranking in e and
// reports what they wasted.
func (c FilterMemConfig) measurePebbleMix(e *Pebble, m LookupMix, ranking int) (FilterMemResult, error) {
	before := e.DB.Metrics().Filter
	found, err := c.lookupsWith(func(key []byte) (bool, error) {
		_, ok, err := e.Get(key)
		return ok, err
	}, m, ranking, c.Keys, c.Lookups, 2)
	if err != nil {
		return FilterMemResult{}, err
	}
	after := e.DB.Metrics().Filter
	r := FilterMemResult{Mix: m}
	r.Wasted = float64(after.Misses-before.Misses-int64(found)) / float64(c.Lookups)
	fp, err := e.Footprint()
	if err != nil {
		return r, err
	}
	r.FilterBytes = fp.FilterBytes
	r.Spent = 8 * float64(fp.FilterBytes) / float64(fp.Keys)
	for _, l := range e.Shape() {
		if l.Level == 0 {
			r.L0Tables = l.Tables
		} else {
			r.Levels++
		}
	}
	return r, nil
}
