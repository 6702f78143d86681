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
	PrefixMatches        int64 `json:"prefix_matches"` // a maybe for a block holding the key's prefix, not the key: no false positive
	FilterSkipped        int64 `json:"filter_skipped"` // tables read without their filter: another policy or Split
	BlockReads           int64 `json:"block_reads"`
	BlockCacheMisses     int64 `json:"block_cache_misses"`
}

// minus returns the counts accumulated since before.
func (c lookupCounts) minus(before lookupCounts) lookupCounts {
	return c.plus(before, -1)
}

// plus returns c + sign × o, field by field.
func (c lookupCounts) plus(o lookupCounts, sign int64) lookupCounts {
	return lookupCounts{
		Gets:                 c.Gets + sign*o.Gets,
		TablesConsidered:     c.TablesConsidered + sign*o.TablesConsidered,
		FilterNegatives:      c.FilterNegatives + sign*o.FilterNegatives,
		FilterTruePositives:  c.FilterTruePositives + sign*o.FilterTruePositives,
		FilterFalsePositives: c.FilterFalsePositives + sign*o.FilterFalsePositives,
		PrefixMatches:        c.PrefixMatches + sign*o.PrefixMatches,
		FilterSkipped:        c.FilterSkipped + sign*o.FilterSkipped,
		BlockReads:           c.BlockReads + sign*o.BlockReads,
		BlockCacheMisses:     c.BlockCacheMisses + sign*o.BlockCacheMisses,
	}
}

// observedFPR returns the share of filter checks of blocks without the key
// (nor, under a Split, its prefix) that said maybe: false positives /
// (false positives + negatives), NaN without any. Prefix matches are
// neither: the filter holds prefixes and was right, so this is the
// filter's own rate, comparable with its policy's target.
func (c lookupCounts) observedFPR() float64 {
	return ratio(float64(c.FilterFalsePositives), float64(c.FilterFalsePositives+c.FilterNegatives))
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
