package kv

import (
	"slices"
	"sync/atomic"
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

// TestGatherBound_Settles checks when a sync's gather settles: every
// sync until two settles in a row bring nobody; then once after skipping
// 16 syncs, 32, 64 and so on up to 1024, for as long as each brings
// nobody; and every sync again once one brings a writer.
func TestGatherBound_Settles(t *testing.T) {
	var g gatherBound
	// run makes n syncs whose settles, if any, bring a writer or not, and
	// returns the syncs that settled.
	run := func(n int, brought bool) []int {
		var settled []int
		for i := range n {
			if g.settles() {
				settled = append(settled, i)
				g.settled(brought)
			}
		}
		return settled
	}
	if got := run(10, true); len(got) != 10 {
		t.Fatalf("settles that bring writers: %v settled of 10, want all", got)
	}
	want := []int{0, 1} // the first miss: the next sync settles too
	for at, skip := 1+16+1, 16; at < 4000; at += skip + 1 {
		want = append(want, at)
		skip = min(2*skip, 1024)
	}
	got := run(4000, false)
	if !slices.Equal(got, want) {
		t.Fatalf("settles that bring nobody: syncs %v settled, want %v", got, want)
	}
	// The next settle, after at most the longest pause, brings a
	// writer: every sync settles again.
	skipped := 0
	for ; !g.settles(); skipped++ {
	}
	g.settled(true)
	if skipped > 1024 {
		t.Fatalf("%d syncs skipped before the next settle, want at most 1024", skipped)
	}
	if got := run(20, false); !slices.Equal(got, []int{0, 1, 18}) {
		t.Fatalf("after a settle that brought a writer: syncs %v settled, want [0 1 18]", got)
	}
}

// TestSettleArrivals checks settling: it yields while each yield brings
// in a writer, stops at the first that brings none, and stops at its
// bound when writers never stop coming.
func TestSettleArrivals(t *testing.T) {
	never := func() bool { return false }
	far := time.Now().Add(time.Hour)
	for _, c := range []struct {
		name    string
		come    int // writers the yields bring in, one each
		brought bool
		yields  int
	}{
		{"nobody comes", 0, false, 1},
		{"three come", 3, true, 4},
	} {
		var arrived atomic.Int32
		yields := 0
		yield := func() {
			if yields++; yields <= c.come {
				arrived.Add(1)
			}
		}
		if got := settleArrivals(arrived.Load, never, far, yield); got != c.brought || yields != c.yields {
			t.Errorf("%s: brought %v after %d yields, want %v after %d", c.name, got, yields, c.brought, c.yields)
		}
	}
	// A writer with every yield, without end: the bound stops it.
	var arrived atomic.Int32
	done := make(chan bool)
	start := time.Now()
	go func() {
		done <- settleArrivals(arrived.Load, never, start.Add(time.Millisecond), func() { arrived.Add(1) })
	}()
	select {
	case brought := <-done:
		if !brought {
			t.Error("a writer came with every yield, yet settling reports none")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("settling went on past its bound while writers kept coming")
	}
	// stop ends it too.
	if settleArrivals(arrived.Load, func() bool { return true }, far, func() { arrived.Add(1) }) {
		t.Error("settling yielded after stop")
	}
}
