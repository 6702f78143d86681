package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestBenchPrefix_Accounting runs bench --prefix on a small store and
// checks its counters: without filters every absent seek inside the key
// range reads a block; with them a read follows only a false positive;
// every present seek finds its user (the run checks the keys) in at least
// one block.
func TestBenchPrefix_Accounting(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"bench", "--prefix", "--keys", "6000", "--lookups", "2000", "--dir", t.TempDir(), "--json"}
	if code := run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep prefixReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Users != 2000 {
		t.Fatalf("%d rows for %d users, want 2 for 2000", len(rep.Rows), rep.Users)
	}
	none, ours := rep.Rows[0].Absent.Lookups, rep.Rows[1].Absent.Lookups
	if none.BlockReads != none.TablesConsidered || none.TablesConsidered < 1900 {
		t.Errorf("no filter: %+v, want a block read per table considered, about one per seek", none)
	}
	if ours.BlockReads != ours.FilterFalsePositives || ours.FilterNegatives < 1900 || ours.FilterTruePositives != 0 {
		t.Errorf("with filters: %+v, want reads only on false positives", ours)
	}
	for _, r := range rep.Rows {
		if p := r.Present.Lookups; p.BlockReads < int64(r.Present.Seeks) {
			t.Errorf("%s: %d block reads for %d present seeks", r.Config, p.BlockReads, r.Present.Seeks)
		}
	}
}
