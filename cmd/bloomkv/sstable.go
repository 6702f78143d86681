package main

import (
	"errors"
	"fmt"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
)

func (a *app) sstableCommand() *cobra.Command {
	cmd := commandGroup("sstable", "Inspect and verify a table file", "")
	a.addSplitFlag(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "dump FILE",
		Short: "Print a table's properties, layout, index and per-block filter statistics",
		Long: "dump prints the table's properties, where its blocks lie, and for each data " +
			"block its index separator, entries, distinct keys and filter: bytes, bits, " +
			"probes, bits set and the key count estimated from them, n ≈ −(m/k)·ln(1 − X/m) " +
			"for m bits, k probes and X bits set.",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.dumpTable(args[0]) },
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Read every block of a table and verify checksums, decoding, order and filters",
		Args:  exactArgs("FILE"),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.checkTable(args[0]) },
	})
	return cmd
}

// readableFilters are the policies the tool reads tables with: bloomkv's
// own and Pebble's bloom (the bench's third store). Both encodings are
// self-describing, so the bits per key given here do not matter.
func readableFilters() []bloompolicy.FilterPolicy {
	ours, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		panic(err) // a constant argument
	}
	return []bloompolicy.FilterPolicy{ours, pebbleadapter.FromPebble(bloom.FilterPolicy(10))}
}

// openTable opens the table in path with every filter policy the tool
// knows and the comparer --split gives, so that Check verifies the filters
// too; it warns when the table's filters were built under another Split,
// which leaves them unread.
func (a *app) openTable(path string) (*sstable.Reader, int64, error) {
	cmp, err := a.comparer()
	if err != nil {
		return nil, 0, err
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	filters := map[string]bloompolicy.FilterPolicy{}
	for _, p := range readableFilters() {
		filters[p.Name()] = p
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{FileName: path, Filters: filters, Comparer: cmp})
	if errors.Is(err, sstable.ErrNotTable) {
		// Any file may be named here: a CURRENT or a MANIFEST is not a
		// damaged table.
		return nil, 0, fmt.Errorf("%s: not a bloomkv table (%d bytes; a table ends in a %d-byte footer whose magic spells %q)",
			path, st.Size(), sstable.FooterLen, "bloomkv1")
	}
	if err != nil {
		return nil, 0, err
	}
	a.warnSplits(path, []*sstable.Properties{r.Properties()}, cmp)
	return r, st.Size(), nil
}

// checkResult is what check prints with --json.
type checkResult struct {
	File       string `json:"file"`
	OK         bool   `json:"ok"`
	DataBlocks uint64 `json:"data_blocks"`
	Entries    uint64 `json:"entries"`
	// FiltersVerified says whether the filters were checked against their
	// blocks' keys: not for a table without filters, nor for one whose
	// filters the tool does not read (another policy or Split).
	FiltersVerified bool `json:"filters_verified"`
}

func (a *app) checkTable(path string) error {
	r, _, err := a.openTable(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Check(); err != nil {
		return err
	}
	p := r.Properties()
	if a.json {
		return writeJSON(a.stdout, checkResult{path, true, p.NumDataBlocks, p.NumEntries, r.HasFilter()})
	}
	_, err = fmt.Fprintf(a.stdout, "%s: ok: %d data blocks, %d entries; %s\n",
		path, p.NumDataBlocks, p.NumEntries, checkedParts(r.HasFilter(), p.FilterPolicyName))
	return err
}

// checkedParts says what check verified: the filters too only when the
// reader used them, rather than claiming filters it did not read.
func checkedParts(filtersRead bool, policy string) string {
	const parts = "checksums, decoding, key order"
	switch {
	case filtersRead:
		return parts + ", index and filters verified"
	case policy == "":
		return parts + " and index verified; the table has no filters"
	}
	return parts + " and index verified; filters (" + policy + ") not read, so not verified"
}

// filterStats describes one encoded filter, whichever its encoding.
type filterStats struct {
	Bytes         int       `json:"bytes"`
	Bits          int       `json:"bits"`
	Probes        int       `json:"probes"`
	BitsSet       int       `json:"bits_set"`
	EstimatedKeys jsonFloat `json:"estimated_keys"` // from the bits set: −(m/k)·ln(1 − X/m)
}

// inspectFilter decodes a filter of the named policy. ok is false for an
// encoding the tool does not know or bytes that do not decode.
func inspectFilter(policy string, filter []byte) (st filterStats, ok bool) {
	if policy == bloompolicy.EncodingName {
		info, err := bloompolicy.Inspect(filter)
		if err != nil {
			return filterStats{}, false
		}
		return filterStats{Bytes: info.Size, Bits: info.Bits, Probes: info.Probes,
			BitsSet: info.BitsSet, EstimatedKeys: jsonFloat(info.EstimatedKeys)}, true
	}
	if policy == bloom.FilterPolicy(0).Name() {
		info, err := pebbleadapter.InspectPebbleFilter(filter)
		if err != nil {
			return filterStats{}, false
		}
		return filterStats{Bytes: info.Size, Bits: info.Bits, Probes: info.Probes,
			BitsSet: info.BitsSet, EstimatedKeys: jsonFloat(info.EstimatedKeys)}, true
	}
	return filterStats{}, false
}

// countBlockKeys counts, per data block, the entries and the distinct user
// keys (what a block's filter holds), walking the table in order and
// moving to the next block past each index separator.
func countBlockKeys(r *sstable.Reader, l *sstable.Layout) (entries, keys []int, err error) {
	it, err := r.NewIter(nil)
	if err != nil {
		return nil, nil, err
	}
	entries, keys = make([]int, len(l.Data)), make([]int, len(l.Data))
	cmp := sstable.DefaultComparer.Compare
	var prev []byte // the last user key counted in block b
	b, counted := 0, false
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		for b < len(l.Data)-1 && sstable.InternalCompare(cmp, k, l.Data[b].Separator) > 0 {
			b, counted = b+1, false
		}
		entries[b]++
		if !counted || cmp(prev, k.UserKey) != 0 {
			keys[b]++
			prev, counted = append(prev[:0], k.UserKey...), true
		}
	}
	return entries, keys, it.Close()
}

// fmtInternalKey formats an internal key as InternalKey.String does
// ("userkey#seq,KIND", "#max" for the largest sequence number), the user
// key quoted when it is not printable.
func fmtInternalKey(k sstable.InternalKey) string {
	return sstable.InternalKey{UserKey: []byte(fmtKey(k.UserKey)), Trailer: k.Trailer}.String()
}

// fmtEncodedKey formats an encoded internal key from the properties.
func fmtEncodedKey(b []byte) string {
	k, ok := sstable.DecodeInternalKey(b)
	if !ok {
		return fmt.Sprintf("%q (undecodable)", b)
	}
	return fmtInternalKey(k)
}

// tableDump is what dump prints.
type tableDump struct {
	File       string             `json:"file"`
	Size       int64              `json:"size"`
	Properties map[string]string  `json:"properties"`
	Layout     []namedHandle      `json:"layout"`
	Footer     sstable.FooterInfo `json:"footer"`
	Metaindex  []namedHandle      `json:"metaindex"`
	Blocks     []blockDump        `json:"data_blocks"`
	Filters    filterSummary      `json:"filters"`
}

type namedHandle struct {
	Name   string `json:"name"`
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

// blockDump describes one data block and its filter.
type blockDump struct {
	Offset    uint64       `json:"offset"`
	Length    uint64       `json:"length"`
	Entries   int          `json:"entries"`
	Keys      int          `json:"keys"` // distinct user keys: what the filter holds
	Separator string       `json:"separator"`
	Filter    *filterStats `json:"filter"` // nil without a filter, or one the tool cannot decode
}

// filterSummary totals the filters of a table.
type filterSummary struct {
	Policy        string    `json:"policy"`
	Keys          int       `json:"keys"`
	Bytes         uint64    `json:"bytes"` // the filter block as stored, offsets and trailer included
	BitsPerKey    jsonFloat `json:"bits_per_key"`
	EstimatedKeys jsonFloat `json:"estimated_keys"`
}

func (a *app) dumpTable(path string) error {
	r, size, err := a.openTable(path)
	if err != nil {
		return err
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		return err
	}
	entries, keys, err := countBlockKeys(r, l)
	if err != nil {
		return err
	}
	d := newTableDump(path, size, r.Properties(), l, entries, keys)
	if a.json {
		return writeJSON(a.stdout, d)
	}
	return a.writeTableDump(d)
}

func newTableDump(path string, size int64, p *sstable.Properties, l *sstable.Layout, entries, keys []int) *tableDump {
	d := &tableDump{File: path, Size: size, Properties: propertyMap(p), Footer: l.Footer,
		Filters: filterSummary{Policy: l.FilterPolicyName, Bytes: p.FilterSize}}
	d.Layout = append(d.Layout, namedHandle{fmt.Sprintf("data (%d blocks)", len(l.Data)), 0, p.DataSize})
	for _, h := range []struct {
		name string
		h    sstable.BlockHandle
	}{{"filter", l.Filter}, {"properties", l.Properties}, {"rangedel", l.RangeDel},
		{"metaindex", l.Metaindex}, {"index", l.Index}} {
		if h.h != (sstable.BlockHandle{}) {
			d.Layout = append(d.Layout, namedHandle{h.name, h.h.Offset, h.h.Length})
		}
	}
	for _, e := range l.MetaEntries {
		d.Metaindex = append(d.Metaindex, namedHandle{e.Name, e.Handle.Offset, e.Handle.Length})
	}
	var estimated float64
	for i, b := range l.Data {
		bd := blockDump{Offset: b.Handle.Offset, Length: b.Handle.Length, Entries: entries[i],
			Keys: keys[i], Separator: fmtInternalKey(b.Separator)}
		if st, ok := inspectFilter(l.FilterPolicyName, b.Filter); ok && b.Filter != nil {
			bd.Filter = &st
			estimated += float64(st.EstimatedKeys)
		}
		d.Filters.Keys += keys[i]
		d.Blocks = append(d.Blocks, bd)
	}
	d.Filters.BitsPerKey = jsonFloat(ratio(8*float64(p.FilterSize), float64(d.Filters.Keys)))
	d.Filters.EstimatedKeys = jsonFloat(estimated)
	return d
}

// propertyMap lists the properties by the names the table stores them under
// (filter.split only when the filters hold prefixes, as it is stored).
func propertyMap(p *sstable.Properties) map[string]string {
	u := func(x uint64) string { return fmt.Sprint(x) }
	m := map[string]string{
		"comparer":        p.ComparerName,
		"data.blocks":     u(p.NumDataBlocks),
		"data.size":       u(p.DataSize),
		"deletions":       u(p.NumDeletions),
		"entries":         u(p.NumEntries),
		"filter.policy":   p.FilterPolicyName,
		"filter.size":     u(p.FilterSize),
		"index.size":      u(p.IndexSize),
		"key.largest":     fmtEncodedKey(p.LargestKey),
		"key.smallest":    fmtEncodedKey(p.SmallestKey),
		"range-deletions": u(p.NumRangeDeletions),
		"raw.key.size":    u(p.RawKeySize),
		"raw.value.size":  u(p.RawValueSize),
		"seqnum.largest":  u(uint64(p.LargestSeqNum)),
		"seqnum.smallest": u(uint64(p.SmallestSeqNum)),
	}
	if p.FilterSplitName != "" {
		m["filter.split"] = p.FilterSplitName
	}
	return m
}

func (a *app) writeTableDump(d *tableDump) error {
	w := a.stdout
	fmt.Fprintf(w, "%s: %s (%d bytes)\n\nproperties\n", d.File, fmtBytes(d.Size), d.Size)
	t := newTable("name", "value")
	t.indent = "  "
	for _, name := range sortedKeys(d.Properties) {
		t.add(name, d.Properties[name])
	}
	t.write(w)
	fmt.Fprintln(w, "\nlayout")
	t = newTable("block", ">offset", ">length")
	t.indent = "  "
	for _, h := range d.Layout {
		t.add(h.Name, fmt.Sprint(h.Offset), fmt.Sprint(h.Length))
	}
	t.add("footer", fmt.Sprint(d.Footer.Offset), fmt.Sprint(sstable.FooterLen))
	t.write(w)
	fmt.Fprintf(w, "  footer: metaindex %s, index %s, version %d, magic %#016x\n\nmetaindex\n",
		d.Footer.Metaindex, d.Footer.Index, d.Footer.Version, d.Footer.Magic)
	t = newTable("name", ">offset", ">length")
	t.indent = "  "
	for _, h := range d.Metaindex {
		t.add(h.Name, fmt.Sprint(h.Offset), fmt.Sprint(h.Length))
	}
	t.write(w)
	fmt.Fprintln(w, "\ndata blocks (index entries and filters)")
	blockTable(d.Blocks).write(w)
	s := d.Filters
	if s.Policy == "" {
		_, err := fmt.Fprintf(w, "\nno filters: %d keys\n", s.Keys)
		return err
	}
	_, err := fmt.Fprintf(w, "\nfilters (%s): %d keys in %d bytes, %s bits/key; keys estimated from the bits set: %s\n",
		s.Policy, s.Keys, s.Bytes, fmtFloat(float64(s.BitsPerKey), 2), fmtFloat(float64(s.EstimatedKeys), 0))
	return err
}

// blockTable lays out one row per data block: where it lies, what it
// holds, what its filter looks like, and its index separator.
func blockTable(blocks []blockDump) *table {
	t := newTable(">block", ">offset", ">length", ">entries", ">keys", ">filter bytes", ">bits",
		">probes", ">bits set", ">est. keys", "separator")
	for i, b := range blocks {
		f := []string{"-", "-", "-", "-", "-"}
		if b.Filter != nil {
			f = []string{fmt.Sprint(b.Filter.Bytes), fmt.Sprint(b.Filter.Bits), fmt.Sprint(b.Filter.Probes),
				fmt.Sprint(b.Filter.BitsSet), fmtFloat(float64(b.Filter.EstimatedKeys), 1)}
		}
		row := []string{fmt.Sprint(i), fmt.Sprint(b.Offset), fmt.Sprint(b.Length), fmt.Sprint(b.Entries),
			fmt.Sprint(b.Keys)}
		t.add(append(append(row, f...), b.Separator)...)
	}
	return t
}
