package main

import (
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
)

func TestMeasureFilter(t *testing.T) {
	candidates, err := filterCandidates(0.01)
	if err != nil {
		t.Fatal(err)
	}
	kg := bench.NewKeyGen(1)
	for _, c := range candidates {
		r, err := measureFilter(c.policy, kg, 2000, 20000)
		if err != nil {
			t.Fatalf("%s: %v", c.label, err)
		}
		// The probes as stored: bloompolicy's trailer through Inspect,
		// Pebble's in the byte before its 4-byte line count.
		w := c.policy.NewWriter()
		for i := range 2000 {
			w.AddKey(kg.Present(nil, i))
		}
		filter := w.Finish(nil)
		wantProbes := int(filter[len(filter)-5])
		if r.Name == bloompolicy.EncodingName {
			info, err := bloompolicy.Inspect(filter)
			if err != nil {
				t.Fatalf("%s: %v", c.label, err)
			}
			wantProbes = info.Probes
		}
		if r.Probes != wantProbes || r.Probes == 0 {
			t.Errorf("%s: %d probes, want %d", c.label, r.Probes, wantProbes)
		}
		if r.Keys != 2000 || r.Queries != 20000 || float64(r.BitsPerKey) != 8*float64(r.FilterBytes)/2000 {
			t.Errorf("%s: inconsistent %+v", c.label, r)
		}
		if r.FPR > 0.05 || float64(r.FPR) != float64(r.FalsePositives)/20000 {
			t.Errorf("%s: FPR %v from %d false positives", c.label, r.FPR, r.FalsePositives)
		}
	}
}
