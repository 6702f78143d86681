package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// table prints rows of cells as aligned columns: text columns left-aligned,
// numeric ones right-aligned, so figures line up by their last digit.
type table struct {
	indent string // printed before every line
	header []string
	right  []bool // right[i]: column i is right-aligned
	rows   [][]string
}

// newTable returns a table with the given column headers. A header starting
// with '>' marks a right-aligned column (the '>' is not printed).
func newTable(headers ...string) *table {
	t := &table{}
	for _, h := range headers {
		right := strings.HasPrefix(h, ">")
		t.header = append(t.header, strings.TrimPrefix(h, ">"))
		t.right = append(t.right, right)
	}
	return t
}

// add appends a row; it must have one cell per column.
func (t *table) add(cells ...string) {
	if len(cells) != len(t.header) {
		panic(fmt.Sprintf("table: row has %d cells, want %d", len(cells), len(t.header)))
	}
	t.rows = append(t.rows, cells)
}

// write prints the header, a rule and the rows, two spaces between columns
// and no trailing blanks.
func (t *table) write(w io.Writer) error {
	width := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	rule := make([]string, len(width))
	for i, n := range width {
		rule[i] = strings.Repeat("-", n)
	}
	var b strings.Builder
	for _, row := range append([][]string{t.header, rule}, t.rows...) {
		line := make([]string, len(row))
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if t.right[i] {
				line[i] = pad + c
			} else {
				line[i] = c + pad
			}
		}
		b.WriteString(t.indent)
		b.WriteString(strings.TrimRight(strings.Join(line, "  "), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fmtFloat formats x with prec decimals, or "-" when x is not a number
// (a figure that could not be measured).
func fmtFloat(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// fmtPercent formats a rate in [0,1] as a percentage with prec decimals.
func fmtPercent(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(100*x, 'f', prec, 64) + "%"
}

// fmtBytes formats a byte count with a binary unit: 512 B, 8.0 KiB, 1.5 MiB.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// ratio returns a/b, or NaN when b is zero, so that "-" is printed for a
// figure with no denominator.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// jsonFloat is a float64 that encodes NaN and infinities as null, which
// encoding/json otherwise refuses.
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// fmtKey formats a key or value for a person: as is when it is printable
// UTF-8, otherwise Go-quoted (also when it starts with a quote, so the two
// forms cannot be confused) so that binary bytes stay visible and the line
// stays one line.
func fmtKey(b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// lookupCounts are an engine's lookup counters, as kv.LookupMetrics names
// them.
type lookupCounts struct {
	Gets                 int64 `json:"gets"`
	TablesConsidered     int64 `json:"tables_considered"`
	FilterNegatives      int64 `json:"filter_negatives"`
	FilterTruePositives  int64 `json:"filter_true_positives"`
	FilterFalsePositives int64 `json:"filter_false_positives"`
	BlockReads           int64 `json:"block_reads"`
	BlockCacheMisses     int64 `json:"block_cache_misses"`
}

// minus returns the counts accumulated since before.
func (c lookupCounts) minus(before lookupCounts) lookupCounts {
	return lookupCounts{
		Gets:                 c.Gets - before.Gets,
		TablesConsidered:     c.TablesConsidered - before.TablesConsidered,
		FilterNegatives:      c.FilterNegatives - before.FilterNegatives,
		FilterTruePositives:  c.FilterTruePositives - before.FilterTruePositives,
		FilterFalsePositives: c.FilterFalsePositives - before.FilterFalsePositives,
		BlockReads:           c.BlockReads - before.BlockReads,
		BlockCacheMisses:     c.BlockCacheMisses - before.BlockCacheMisses,
	}
}

// observedFPR returns the share of filter checks of absent keys that said
// maybe: false positives / (false positives + negatives), NaN without any.
func (c lookupCounts) observedFPR() float64 {
	return ratio(float64(c.FilterFalsePositives), float64(c.FilterFalsePositives+c.FilterNegatives))
}

// phase is one timed set of lookups, all of absent or all of present keys.
type phase struct {
	NsPerOp             jsonFloat    `json:"ns_per_op"`
	TablesPerLookup     jsonFloat    `json:"tables_considered_per_lookup"`
	BlockReadsPerLookup jsonFloat    `json:"block_reads_per_lookup"`
	ReadsSavedPerLookup jsonFloat    `json:"reads_saved_per_lookup"`
	Lookups             lookupCounts `json:"counters"`
}

// derive computes the per-lookup figures from the counters.
func (p *phase) derive() {
	c, n := p.Lookups, float64(p.Lookups.Gets)
	p.TablesPerLookup = jsonFloat(ratio(float64(c.TablesConsidered), n))
	p.BlockReadsPerLookup = jsonFloat(ratio(float64(c.BlockReads), n))
	p.ReadsSavedPerLookup = jsonFloat(ratio(float64(c.FilterNegatives), n))
}

// footprint is what a store's tables hold once settled.
type footprint struct {
	FilterBytes, Keys int64
	Levels            []levelShape
}

// levelShape is one non-empty level of an LSM.
type levelShape struct {
	Level  int   `json:"level"`
	Tables int   `json:"tables"`
	Bytes  int64 `json:"bytes"`
}

// benchRow is the result of one configuration.
type benchRow struct {
	Config            string       `json:"config"`
	Engine            string       `json:"engine"`
	Filter            string       `json:"filter"`
	NominalBitsPerKey jsonFloat    `json:"nominal_bits_per_key"`
	Absent            phase        `json:"absent"`
	Present           phase        `json:"present"`
	ObservedFPR       jsonFloat    `json:"observed_fpr"` // absent phase: FP / (FP + negatives)
	TargetFPR         jsonFloat    `json:"target_fpr"`
	FilterBitsPerKey  jsonFloat    `json:"filter_bits_per_key"` // 8 × filter bytes / keys
	FilterBytes       int64        `json:"filter_bytes"`
	Keys              int64        `json:"keys"`
	LSM               []levelShape `json:"lsm"`
	LoadSeconds       jsonFloat    `json:"load_seconds"`
	SettleSeconds     jsonFloat    `json:"flush_compact_seconds"`
}

// fill completes the row from the phases' counters and the footprint.
func (r *benchRow) fill(fp footprint, target float64) {
	r.Absent.derive()
	r.Present.derive()
	r.FilterBytes, r.Keys, r.LSM = fp.FilterBytes, fp.Keys, fp.Levels
	r.FilterBitsPerKey = jsonFloat(ratio(8*float64(fp.FilterBytes), float64(fp.Keys)))
	r.ObservedFPR, r.TargetFPR = jsonFloat(math.NaN()), jsonFloat(math.NaN())
	if r.Filter == "none" {
		r.FilterBitsPerKey = jsonFloat(math.NaN())
	} else {
		r.ObservedFPR = jsonFloat(r.Absent.Lookups.observedFPR())
		r.TargetFPR = jsonFloat(target)
	}
}

// benchParams records what a bench run did.
type benchParams struct {
	Keys             int     `json:"keys"`
	KeySize          int     `json:"key_size"`
	ValueSize        int     `json:"value_size"`
	Lookups          int     `json:"lookups"`
	TargetFPR        float64 `json:"target_fpr"`
	CacheBytes       int64   `json:"block_cache_bytes"`
	Seed             uint64  `json:"seed"`
	OursBitsPerKey   float64 `json:"bloompolicy_bits_per_key"`
	PebbleBitsPerKey int     `json:"pebble_bloom_bits_per_key"`
	Procedure        string  `json:"procedure"`
	Machine          string  `json:"machine"`
}

// benchReport is the whole output of bench.
type benchReport struct {
	Params   benchParams `json:"params"`
	Rows     []benchRow  `json:"results"`
	VsPebble []vsPebble  `json:"vs_pebble,omitempty"`
	Curves   *fprCurves  `json:"fpr_curves,omitempty"`
	Plot     string      `json:"plot,omitempty"`
	Dir      string      `json:"dir,omitempty"`
	Seconds  jsonFloat   `json:"seconds"`
}

// fprCurves are the standalone filter measurements behind the plot.
type fprCurves struct {
	Keys    int        `json:"keys_per_filter"`
	Queries int        `json:"queries"`
	Ours    []fprPoint `json:"bloompolicy"`
	Pebble  []fprPoint `json:"pebble_bloom"`
}

// vsPebble compares bloomkv with Pebble under the same filter.
type vsPebble struct {
	Filter  string    `json:"filter"`
	Absent  jsonFloat `json:"absent_ns_ratio"`  // bloomkv ns/op ÷ Pebble ns/op
	Present jsonFloat `json:"present_ns_ratio"` // bloomkv ns/op ÷ Pebble ns/op
}

// compareWithPebble pairs each Pebble row with the bloomkv row of the same
// filter.
func compareWithPebble(rows []benchRow) []vsPebble {
	var out []vsPebble
	for _, p := range rows {
		if p.Engine != "pebble" {
			continue
		}
		for _, k := range rows {
			if k.Engine == "bloomkv" && k.Filter == p.Filter {
				out = append(out, vsPebble{
					Filter:  strings.TrimPrefix(p.Config, "pebble, "),
					Absent:  jsonFloat(ratio(float64(k.Absent.NsPerOp), float64(p.Absent.NsPerOp))),
					Present: jsonFloat(ratio(float64(k.Present.NsPerOp), float64(p.Present.NsPerOp))),
				})
			}
		}
	}
	return out
}

func (a *app) writeBenchReport(rep *benchReport) error {
	rep.VsPebble = compareWithPebble(rep.Rows)
	if a.json {
		return writeJSON(a.stdout, rep)
	}
	w, p := a.stdout, rep.Params
	fmt.Fprintf(w, "bloomkv bench: %d keys of %d B with %d B values; %d absent and %d present lookups; block cache %s; seed %d\n",
		p.Keys, p.KeySize, p.ValueSize, p.Lookups, p.Lookups, fmtBytes(p.CacheBytes), p.Seed)
	fmt.Fprintf(w, "target FPR %s: bloompolicy.New builds %.2f bits/key; Pebble's bloom gets the nearest whole number, %d\n",
		fmtPercent(p.TargetFPR, 2), p.OursBitsPerKey, p.PebbleBitsPerKey)
	fmt.Fprintf(w, "each store: %s\n", p.Procedure)
	fmt.Fprintf(w, "machine: %s\n\n", p.Machine)
	if err := benchTable(rep.Rows).write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nper-lookup columns: absent / present. FPR: absent lookups, false positives / (false positives + negatives).\n")
	fmt.Fprintf(w, "\nLSM during the lookups:\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "  %-*s  %s\n", configWidth(rep.Rows), r.Config, fmtShape(r.LSM))
	}
	if len(rep.VsPebble) > 0 {
		fmt.Fprint(w, "\nPebble rows: lookups by SeekPrefixGE on one iterator with UseL6Filters "+
			"(Pebble's DB.Get skips L6 filters); tables = filter checks; block reads = all block-cache "+
			"accesses, index and filter blocks included; the cache has room for Pebble's two memtables "+
			"on top of --cache, since Pebble charges them to it.\n\n")
		t := newTable("bloomkv ÷ Pebble, ns/op", ">absent", ">present")
		for _, v := range rep.VsPebble {
			t.add(v.Filter, fmtFloat(float64(v.Absent), 2)+"x", fmtFloat(float64(v.Present), 2)+"x")
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	if rep.Plot != "" {
		fmt.Fprintf(w, "\nplot: %s\n", rep.Plot)
	}
	if rep.Dir != "" {
		fmt.Fprintf(w, "stores kept in %s\n", rep.Dir)
	}
	_, err := fmt.Fprintf(w, "\ntotal %.1f s\n", float64(rep.Seconds))
	return err
}

// benchTable lays the rows out as the bench's main table.
func benchTable(rows []benchRow) *table {
	t := newTable("config", ">ns/op absent", ">ns/op present", ">tables/lookup",
		">block reads/lookup", ">reads saved/lookup", ">FPR", ">target", ">bits/key", ">filter bytes")
	pair := func(a, b jsonFloat) string {
		return fmtFloat(float64(a), 2) + " / " + fmtFloat(float64(b), 2)
	}
	for _, r := range rows {
		t.add(r.Config,
			fmtFloat(float64(r.Absent.NsPerOp), 0), fmtFloat(float64(r.Present.NsPerOp), 0),
			pair(r.Absent.TablesPerLookup, r.Present.TablesPerLookup),
			pair(r.Absent.BlockReadsPerLookup, r.Present.BlockReadsPerLookup),
			pair(r.Absent.ReadsSavedPerLookup, r.Present.ReadsSavedPerLookup),
			fmtPercent(float64(r.ObservedFPR), 3), fmtPercent(float64(r.TargetFPR), 2),
			fmtFloat(float64(r.FilterBitsPerKey), 2), fmtBytes(r.FilterBytes))
	}
	return t
}

func configWidth(rows []benchRow) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r.Config))
	}
	return n
}

// fmtShape formats the non-empty levels of an LSM: "L0 2 tables 3.1 MiB, L6 ...".
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

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
