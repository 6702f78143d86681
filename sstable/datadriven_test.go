package sstable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/cockroachdb/datadriven"
)

// ddTable is the state of a datadriven script: the last table built and a
// reader over it.
type ddTable struct {
	data   []byte
	policy bloompolicy.FilterPolicy
	cmp    *base.Comparer
	r      *Reader
}

func (s *ddTable) close() {
	if s.r != nil {
		s.r.Close()
		s.r = nil
	}
}

// TestDataDriven runs the scripts in testdata/: build (entries as
// parseEntry reads them, range tombstones included), get, iter, layout,
// properties, reopen and check. build and reopen take split=slash|none for
// the comparer (itertest.SlashComparer, or bytewise); iter takes stats to
// print what its prefix seeks cost.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s ddTable
		defer s.close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.run(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (s *ddTable) run(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "build":
		return s.build(t, d)
	case "reopen":
		policy := s.policy
		if d.HasArg("filters") {
			var v string
			d.ScanArgs(t, "filters", &v)
			policy = ddPolicy(t, v)
		}
		if d.HasArg("split") {
			s.cmp = ddComparer(t, d)
		}
		s.close()
		return "", s.open(policy)
	case "get":
		return s.get(t, d)
	case "iter":
		return s.iter(t, d)
	case "layout":
		return s.layout()
	case "properties":
		return s.r.Properties().String(), nil
	case "check":
		if err := s.r.Check(); err != nil {
			return "", err
		}
		return "ok\n", nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func ddPolicy(t *testing.T, name string) bloompolicy.FilterPolicy {
	switch name {
	case "hashset":
		return hashSetPolicy{}
	case "always":
		return alwaysPolicy{}
	case "bloom":
		return newBloom(t, 0.01)
	case "none":
		return nil
	}
	t.Fatalf("unknown filter %q", name)
	return nil
}

// ddComparer returns the comparer the split argument names (see
// itertest.ComparerNamed).
func ddComparer(t *testing.T, d *datadriven.TestData) *base.Comparer {
	var v string
	d.ScanArgs(t, "split", &v)
	c, ok := itertest.ComparerNamed(v)
	if !ok {
		t.Fatalf("unknown split %q", v)
	}
	return c
}

func (s *ddTable) open(policy bloompolicy.FilterPolicy) error {
	r, err := openBytes(s.data, ReaderOptions{Cache: NewCache(1 << 20), FileNum: 1, Filters: filters(policy), Comparer: s.cmp})
	s.r = r
	return err
}

func (s *ddTable) build(t *testing.T, d *datadriven.TestData) (string, error) {
	opts := WriterOptions{Compression: NoCompression}
	s.policy, s.cmp = hashSetPolicy{}, base.DefaultComparer
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "split":
			s.cmp = ddComparer(t, d)
		case "block-size":
			d.ScanArgs(t, a.Key, &opts.BlockSize)
		case "restart-interval":
			d.ScanArgs(t, a.Key, &opts.BlockRestartInterval)
		case "filter":
			s.policy = ddPolicy(t, a.Vals[0])
		case "compression":
			opts.Compression = map[string]Compression{"none": NoCompression, "snappy": SnappyCompression}[a.Vals[0]]
		}
	}
	opts.FilterPolicy, opts.Comparer = s.policy, s.cmp
	var entries []testEntry
	var err error
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		e, err := parseEntry(line)
		if err != nil {
			return "", err
		}
		entries = append(entries, e)
	}
	s.close()
	if s.data, err = writeBytes(entries, opts); err != nil {
		return "", err
	}
	if err := s.open(s.policy); err != nil {
		return "", err
	}
	return s.layout()
}

func (s *ddTable) layout() (string, error) {
	l, err := s.r.Layout()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, d := range l.Data {
		fmt.Fprintf(&b, "data %d: %s sep=%s filter=%dB\n", i, d.Handle, fmtKey(d.Separator), len(d.Filter))
	}
	if l.Filter != (BlockHandle{}) {
		fmt.Fprintf(&b, "filter: %s %s\n", l.Filter, l.FilterPolicyName)
	}
	if l.RangeDel != (BlockHandle{}) {
		fmt.Fprintf(&b, "rangedel: %s", l.RangeDel)
		for _, t := range s.r.RangeDels() {
			fmt.Fprintf(&b, " %s", t)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "properties: %s\nmetaindex: %s\nindex: %s\nfooter: %d\n",
		l.Properties, l.Metaindex, l.Index, l.Footer.Offset)
	return b.String(), nil
}

func (s *ddTable) get(t *testing.T, d *datadriven.TestData) (string, error) {
	var seq uint64 = uint64(base.SeqNumMax)
	if d.HasArg("seq") {
		d.ScanArgs(t, "seq", &seq)
	}
	var b strings.Builder
	var total LookupStats
	for _, k := range strings.Fields(d.Input) {
		var st LookupStats
		v, kind, found, err := s.r.Get([]byte(k), base.SeqNum(seq), &st)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "%s: error: %v\n", k, err)
		case !found:
			fmt.Fprintf(&b, "%s: not found", k)
		case kind == base.KindDelete:
			fmt.Fprintf(&b, "%s: deleted", k)
		case kind == base.KindRangeDelete:
			fmt.Fprintf(&b, "%s: range-deleted", k)
		default:
			fmt.Fprintf(&b, "%s: %s", k, v)
		}
		if err == nil {
			fmt.Fprintf(&b, " %s\n", statsString(st))
		}
		total.Add(st)
	}
	fmt.Fprintf(&b, "total: %s\n", statsString(total))
	return b.String(), nil
}

// statsString prints a lookup's counters; prefix matches and skipped
// filters only when there are any.
func statsString(s LookupStats) string {
	var extra string
	if s.PrefixMatches > 0 {
		extra += fmt.Sprintf(" prefix-match=%d", s.PrefixMatches)
	}
	if s.FilterSkipped > 0 {
		extra += fmt.Sprintf(" skipped=%d", s.FilterSkipped)
	}
	return fmt.Sprintf("[neg=%d tp=%d fp=%d%s reads=%d misses=%d rangedel=%d]",
		s.FilterNegatives, s.FilterTruePositives, s.FilterFalsePositives, extra, s.BlockReads, s.BlockCacheMisses,
		s.RangeDelChecks)
}

func (s *ddTable) iter(t *testing.T, d *datadriven.TestData) (string, error) {
	var lower, upper []byte
	if d.HasArg("lower") {
		var v string
		d.ScanArgs(t, "lower", &v)
		lower = []byte(v)
	}
	if d.HasArg("upper") {
		var v string
		d.ScanArgs(t, "upper", &v)
		upper = []byte(v)
	}
	var st LookupStats
	it, err := s.r.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper, Stats: &st})
	if err != nil {
		return "", err
	}
	out, err := itertest.RunOps(it, d.Input, func(it base.InternalIterator) string {
		return fmtKey(it.Key()) + ":" + string(it.Value())
	})
	if err != nil {
		it.Close()
		return "", err
	}
	if d.HasArg("stats") {
		out += fmt.Sprintf("tables=%d %s\n", st.TablesConsidered, statsString(st))
	}
	return out, it.Close()
}

// fmtKey formats a key as base does, but "max" for SeqNumMax.
func fmtKey(k base.InternalKey) string {
	if k.SeqNum() == base.SeqNumMax {
		return fmt.Sprintf("%s#max,%s", k.UserKey, k.Kind())
	}
	return k.String()
}
