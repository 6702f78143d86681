package kv

import (
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestFilterCap_SettledPassesBuildNothing settles stores under a cap, then
// asks for passes over the same tree with no lookup served between them:
// the traffic model and the tree do not change, so once a pass builds
// nothing (within a few passes), no later one builds either. Building a filter
// reads its whole table; a plan that moves a few bytes of room from table
// to table would have every pass over a settled store read tables for
// nothing. With -short (CI's race run, of which its 12 stores were the
// largest part) it checks one store at each cap.
func TestFilterCap_SettledPassesBuildNothing(t *testing.T) {
	const keys, passes = 30_000, 3
	rounds := 4
	if testing.Short() {
		rounds = 1
	}
	seed := testseed.Seed(t)
	stores := 0
	for i := range rounds {
		for _, bits := range []float64{4, 8, 12} {
			capBytes := int64(bits * keys / 8)
			rng := rand.New(rand.NewPCG(seed, uint64(i)<<8|uint64(bits)))
			d := trafficStore(t, bloompolicy.Budget{Bytes: capBytes}, keys, rng)
			// Passes until one builds nothing: the store may have settled
			// while the last pass ran over the tree before, and a pass
			// may follow its plan a build or two short (a filter built
			// larger than estimated), which the next completes.
			settled := false
			for range 4 {
				b := d.filterMem.builds.Load()
				if d.mustPass(t); d.filterMem.builds.Load() == b {
					settled = true
					break
				}
			}
			if !settled {
				t.Errorf("store %d, %v bits/key: every one of 4 passes over a settled tree built filters", i, bits)
			}
			before := d.filterMem.builds.Load()
			for range passes {
				d.mustPass(t)
			}
			if n := d.filterMem.builds.Load() - before; n != 0 {
				t.Errorf("store %d, %v bits/key: %d passes over a settled tree built %d filters", i, bits, passes, n)
			}
			stores++
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stores != 3*rounds {
		t.Fatalf("%d stores checked, want %d", stores, 3*rounds)
	}
}

// mustPass asks for a pass over the filters, as a change of the tree
// does, and waits for it; it fails the test if no pass ran (every pass
// stores a plan).
func (d *DB) mustPass(t *testing.T) {
	t.Helper()
	before := d.filterMem.plans.Load()
	d.mu.Lock()
	d.filterMem.scheduleLocked()
	d.mu.Unlock()
	waitIdle(t, d)
	if d.filterMem.plans.Load() == before {
		t.Fatal("no pass over the filters ran")
	}
}
