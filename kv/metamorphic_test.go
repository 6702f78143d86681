package kv_test

// A metamorphic test, in the manner of Pebble's internal/metamorphic: one
// random list of operations runs on several stores whose options change
// only how the work is done, never what a read shows, and every read must
// show the same on all of them. The operations are in
// metamorphic_ops_test.go, the stores in metamorphic_store_test.go and
// metamorphic_run_test.go.

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var (
	metaSeeds = flag.Int("metaseeds", 0, "TestMetamorphic: seeds to run (0: the default)")
	metaSteps = flag.Int("metaops", 0, "TestMetamorphic: operations per seed (0: the default)")
)

// TestMetamorphic runs one random list of operations per seed on every
// store of metaConfigs and requires each operation to read the same on
// all: Get results and errors of the DB, of snapshots and of indexed
// batches; iterators over each, with bounds, moved both ways, some kept
// open across later writes, flushes and compactions, SetBounds and
// Refresh among their moves; prefix seeks with Next; and a scan after
// each restart and at the end. The writes are sets, deletes, range
// deletions (inverted ones too), batches, indexed batches applied or
// dropped, ingests of tables (overlapping ones too, which every store
// refuses), flushes and compactions. The stores differ in memtable,
// block and table sizes, compaction triggers and concurrency, open-file
// and cache limits, filters (default, none, a byte cap, per-level
// policies, a 1-bit-per-key Bloom), background WAL writes, a Comparer
// with or without a Split, and what a Restart does: nothing but close
// the snapshots and iterators, Close and Open, a read-only Open (which
// must scan as the store did and refuse a write) then a writable one, or
// a Checkpoint whose copy the store continues on.
//
// What legitimately depends on the options is made the same: a store
// without a Split has no prefix seek, so there a prefix seek is a SeekGE
// with SeekPrefixGE's documented bounds rules and a check of each key's
// prefix; and Restart closes the snapshots and iterators in every store,
// not only those that close the DB. Error messages are compared by the
// sentinel they wrap, as they name files. Ingest's refusals (overlap,
// order, comparer, sequence numbers) do not depend on the options, so
// they are compared as they are.
//
// On a divergence the operations are shrunk to a short list that still
// metaDiverges between the default store and the one that differed, which
// the failure prints with the seed. -seed replays one seed; -metaseeds
// and -metaops run more and longer.
func TestMetamorphic(t *testing.T) {
	seeds, steps := 3, 1000
	if testing.Short() {
		seeds, steps = 1, 400
	}
	if *metaSeeds > 0 {
		seeds = *metaSeeds
	}
	if *metaSteps > 0 {
		steps = *metaSteps
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		ops := metaOps(seed, steps)
		outs := make([][]string, len(metaConfigs))
		for c, cfg := range metaConfigs {
			var s *metaStore
			outs[c], s = runMeta(t, cfg, seed, ops)
			t.Logf("%s: %d flushes, %d compactions", cfg.name, s.flushes, s.compactions)
		}
		for c := 1; c < len(metaConfigs); c++ {
			i := metaFirstDiff(outs[0], outs[c])
			if i < 0 {
				continue
			}
			t.Errorf("seed %d: %s and %s differ at operation %d: %s\n%s: %s\n%s: %s",
				seed, metaConfigs[0].name, metaConfigs[c].name, i, metaOpName(ops, i),
				metaConfigs[0].name, outs[0][i], metaConfigs[c].name, outs[c][i])
			small := shrinkMeta(t, seed, ops[:min(i+1, len(ops))], metaConfigs[c])
			t.Errorf("seed %d: shrunk to %d operations:\n%s", seed, len(small), showMeta(t, seed, small, metaConfigs[c]))
			return
		}
	})
}

// runMeta runs ops on a new store of cfg and returns what each read, and
// last a scan of the store.
func runMeta(t testing.TB, cfg metaConfig, seed uint64, ops []metaOp) ([]string, *metaStore) {
	s := newMetaStore(t, cfg, seed)
	outs := make([]string, 0, len(ops)+1)
	for _, op := range ops {
		outs = append(outs, s.run(op))
	}
	outs = append(outs, "final scan: "+s.scan())
	s.close()
	return outs, s
}

// metaReads is runMeta's reads alone.
func metaReads(t testing.TB, cfg metaConfig, seed uint64, ops []metaOp) []string {
	outs, _ := runMeta(t, cfg, seed, ops)
	return outs
}

func metaFirstDiff(a, b []string) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func metaOpName(ops []metaOp, i int) string {
	if i == len(ops) {
		return "final scan"
	}
	return ops[i].String()
}

// metaDiverges reports whether ops read differently on the default store and
// on cfg.
func metaDiverges(t testing.TB, seed uint64, ops []metaOp, cfg metaConfig) bool {
	return metaFirstDiff(metaReads(t, metaConfigs[0], seed, ops), metaReads(t, cfg, seed, ops)) >= 0
}

// shrinkMeta drops operations, in chunks halving down to one, while the
// rest still diverge, within a bound on the runs it makes.
func shrinkMeta(t testing.TB, seed uint64, ops []metaOp, cfg metaConfig) []metaOp {
	runs := 0
	for chunk := len(ops) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(ops) && runs < 2000; {
			cand := append(append([]metaOp(nil), ops[:i]...), ops[min(i+chunk, len(ops)):]...)
			runs++
			if len(cand) > 0 && metaDiverges(t, seed, cand, cfg) {
				ops = cand
				continue
			}
			i += chunk
		}
	}
	return ops
}

// showMeta lists ops with what each read on the default store and on cfg.
func showMeta(t testing.TB, seed uint64, ops []metaOp, cfg metaConfig) string {
	a, b := metaReads(t, metaConfigs[0], seed, ops), metaReads(t, cfg, seed, ops)
	var sb strings.Builder
	for i := range a {
		mark := " "
		if a[i] != b[i] {
			mark = "!"
		}
		fmt.Fprintf(&sb, "%s %3d %s\n      %s: %s\n", mark, i, metaOpName(ops, i), metaConfigs[0].name, a[i])
		if a[i] != b[i] {
			fmt.Fprintf(&sb, "      %s: %s\n", cfg.name, b[i])
		}
	}
	return sb.String()
}
