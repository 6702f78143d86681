package pebbleadapter

import (
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
)

// TestToPebble_FilterWriterShapes builds filters of 100,000 keys through
// Pebble's FilterWriter interface, as Pebble's table writer does (every
// version of a key in a row, so each key twice), on sequential keys of
// three shapes, and checks through Pebble's MayContain that every key is
// found, that the filter spends the policy's bits per key (whole lines
// and a trailer byte), and that its bits deliver the target: Inspect's
// estimate within 3% of it, and the absent keys' false positives within
// 6 standard errors of that estimate. The keys are fixed, so the outcome
// is: a regression test, not a statistical one.
func TestToPebble_FilterWriterShapes(t *testing.T) {
	const n, queries = 100_000, 400_000
	shapes := map[string]func(uint64) []byte{
		"be64":    func(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) },
		"le64":    func(i uint64) []byte { return binary.LittleEndian.AppendUint64(nil, i) },
		"decimal": func(i uint64) []byte { return strconv.AppendUint(nil, i, 10) },
	}
	for _, target := range []float64{0.1, 0.01, 0.001} {
		ours, err := bloompolicy.New(target)
		if err != nil {
			t.Fatal(err)
		}
		pp := ToPebble(ours)
		for name, key := range shapes {
			var w pebble.FilterWriter = pp.NewWriter(pebble.TableFilter)
			for i := range uint64(n) {
				w.AddKey(key(i))
				w.AddKey(key(i))
			}
			filter := w.Finish(nil)
			for i := range uint64(n) {
				if !pp.MayContain(pebble.TableFilter, filter, key(i)) {
					t.Fatalf("%s %v: key %d not found", name, ours, i)
				}
			}
			info, err := bloompolicy.Inspect(filter)
			if err != nil || info.EstimatedFPR > 1.03*target {
				t.Errorf("%s %v: %+v, %v; want an estimated rate within 3%% of the target", name, ours, info, err)
			}
			lines := int(float64(n)*ours.BitsPerKey()/512 + 0.999999)
			if len(filter) != 64*lines+1 {
				t.Errorf("%s %v: %d bytes; %.3f bits per key make %d lines and a trailer", name, ours, len(filter), ours.BitsPerKey(), lines)
			}
			fp := 0
			for i := range uint64(queries) {
				if pp.MayContain(pebble.TableFilter, filter, key(n+i)) {
					fp++
				}
			}
			mu := queries * info.EstimatedFPR
			z := (float64(fp) - mu) / math.Sqrt(mu)
			t.Logf("%-7s fpr=%-5g measured %.4e estimated %.4e (%+.1f SE)", name, target, float64(fp)/queries, info.EstimatedFPR, z)
			if z > 6 {
				t.Errorf("%s %v: %d false positives in %d; the filter's bits allow about %.0f", name, ours, fp, queries, mu)
			}
		}
	}
}
