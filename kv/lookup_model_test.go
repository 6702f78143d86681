package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// fpPolicy is exactPolicy with false positives on purpose: it also says
// "maybe" for every key ending in '7', so a lookup's false positives are
// known in advance.
type fpPolicy struct{ exactPolicy }

func (*fpPolicy) Name() string { return "test.exact-fp7" }
func (p *fpPolicy) MayContain(filter, key []byte) bool {
	return len(key) > 0 && key[len(key)-1] == '7' || p.exactPolicy.MayContain(filter, key)
}

// lmVersion is one version of a key, or a range tombstone, as the lookup
// model knows it.
type lmVersion struct {
	seq  base.SeqNum
	kind base.Kind
}

// lmTable is what the model knows of one table, read from its file with a
// Reader of its own (so that the store's block cache is left as it was).
type lmTable struct {
	meta      *manifest.FileMetadata
	points    map[string][]lmVersion // newest first
	rangeDels []sstable.RangeTombstone
	hasFilter bool
}

// lmModel predicts what each lookup moves the counters by.
type lmModel struct {
	t        *testing.T
	d        *DB
	fs       vfs.FS
	disabled bool                   // the store reads without filters
	mem      map[string][]lmVersion // the memtable's point versions, newest first
	memDels  []sstable.RangeTombstone
	tables   map[base.FileNum]*lmTable
	read     map[base.FileNum]bool // tables whose data block a lookup has read
}

// TestLookupMetrics_Model drives a store of tiny single-block tables with
// random writes, flushes, compactions and reopens (with filters on, or
// read with DisableFilters), and checks, for every lookup (Get,
// GetAppend, through a Snapshot and an indexed batch), that each level's
// counters and the totals move by exactly what the model predicts from
// the tables' contents and an exact filter whose false positives are
// known (fpPolicy).
func TestLookupMetrics_Model(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	fs := vfs.NewMem()
	o := func(disabled bool) *Options {
		return &Options{FS: fs, FilterPolicy: &fpPolicy{}, DisableFilters: disabled,
			DisableAutomaticCompactions: true, MemTableSize: 4 << 20, BlockSize: 1 << 16}
	}
	d, err := Open("db", o(false))
	must(t, err)
	m := &lmModel{t: t, d: d, fs: fs, mem: map[string][]lmVersion{}, read: map[base.FileNum]bool{}}
	var checked, tableHits, negatives, falsePos, rangeDelChecks, deeper, unfiltered int
	for round := 0; round < 12; round++ {
		if round == 6 || round == 9 || round > 0 && rng.IntN(3) == 0 {
			must(t, m.d.Close())
			m.disabled = round == 6 || round != 9 && rng.IntN(2) == 0
			m.d, err = Open("db", o(m.disabled))
			must(t, err)
			m.mem, m.memDels, m.read = map[string][]lmVersion{}, nil, map[base.FileNum]bool{}
		}
		m.writes(rng, 30)
		snap := m.d.NewSnapshot()
		m.writes(rng, 10)
		if rng.IntN(2) == 0 {
			must(t, m.d.Flush())
			m.mem, m.memDels = map[string][]lmVersion{}, nil
		}
		b := snap.NewIndexedBatch()
		if rng.IntN(2) == 0 {
			b = m.d.NewIndexedBatch()
		}
		inBatch := map[string]bool{}
		for i := 0; i < 3; i++ {
			k := lmKey(rng)
			must(t, b.Set([]byte(k), []byte("b")))
			inBatch[k] = true
		}
		m.loadTables()
		for i := 0; i < 150; i++ {
			key := lmKey(rng)
			how := rng.IntN(5)
			var s *Snapshot
			if how >= 2 {
				s = snap
			}
			if b.snap == nil && how == 4 {
				s = nil
			}
			want := make([]LookupMetrics, manifest.NumLevels)
			if how != 4 || !inBatch[key] {
				seq := base.SeqNum(m.d.visibleSeq.Load())
				if s != nil {
					seq = s.seq
				}
				m.predict(key, seq, want)
			}
			before := m.d.Metrics()
			var err error
			switch how {
			case 0:
				_, err = m.d.Get([]byte(key))
			case 1:
				_, err = m.d.GetAppend(make([]byte, 0, 8), []byte(key))
			case 2:
				_, err = snap.Get([]byte(key))
			case 3:
				_, err = snap.GetAppend(nil, []byte(key))
			case 4:
				_, err = b.Get([]byte(key))
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			after := m.d.Metrics()
			var total LookupMetrics
			for l := range want {
				total.add(want[l])
				got := lookupDelta(after.Levels[l].Lookups, before.Levels[l].Lookups)
				if got != want[l] {
					t.Fatalf("round %d lookup %d (how %d) of %q: L%d moved by\n%+v, want\n%+v\n%s",
						round, i, how, key, l, got, want[l], after)
				}
			}
			total.Gets = 1
			if got := lookupDelta(after.Lookups, before.Lookups); got != total {
				t.Fatalf("round %d lookup %d (how %d) of %q: totals moved by\n%+v, want\n%+v", round, i, how, key, got, total)
			}
			if got := after.BlockCache.Misses - before.BlockCache.Misses; got != total.BlockCacheMisses {
				t.Fatalf("%q: block cache misses %d, lookup counted %d", key, got, total.BlockCacheMisses)
			}
			checked++
			tableHits += int(total.FilterTruePositives)
			negatives += int(total.FilterNegatives)
			falsePos += int(total.FilterFalsePositives)
			rangeDelChecks += int(total.RangeDelChecks)
			for l := 1; l < len(want); l++ {
				deeper += int(want[l].TablesConsidered)
			}
			if m.disabled {
				unfiltered += int(total.BlockReads)
			}
		}
		must(t, snap.Close())
		if round == 4 || rng.IntN(4) == 0 {
			must(t, m.d.Compact([]byte("k"), []byte("l")))
			m.mem, m.memDels = map[string][]lmVersion{}, nil
		}
	}
	must(t, m.d.Close())
	t.Logf("%d lookups checked: %d true positives, %d negatives, %d false positives, %d range-del checks, "+
		"%d tables below L0, %d blocks read without filters",
		checked, tableHits, negatives, falsePos, rangeDelChecks, deeper, unfiltered)
	if tableHits == 0 || negatives == 0 || falsePos == 0 || rangeDelChecks == 0 || deeper == 0 || unfiltered == 0 {
		t.Fatal("the lookups did not exercise every verdict")
	}
}

// lmKey returns one of 40 keys, k00 to k39.
func lmKey(rng *rand.Rand) string { return fmt.Sprintf("k%02d", rng.IntN(40)) }

// writes makes n random writes to the memtable, flushing at times.
func (m *lmModel) writes(rng *rand.Rand, n int) {
	for i := 0; i < n; i++ {
		k := lmKey(rng)
		switch r := rng.IntN(10); {
		case r < 6:
			must(m.t, m.d.Set([]byte(k), []byte("v"), NoSync))
			m.addMem(k, base.KindSet)
		case r < 8:
			must(m.t, m.d.Delete([]byte(k), NoSync))
			m.addMem(k, base.KindDelete)
		case r < 9:
			end := lmKey(rng)
			if end <= k {
				continue
			}
			must(m.t, m.d.DeleteRange([]byte(k), []byte(end), NoSync))
			m.memDels = append(m.memDels, sstable.RangeTombstone{Start: []byte(k), End: []byte(end),
				Seq: base.SeqNum(m.d.visibleSeq.Load())})
		default:
			if len(m.mem) > 0 || len(m.memDels) > 0 {
				must(m.t, m.d.Flush())
				m.mem, m.memDels = map[string][]lmVersion{}, nil
			}
		}
	}
}

func (m *lmModel) addMem(k string, kind base.Kind) {
	v := lmVersion{seq: base.SeqNum(m.d.visibleSeq.Load()), kind: kind}
	m.mem[k] = append([]lmVersion{v}, m.mem[k]...)
}

// loadTables reads every table of the current Version from its file.
func (m *lmModel) loadTables() {
	m.d.mu.Lock()
	v := m.d.mu.versions.current
	v.Ref()
	m.d.mu.Unlock()
	defer m.d.unrefVersion(v)
	old := m.tables
	m.tables = map[base.FileNum]*lmTable{}
	for _, files := range v.Levels {
		for _, f := range files {
			if tb := old[f.FileNum]; tb != nil {
				m.tables[f.FileNum] = tb
				continue
			}
			m.tables[f.FileNum] = m.readTable(f)
		}
	}
}

func (m *lmModel) readTable(meta *manifest.FileMetadata) *lmTable {
	f, err := m.fs.Open("db/" + base.MakeFilename(base.FileTypeTable, meta.FileNum))
	must(m.t, err)
	r, err := sstable.NewReader(f, sstable.ReaderOptions{})
	must(m.t, err)
	defer r.Close()
	layout, err := r.Layout()
	must(m.t, err)
	if len(layout.Data) > 1 {
		m.t.Fatalf("table %s has %d data blocks; the model wants one", meta.FileNum, len(layout.Data))
	}
	tb := &lmTable{meta: meta, points: map[string][]lmVersion{}, rangeDels: r.RangeDels(),
		hasFilter: layout.FilterPolicyName == (&fpPolicy{}).Name()}
	it, err := r.NewIter(nil)
	must(m.t, err)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		tb.points[string(k.UserKey)] = append(tb.points[string(k.UserKey)], lmVersion{k.SeqNum(), k.Kind()})
	}
	must(m.t, it.Close())
	return tb
}

// covered returns the newest of dels covering key visible at seq.
func covered(dels []sstable.RangeTombstone, key string, seq base.SeqNum) (base.SeqNum, bool) {
	var best base.SeqNum
	ok := false
	for _, t := range dels {
		if string(t.Start) <= key && key < string(t.End) && t.Seq <= seq && t.Seq >= best {
			best, ok = t.Seq, true
		}
	}
	return best, ok
}

// visible returns the newest of vs visible at seq.
func visible(vs []lmVersion, seq base.SeqNum) (lmVersion, bool) {
	for _, v := range vs {
		if v.seq <= seq {
			return v, true
		}
	}
	return lmVersion{}, false
}

// predict adds to want, per level, what a lookup of key at seq costs.
// A lookup at the current state (current) sees the memtable as it is; one
// under the snapshot sees the memtable as well, its versions filtered by
// seq.
func (m *lmModel) predict(key string, seq base.SeqNum, want []LookupMetrics) {
	if _, ok := visible(m.mem[key], seq); ok {
		return
	}
	if _, ok := covered(m.memDels, key, seq); ok {
		return
	}
	m.d.mu.Lock()
	v := m.d.mu.versions.current
	v.Ref()
	m.d.mu.Unlock()
	defer m.d.unrefVersion(v)
	l0 := v.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if l0[i].Overlaps(m.d.cmp.Compare, []byte(key), []byte(key)) && m.predictTable(0, l0[i], key, seq, want) {
			return
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		for _, f := range v.Levels[level] {
			if f.Overlaps(m.d.cmp.Compare, []byte(key), []byte(key)) {
				if m.predictTable(level, f, key, seq, want) {
					return
				}
				break
			}
		}
	}
}

// predictTable adds what a lookup of key in table f costs, and reports
// whether the table answered it.
func (m *lmModel) predictTable(level int, f *manifest.FileMetadata, key string, seq base.SeqNum, want []LookupMetrics) bool {
	tb := m.tables[f.FileNum]
	if tb == nil {
		m.t.Fatalf("table %s not loaded", f.FileNum)
	}
	w := &want[level]
	w.TablesConsidered++
	vs := tb.points[key]
	point, found := visible(vs, seq)
	filtered := tb.hasFilter && !m.disabled
	// The last block's index key is the successor of its last key: "l"
	// for every key of the model's, so a lookup lands in the block of
	// any table with point keys.
	lands := len(tb.points) > 0
	switch {
	case !lands:
	case filtered && !(len(vs) > 0 || key[len(key)-1] == '7'):
		w.FilterNegatives++
	default:
		w.BlockReads++
		if !m.read[f.FileNum] {
			w.BlockCacheMisses++
			m.read[f.FileNum] = true
		}
		if filtered && len(vs) > 0 {
			w.FilterTruePositives++
		} else if filtered {
			w.FilterFalsePositives++
		}
	}
	if len(tb.rangeDels) > 0 {
		w.RangeDelChecks++
		if tseq, ok := covered(tb.rangeDels, key, seq); ok && (!found || point.seq < tseq) {
			return true
		}
	}
	return found
}

var _ bloompolicy.FilterPolicy = (*fpPolicy)(nil)
