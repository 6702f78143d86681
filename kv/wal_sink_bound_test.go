package kv

import (
	"testing"
	"time"
)

// TestGatherBound checks the bound of a sync's wait for the Sync writers
// the last one released: half a sync; halved by each wait that ends
// without them, down to 1/64; restored by one that ends with them; and
// half a sync on every gatherProbe-th wait whatever came before.
func TestGatherBound(t *testing.T) {
	const sync = 64 * time.Microsecond
	var g gatherBound
	for i, c := range []struct {
		gathered bool
		want     time.Duration
	}{
		{false, sync / 2}, // first wait: the whole bound
		{false, sync / 4},
		{false, sync / 8},
		{true, sync / 16}, // the writers came: restored
		{false, sync / 2},
		{false, sync / 4},
		{false, sync / 8},
		{false, sync / 16},
		{false, sync / 32},
		{false, sync / 64},
		{false, sync / 64}, // the floor
		{false, sync / 64},
		{false, sync / 64},
		{false, sync / 64},
		{false, sync / 64},
		{false, sync / 2}, // the 16th wait: a probe
		{false, sync / 64},
		{true, sync / 64},
		{false, sync / 2},
	} {
		if got := g.next(int64(sync)); got != c.want {
			t.Fatalf("wait %d: bound %v, want %v", i+1, got, c.want)
		}
		g.ended(c.gathered)
	}
}
