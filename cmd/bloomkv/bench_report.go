package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/bench"
)

// lookupSnapshot is an engine's cumulative lookup counters, in total and
// per level.
type lookupSnapshot struct {
	Total  lookupCounts
	Levels []lookupCounts // index = level; nil when the engine counts no levels
}

// plus returns s + sign × o, in total and level by level.
func (s lookupSnapshot) plus(o lookupSnapshot, sign int64) lookupSnapshot {
	r := lookupSnapshot{Total: s.Total.plus(o.Total, sign)}
	if len(s.Levels) > 0 || len(o.Levels) > 0 {
		r.Levels = make([]lookupCounts, max(len(s.Levels), len(o.Levels)))
		for i := range r.Levels {
			var a, b lookupCounts
			if i < len(s.Levels) {
				a = s.Levels[i]
			}
			if i < len(o.Levels) {
				b = o.Levels[i]
			}
			r.Levels[i] = a.plus(b, sign)
		}
	}
	return r
}

// lookupRates are the per-lookup figures derived from counters.
type lookupRates struct {
	TablesPerLookup         jsonFloat `json:"tables_considered_per_lookup"`
	FalsePositivesPerLookup jsonFloat `json:"false_positives_per_lookup"`
	BlockReadsPerLookup     jsonFloat `json:"block_reads_per_lookup"`
	ReadsSavedPerLookup     jsonFloat `json:"reads_saved_per_lookup"` // filter negatives per lookup
	FPR                     jsonFloat `json:"fpr"`                    // false positives / (false positives + negatives)
}

func ratesOf(c lookupCounts, gets int64) lookupRates {
	n := float64(gets)
	return lookupRates{
		TablesPerLookup:         jsonFloat(ratio(float64(c.TablesConsidered), n)),
		FalsePositivesPerLookup: jsonFloat(ratio(float64(c.FilterFalsePositives), n)),
		BlockReadsPerLookup:     jsonFloat(ratio(float64(c.BlockReads), n)),
		ReadsSavedPerLookup:     jsonFloat(ratio(float64(c.FilterNegatives), n)),
		FPR:                     jsonFloat(c.observedFPR()),
	}
}

// levelPhase is one level's share of a phase's lookups.
type levelPhase struct {
	Level int `json:"level"`
	lookupRates
	Lookups lookupCounts `json:"counters"`
}

// phase is the lookups of one kind, all of absent or all of present keys,
// in one shape of the LSM.
type phase struct {
	NsPerOp jsonFloat `json:"ns_per_op"`
	lookupRates
	Lookups lookupCounts `json:"counters"`
	Levels  []levelPhase `json:"levels,omitempty"` // levels any lookup reached; none if the engine does not count them
}

// newPhase derives a phase's figures from the counters of its gets lookups
// and the time they took.
func newPhase(c lookupSnapshot, gets int64, elapsed time.Duration) phase {
	c.Total.Gets = gets
	p := phase{
		NsPerOp:     jsonFloat(ratio(float64(elapsed.Nanoseconds()), float64(gets))),
		lookupRates: ratesOf(c.Total, gets),
		Lookups:     c.Total,
	}
	for level, l := range c.Levels {
		if l != (lookupCounts{}) {
			p.Levels = append(p.Levels, levelPhase{Level: level, lookupRates: ratesOf(l, gets), Lookups: l})
		}
	}
	return p
}

// levelShape is one non-empty level of an LSM.
type levelShape = bench.LevelShape

// The shapes of the LSM that bench measures lookups in.
const (
	shapeSettled    = "settled"
	shapeWriteHeavy = "write-heavy"
	shapeCompacted  = "compacted"
)

// tableRange summarizes the number of tables a level held over a phase.
type tableRange struct {
	Min  int       `json:"min"`
	Mean jsonFloat `json:"mean"`
	Max  int       `json:"max"`
}

// shapeResult is the lookups of both kinds in one shape of one store.
type shapeResult struct {
	Shape string       `json:"shape"`
	Keys  int          `json:"keys"` // keys in the store during the lookups
	LSM   []levelShape `json:"lsm"`  // when the lookups began; write-heavy: when they ended
	L0    *tableRange  `json:"l0_tables_during,omitempty"`
	// LSMAfter is the shape after the lookups of a settled or compacted
	// LSM, if background work changed it meanwhile.
	LSMAfter []levelShape `json:"lsm_after,omitempty"`
	Absent   phase        `json:"absent"`
	Present  phase        `json:"present"`
}

// storeBytes returns the bytes of the tables of the shape's LSM.
func (s shapeResult) storeBytes() int64 {
	var n int64
	for _, l := range s.LSM {
		n += l.Bytes
	}
	return n
}

// benchRow is the result of one configuration.
type benchRow struct {
	Config            string        `json:"config"`
	Engine            string        `json:"engine"`
	Filter            string        `json:"filter"`
	NominalBitsPerKey jsonFloat     `json:"nominal_bits_per_key"`
	TargetFPR         jsonFloat     `json:"target_fpr"`
	FilterBitsPerKey  jsonFloat     `json:"filter_bits_per_key"` // 8 × filter bytes / keys, after the last shape
	FilterBytes       int64         `json:"filter_bytes"`
	Keys              int64         `json:"keys"`
	Shapes            []shapeResult `json:"shapes"`
	Growth            []shapeResult `json:"growth,omitempty"` // the settled shape after each load step
	LoadSeconds       jsonFloat     `json:"load_seconds"`
}

// fill completes the row from the footprint of its tables.
func (r *benchRow) fill(fp bench.Footprint, target float64) {
	r.FilterBytes, r.Keys = fp.FilterBytes, fp.Keys
	r.FilterBitsPerKey = jsonFloat(ratio(8*float64(fp.FilterBytes), float64(fp.Keys)))
	r.TargetFPR = jsonFloat(target)
	if r.Filter == filterNone {
		r.FilterBitsPerKey, r.TargetFPR = jsonFloat(math.NaN()), jsonFloat(math.NaN())
	}
}

// shape returns the row's result in the named shape, if measured.
func (r *benchRow) shape(name string) (shapeResult, bool) {
	for _, s := range r.Shapes {
		if s.Shape == name {
			return s, true
		}
	}
	return shapeResult{}, false
}

// benchParams records what a bench run did.
type benchParams struct {
	Keys             int               `json:"keys"`
	WriteHeavyKeys   int               `json:"write_heavy_keys"`
	KeySize          int               `json:"key_size"`
	ValueSize        int               `json:"value_size"`
	Lookups          int               `json:"lookups"`
	TargetFPR        float64           `json:"target_fpr"`
	CacheBytes       int64             `json:"block_cache_bytes"`
	MemTableBytes    int64             `json:"memtable_bytes"`
	TableBytes       int64             `json:"table_bytes"`
	L1Bytes          int64             `json:"l1_bytes"`
	Seed             uint64            `json:"seed"`
	OursBitsPerKey   float64           `json:"bloompolicy_bits_per_key"`
	PebbleBitsPerKey int               `json:"pebble_bloom_bits_per_key"`
	Shapes           map[string]string `json:"shapes"` // how each shape is reached
	Machine          string            `json:"machine"`
}

// benchReport is the whole output of bench.
type benchReport struct {
	Params   benchParams `json:"params"`
	Rows     []benchRow  `json:"results"`
	VsPebble []vsPebble  `json:"vs_pebble,omitempty"`
	// WriteModes is the write-modes section (bench_writemodes.go).
	WriteModes *writeModesSection `json:"write_modes,omitempty"`
	Curves     *fprCurves         `json:"fpr_curves,omitempty"`
	Plot       string             `json:"plot,omitempty"`
	Dir        string             `json:"dir,omitempty"`
	Seconds    jsonFloat          `json:"seconds"`
}

// fprCurves are the standalone filter measurements behind the plot.
type fprCurves struct {
	Keys    int        `json:"keys_per_filter"`
	Queries int        `json:"queries"`
	Ours    []fprPoint `json:"bloompolicy"`
	Pebble  []fprPoint `json:"pebble_bloom"`
}

// vsPebble compares bloomkv with Pebble under the same filter in one shape.
type vsPebble struct {
	Filter  string    `json:"filter"`
	Shape   string    `json:"shape"`
	Absent  jsonFloat `json:"absent_ns_ratio"`  // bloomkv ns/op ÷ Pebble ns/op
	Present jsonFloat `json:"present_ns_ratio"` // bloomkv ns/op ÷ Pebble ns/op
}

// compareWithPebble pairs each Pebble row with the bloomkv row of the same
// filter, shape by shape.
func compareWithPebble(rows []benchRow) []vsPebble {
	var out []vsPebble
	for _, p := range rows {
		if p.Engine != enginePebble {
			continue
		}
		for _, k := range rows {
			if k.Engine == engineKV && k.Filter == p.Filter {
				out = append(out, vsPebbleShapes(p, k)...)
			}
		}
	}
	return out
}

// vsPebbleShapes compares bloomkv's row k with Pebble's row p in each shape
// both measured, in p's order.
func vsPebbleShapes(p, k benchRow) []vsPebble {
	var out []vsPebble
	for _, ps := range p.Shapes {
		ks, ok := k.shape(ps.Shape)
		if !ok {
			continue
		}
		out = append(out, vsPebble{
			Filter:  strings.TrimPrefix(p.Config, "pebble, "),
			Shape:   ps.Shape,
			Absent:  jsonFloat(ratio(float64(ks.Absent.NsPerOp), float64(ps.Absent.NsPerOp))),
			Present: jsonFloat(ratio(float64(ks.Present.NsPerOp), float64(ps.Present.NsPerOp))),
		})
	}
	return out
}

// pair formats an absent / present pair of figures.
func pair(a, b jsonFloat, prec int) string {
	return fmtFloat(float64(a), prec) + " / " + fmtFloat(float64(b), prec)
}

// writeTables prints each table, a blank line before each.
func writeTables(w io.Writer, tables ...*table) error {
	for _, t := range tables {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	return nil
}

// fmtShape formats the non-empty levels of an LSM: "L0: 2 tables, 3.1 MiB; L6: ...".
func fmtShape(levels []levelShape) string {
	if len(levels) == 0 {
		return "empty"
	}
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = fmt.Sprintf("L%d: %d tables, %s", l.Level, l.Tables, fmtBytes(l.Bytes))
	}
	return strings.Join(parts, "; ")
}

// fmtShapeResult formats the LSM a shape's lookups met; for the write-heavy
// shape, the range of L0 tables over the phase too.
func fmtShapeResult(s shapeResult) string {
	text := fmtShape(s.LSM)
	if s.L0 != nil {
		text = fmt.Sprintf("L0 held %d–%d tables (mean %s) during the lookups; at the end %s",
			s.L0.Min, s.L0.Max, fmtFloat(float64(s.L0.Mean), 1), text)
	}
	if s.LSMAfter != nil {
		text += "; changed during the lookups to " + fmtShape(s.LSMAfter)
	}
	return text
}
