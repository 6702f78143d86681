package memtable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/cockroachdb/datadriven"
)

// TestMemTable_DataDriven runs testdata/memtable:
//
//	new                         start an empty table
//	add                         one "key#seq,KIND [value]" a line
//	get seq=<n>                 one user key a line
//	range-dels                  the range tombstones, fragmented
//	iter [lower=k] [upper=k]    one of first, last, next, prev,
//	                            seek-ge <k>, seek-lt <k> a line
func TestMemTable_DataDriven(t *testing.T) {
	var m *MemTable
	datadriven.RunTest(t, "testdata/memtable", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "new":
			m = New(nil)
			return ""
		case "add":
			for _, line := range strings.Split(td.Input, "\n") {
				k, v, _ := strings.Cut(line, " ")
				m.Add(itertest.ParseKey(t, k), []byte(v))
			}
			return fmt.Sprintf("len=%d", m.Len())
		case "get":
			var seq uint64
			td.ScanArgs(t, "seq", &seq)
			var sb strings.Builder
			for _, k := range strings.Split(td.Input, "\n") {
				v, kind, found := m.Get([]byte(k), base.SeqNum(seq))
				switch {
				case !found:
					fmt.Fprintf(&sb, "%s: not found\n", k)
				case kind == base.KindDelete:
					fmt.Fprintf(&sb, "%s: deleted\n", k)
				case kind == base.KindRangeDelete:
					fmt.Fprintf(&sb, "%s: range-deleted\n", k)
				default:
					fmt.Fprintf(&sb, "%s: %s\n", k, v)
				}
			}
			return sb.String()
		case "iter":
			return runIter(t, m, td)
		case "range-dels":
			var sb strings.Builder
			for _, tb := range m.RangeDels() {
				fmt.Fprintf(&sb, "%s\n", tb)
			}
			return sb.String()
		}
		return "unknown command " + td.Cmd
	})
}

func runIter(t *testing.T, m *MemTable, td *datadriven.TestData) string {
	var lower, upper []byte
	if arg, ok := td.Arg("lower"); ok {
		lower = []byte(arg.SingleVal(t))
	}
	if arg, ok := td.Arg("upper"); ok {
		upper = []byte(arg.SingleVal(t))
	}
	it := m.NewIter(lower, upper)
	defer it.Close()
	out, err := itertest.RunOps(it, td.Input, itertest.KeyValue)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMemTable_Add_CopiesKeyAndValue(t *testing.T) {
	m := New(nil)
	k, v := []byte("key"), []byte("value")
	m.Add(base.MakeInternalKey(k, 1, base.KindSet), v)
	copy(k, "xxx")
	copy(v, "zzzzz")
	got, _, found := m.Get([]byte("key"), 1)
	if !found || string(got) != "value" {
		t.Fatalf("Get = %q, %v after the caller reused its buffers", got, found)
	}
}

func TestMemTable_Add_DuplicateErrors(t *testing.T) {
	m := New(nil)
	for i, k := range []base.InternalKey{
		base.MakeInternalKey([]byte("a"), 1, base.KindSet),
		base.MakeInternalKey([]byte("a"), 1, base.KindDelete),
		base.MakeInternalKey([]byte("a"), 2, base.KindSet),
	} {
		if err := m.Add(k, []byte{byte('0' + i)}); err != nil {
			t.Fatalf("Add(%s): %v", k, err)
		}
	}
	size := m.Size()
	err := m.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("x"))
	if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "a#1,SET") {
		t.Fatalf("second Add of a#1,SET = %v, want ErrDuplicateKey naming the key", err)
	}
	if m.Len() != 3 || m.Size() != size {
		t.Fatalf("a refused Add changed the table: %d entries, %d bytes (was 3, %d)", m.Len(), m.Size(), size)
	}
	if v, kind, found := m.Get([]byte("a"), 1); !found || kind != base.KindSet || string(v) != "0" {
		t.Fatalf("Get(a, 1) = %q, %v, %v after a refused duplicate", v, kind, found)
	}
}

func TestMemTable_Get(t *testing.T) {
	m := New(nil)
	m.Add(base.MakeInternalKey([]byte("a"), 5, base.KindSet), []byte("a5"))
	m.Add(base.MakeInternalKey([]byte("a"), 3, base.KindDelete), nil)
	m.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("a1"))
	m.Add(base.MakeInternalKey([]byte("b"), base.SeqNumMax, base.KindSet), []byte("bmax"))
	m.Add(base.MakeInternalKey([]byte(""), 2, base.KindSet), []byte("empty"))
	tests := []struct {
		key   string
		seq   base.SeqNum
		value string
		kind  base.Kind
		found bool
	}{
		{"a", 0, "", 0, false},
		{"a", 1, "a1", base.KindSet, true},
		{"a", 2, "a1", base.KindSet, true},
		{"a", 3, "", base.KindDelete, true},
		{"a", 4, "", base.KindDelete, true},
		{"a", 5, "a5", base.KindSet, true},
		{"a", base.SeqNumMax, "a5", base.KindSet, true},
		{"a", 1<<64 - 1, "a5", base.KindSet, true},
		{"b", base.SeqNumMax - 1, "", 0, false},
		{"b", base.SeqNumMax, "bmax", base.KindSet, true},
		{"", 2, "empty", base.KindSet, true},
		{"", 1, "", 0, false},
		{"aa", 9, "", 0, false},
		{"c", 9, "", 0, false},
	}
	for _, tt := range tests {
		v, kind, found := m.Get([]byte(tt.key), tt.seq)
		if found != tt.found || kind != tt.kind || string(v) != tt.value {
			t.Errorf("Get(%q, %d) = %q, %s, %v; want %q, %s, %v", tt.key, tt.seq, v, kind, found, tt.value, tt.kind, tt.found)
		}
	}
}

func TestMemTable_SizeAndLen(t *testing.T) {
	m := New(nil)
	if m.Size() != 0 || m.Len() != 0 {
		t.Fatalf("empty table: size %d, len %d", m.Size(), m.Len())
	}
	var last int64
	for i := range 1000 {
		m.Add(base.MakeInternalKey([]byte(fmt.Sprintf("key%05d", i)), base.SeqNum(i), base.KindSet), make([]byte, 100))
		if m.Size() <= last+108 {
			t.Fatalf("after %d adds size %d did not grow by the key and value", i+1, m.Size())
		}
		last = m.Size()
	}
	if m.Len() != 1000 {
		t.Fatalf("len %d", m.Len())
	}
	// The overhead per entry stays modest: node plus a few links.
	if perEntry := m.Size()/1000 - 108; perEntry > 160 {
		t.Fatalf("overhead %d bytes per entry", perEntry)
	}
}

func TestMemTable_LargeValues(t *testing.T) {
	m := New(nil)
	big := bytes.Repeat([]byte("v"), maxChunkSize)
	m.Add(base.MakeInternalKey([]byte("big"), 1, base.KindSet), big)
	m.Add(base.MakeInternalKey([]byte("small"), 2, base.KindSet), []byte("s"))
	if v, _, _ := m.Get([]byte("big"), 9); !bytes.Equal(v, big) {
		t.Fatal("large value not returned whole")
	}
	if v, _, _ := m.Get([]byte("small"), 9); string(v) != "s" {
		t.Fatalf("small value %q", v)
	}
}

// TestSlotClasses checks each slot class's layout: the node's links above
// level 0 end where it begins, its key's room follows it, and slotClass
// puts each key in the smallest room that holds it.
func TestSlotClasses(t *testing.T) {
	links := [heightClasses]int{0, 3, maxHeight - 1}
	for h, row := range newPools() {
		for r, p := range row {
			if l, room := p.layout(); l != links[h] || room != r*roomStep {
				t.Errorf("class %d/%d: %d links and %d bytes of room, want %d and %d", h, r, l, room, links[h], r*roomStep)
			}
		}
	}
	for _, tt := range []struct {
		height, keyLen int
		inline         bool
		h, r           int
	}{
		{1, 0, true, 0, 1}, {1, 1, true, 0, 1}, {1, 16, true, 0, 1}, {1, 17, true, 0, 2}, {2, 32, true, 1, 2},
		{4, 33, true, 1, 3}, {5, 48, true, 2, 3}, {maxHeight, 49, true, 2, 4}, {1, maxInlineKey, true, 0, 4},
		{1, 16, false, 0, 0}, {3, maxInlineKey, false, 1, 0}, {6, 1 << 16, false, 2, 0},
	} {
		if h, r := slotClass(tt.height, tt.keyLen, tt.inline); h != tt.h || r != tt.r {
			t.Errorf("slotClass(%d, %d, %v) = %d, %d; want %d, %d", tt.height, tt.keyLen, tt.inline, h, r, tt.h, tt.r)
		}
	}
	if _, room := newPools()[heightClasses-1][roomClasses-1].layout(); MaxEntryOverhead != slotSizes[heightClasses-1][roomClasses-1] || room != maxInlineKey {
		t.Errorf("MaxEntryOverhead %d is not the size of the tallest slot with the most room", MaxEntryOverhead)
	}
}

// TestMemTable_KeysInAndOutOfSlots adds keys of every length around the
// slot rooms, with empty and non-empty values, in two families: keys that
// share their first 8 bytes, whose prefixes tie (each but the first goes
// to a slot with room for it, if short enough), and keys that begin with
// random bytes (none does). Each reads back whole, by Get and by
// iteration in order, with Size counting each key once.
func TestMemTable_KeysInAndOutOfSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := New(nil)
	var want []string
	var size int64
	tied := make(map[string]bool)
	for n := 9; n <= maxInlineKey+20; n++ {
		for _, vlen := range []int{0, 1, 100} {
			shared := append([]byte("tiedtied"), bytes.Repeat([]byte{'x'}, n-9)...)
			random := binary.BigEndian.AppendUint64(nil, rng.Uint64())
			for _, key := range [][]byte{append(shared, byte('a'+vlen%26)), append(random, make([]byte, n-8)...)} {
				val := bytes.Repeat([]byte{byte(n)}, vlen)
				if err := m.Add(base.MakeInternalKey(key, base.SeqNum(len(want)+1), base.KindSet), val); err != nil {
					t.Fatal(err)
				}
				if v, _, found := m.Get(key, base.SeqNumMax); !found || !bytes.Equal(v, val) || v == nil {
					t.Fatalf("%d-byte key: Get = %q, %v; want %q", len(key), v, found, val)
				}
				want = append(want, string(key))
				size += int64(len(key) + vlen)
			}
			tied[string(want[len(want)-2])] = true
		}
	}
	slices.Sort(want)
	i, inSlots := 0, 0
	for x := m.points.head.next(0); x != nil; x = x.next(0) {
		if got := string(x.userKey()); i >= len(want) || got != want[i] {
			t.Fatalf("entry %d is %q, want %q", i, got, want[i])
		}
		if x.inline() {
			inSlots++
			if !tied[string(x.userKey())] || x.keyLen > maxInlineKey {
				t.Errorf("%d-byte key %q is in its slot", x.keyLen, x.userKey())
			}
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("walked %d entries, want %d", i, len(want))
	}
	// Every tied key of up to maxInlineKey bytes but the first added.
	if wantIn := 3*(maxInlineKey-8) - 1; inSlots != wantIn {
		t.Errorf("%d keys in their slots, want %d", inSlots, wantIn)
	}
	if overhead := m.Size() - size; overhead < int64(len(want)*nodeBytes) || overhead > int64(len(want)*MaxEntryOverhead) {
		t.Fatalf("Size %d for %d bytes of keys and values in %d entries", m.Size(), size, len(want))
	}
}

// TestCheckLens checks the lengths a node can hold.
func TestCheckLens(t *testing.T) {
	for _, tt := range []struct {
		keyLen, valueLen int
		ok               bool
	}{
		{0, 0, true}, {math.MaxUint32, math.MaxInt32, true},
		{math.MaxUint32 + 1, 0, false}, {0, math.MaxInt32 + 1, false},
	} {
		if err := checkLens(tt.keyLen, tt.valueLen); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("checkLens(%d, %d) = %v, want ok %v", tt.keyLen, tt.valueLen, err, tt.ok)
		}
	}
}

// TestMemTable_Add_SizesAcrossChunks adds entries whose sizes straddle every
// chunk size the arena grows through, including ones larger than the next
// chunk would be if it only doubled.
func TestMemTable_Add_SizesAcrossChunks(t *testing.T) {
	m := New(nil)
	sizes := []int{1, firstChunkSize - 1, firstChunkSize + 1, 65540, maxChunkSize/4 - 1, maxChunkSize / 4, maxChunkSize/4 + 1}
	for i, n := range sizes {
		key := append(bytes.Repeat([]byte{'k'}, n), byte(i))
		val := bytes.Repeat([]byte{byte(i)}, n)
		m.Add(base.MakeInternalKey(key, base.SeqNum(i+1), base.KindSet), val)
		if v, _, found := m.Get(key, base.SeqNumMax); !found || !bytes.Equal(v, val) {
			t.Fatalf("entry of %d bytes not returned whole", n)
		}
	}
}

func TestMemTable_CustomComparer(t *testing.T) {
	reverse := &base.Comparer{
		Compare: func(a, b []byte) int { return bytes.Compare(b, a) },
		Name:    "reverse",
	}
	m := New(reverse)
	for i, k := range []string{"b", "c", "a"} {
		m.Add(base.MakeInternalKey([]byte(k), base.SeqNum(i+1), base.KindSet), nil)
	}
	var got []string
	it := m.NewIter(nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key().UserKey))
	}
	if strings.Join(got, "") != "cba" {
		t.Fatalf("order %v under a reverse comparer", got)
	}
	// Without prefixes every compare reads keys: each key but the first
	// added ("b") is in its slot.
	for x := m.points.head.next(0); x != nil; x = x.next(0) {
		if x.inline() != (string(x.userKey()) != "b") {
			t.Errorf("key %q: in its slot %v", x.userKey(), x.inline())
		}
	}
}

// TestMemTable_KeyPrefix_Order checks what the search relies on: under
// bytewise order, keys whose prefixes differ order as their prefixes do,
// for keys around the prefix's 8 bytes, of bytes at both ends of the range
// (so zero padding meets real zero bytes); and that a comparer other than
// bytes.Compare gets no prefixes.
func TestMemTable_KeyPrefix_Order(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	m := New(nil)
	key := func() []byte {
		k := make([]byte, rng.IntN(11))
		for i := range k {
			k[i] = []byte{0, 1, 0xfe, 0xff}[rng.IntN(4)]
		}
		return k
	}
	for range 20000 {
		a, b := key(), key()
		pa, pb := m.points.keyPrefix(a), m.points.keyPrefix(b)
		if pa != pb && (pa < pb) != (bytes.Compare(a, b) < 0) {
			t.Fatalf("keys %x and %x order against their prefixes %x and %x", a, b, pa, pb)
		}
	}
	reverse := New(&base.Comparer{Compare: func(a, b []byte) int { return bytes.Compare(b, a) }, Name: "reverse"})
	if p := reverse.points.keyPrefix([]byte("abcdefgh")); p != 0 {
		t.Fatalf("reverse comparer: prefix %x, want none", p)
	}
}

// TestMemTable_AbbreviatedKey checks that a comparer's AbbreviatedKey
// spares the comparer's Compare: keys whose summaries all differ are
// inserted without a single call, where without the summaries every step
// of every insert's search calls it; and that seeks find the keys.
func TestMemTable_AbbreviatedKey(t *testing.T) {
	const n = 2000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*0x9E3779B97F4A7C15) // distinct first 8 bytes
	}
	// compares inserts the keys under a comparer with abbreviate as its
	// AbbreviatedKey, and returns how many times that comparer's Compare
	// was called; then it seeks each of the first 100 keys.
	compares := func(abbreviate func([]byte) uint64) int {
		var calls int
		m := New(&Comparer{Compare: func(a, b []byte) int { calls++; return bytes.Compare(a, b) }, AbbreviatedKey: abbreviate, Name: "counting"})
		var ins Inserter
		for i, k := range keys {
			if err := ins.Add(m, base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), k); err != nil {
				t.Fatal(err)
			}
		}
		inserting := calls
		it := m.NewIter(nil, nil)
		for _, k := range keys[:100] {
			if !it.SeekGE(k) || !bytes.Equal(it.Key().UserKey, k) {
				t.Fatalf("SeekGE(%x) does not find it", k)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return inserting
	}
	if calls := compares(nil); calls < 10*n {
		t.Fatalf("without AbbreviatedKey, %d inserts called Compare %d times; want at least %d", n, calls, 10*n)
	}
	if calls := compares(base.KeyPrefix); calls != 0 {
		t.Fatalf("with AbbreviatedKey, %d inserts called Compare %d times; want none", n, calls)
	}
}

// TestMemTable_Reset fills a table, resets it and fills it again with
// other keys, through one Inserter, many times: the table holds only the
// last fill's entries, range tombstones included, and the fills after
// the first reuse its memory rather than allocate more.
func TestMemTable_Reset(t *testing.T) {
	m := New(nil)
	var ins Inserter
	const n = 3000
	fill := func(round int) {
		t.Helper()
		for i := range n {
			k := fmt.Appendf(nil, "r%d-key%05d", round, (i*7919)%n)
			if err := ins.Add(m, base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), bytes.Repeat(k, 1+i%5)); err != nil {
				t.Fatal(err)
			}
		}
		start, end := fmt.Appendf(nil, "r%d-key00010", round), fmt.Appendf(nil, "r%d-key00020", round)
		if err := ins.Add(m, base.MakeInternalKey(start, n+1, base.KindRangeDelete), end); err != nil {
			t.Fatal(err)
		}
	}
	var (
		chunks int
		slabs  [heightClasses][roomClasses]int
	)
	for round := range 4 {
		if round > 0 {
			m.Reset()
			if m.Len() != 0 || m.Size() != 0 || m.RangeDels() != nil {
				t.Fatalf("round %d: reset table holds %d entries, %d bytes, %d range tombstones", round, m.Len(), m.Size(), len(m.RangeDels()))
			}
		}
		fill(round)
		if m.Len() != n+1 {
			t.Fatalf("round %d: %d entries, want %d", round, m.Len(), n+1)
		}
		it := m.NewIter(nil, nil)
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			want := fmt.Sprintf("r%d-key%05d", round, i)
			if k := it.Key(); string(k.UserKey) != want || !bytes.Equal(it.Value(), bytes.Repeat(k.UserKey, 1+invPerm(i, n)%5)) {
				t.Fatalf("round %d: entry %d is %s=%.20q, want key %s", round, i, k, it.Value(), want)
			}
			i++
		}
		if i != n {
			t.Fatalf("round %d: iterated %d entries, want %d", round, i, n)
		}
		if rd := m.RangeDels(); len(rd) != 1 || !bytes.HasPrefix(rd[0].Start, fmt.Appendf(nil, "r%d-", round)) {
			t.Fatalf("round %d: range tombstones %v", round, rd)
		}
		if _, _, found := m.Get(fmt.Appendf(nil, "r%d-key00001", round-1), base.SeqNumMax); round > 0 && found {
			t.Fatalf("round %d: a key of the fill before the reset is found", round)
		}
		a := &m.arena
		if round == 0 {
			chunks, slabs = len(a.chunks.all), slabCounts(a)
			continue
		}
		if c := len(a.chunks.all); c > chunks+1 {
			t.Fatalf("round %d: %d chunks after a reset, %d before: memory not reused", round, c, chunks)
		}
		for h, row := range slabCounts(a) {
			for r, s := range row {
				if s > slabs[h][r]+1 {
					t.Fatalf("round %d: %d slabs of class %d/%d after a reset, %d before: memory not reused", round, s, h, r, slabs[h][r])
				}
			}
		}
	}
}

// slabCounts returns how many slabs each of a's pools has installed.
func slabCounts(a *arena) (n [heightClasses][roomClasses]int) {
	for h, row := range a.pools {
		for r, p := range row {
			n[h][r] = p.(interface{ slabCount() int }).slabCount()
		}
	}
	return n
}

func (p *pool[T, P]) slabCount() int { return len(p.list.all) }

func (p *pool[T, P]) slabBytes() (sizes []int) {
	var t T
	for _, sl := range p.list.all {
		sizes = append(sizes, len(sl.items)*int(unsafe.Sizeof(t)))
	}
	return sizes
}

// TestArena_SlabsGrow checks that each class's slabs start at about
// firstSlabBytes and double up to maxSlabBytes: a table of a few entries
// takes little memory, whatever classes they fall in, and a large one
// few slabs.
func TestArena_SlabsGrow(t *testing.T) {
	m := New(nil)
	for i := range 20000 {
		k := fmt.Appendf(nil, "%0*d", 1+i%80, i) // every room class
		if err := m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), nil); err != nil {
			t.Fatal(err)
		}
	}
	for h, row := range m.arena.pools {
		for r, p := range row {
			sizes := p.(interface{ slabBytes() []int }).slabBytes()
			if len(sizes) == 0 {
				t.Fatalf("class %d/%d: no slab", h, r)
			}
			slot := slotSizes[h][r]
			want := max(slot, firstSlabBytes/slot*slot)
			for i, got := range sizes {
				if got != want {
					t.Fatalf("class %d/%d: slab %d of %d bytes, want %d (all: %v)", h, r, i, got, want, sizes)
				}
				want = max(slot, min(2*want, maxSlabBytes/slot*slot))
			}
		}
	}
	small := New(nil)
	for i := range 15 {
		small.Add(base.MakeInternalKey(fmt.Appendf(nil, "%0*d", 1+i*5, i), base.SeqNum(i+1), base.KindSet), nil)
	}
	total := 0
	for _, row := range small.arena.pools {
		for _, p := range row {
			for _, n := range p.(interface{ slabBytes() []int }).slabBytes() {
				total += n
			}
		}
	}
	if total > heightClasses*roomClasses*max(firstSlabBytes, MaxEntryOverhead) {
		t.Fatalf("15 entries took %d bytes of slabs", total)
	}
}

// invPerm returns j such that (j*7919)%n == i: the fill index that wrote
// key i.
func invPerm(i, n int) int {
	for j := range n {
		if j*7919%n == i {
			return j
		}
	}
	panic("no inverse")
}

// TestMemTable_Reset_BigFirstEntry checks that after a Reset an entry
// bigger than the first chunks takes a reused chunk that holds it,
// skipping the smaller ones, and reads back whole.
func TestMemTable_Reset_BigFirstEntry(t *testing.T) {
	m := New(nil)
	for i := range 2000 {
		k := fmt.Appendf(nil, "key%05d", i)
		if err := m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), bytes.Repeat(k, 20)); err != nil {
			t.Fatal(err)
		}
	}
	chunks := len(m.arena.chunks.all)
	m.Reset()
	big := bytes.Repeat([]byte("v"), 50<<10) // more than the first chunks hold
	if err := m.Add(base.MakeInternalKey([]byte("big"), 1, base.KindSet), big); err != nil {
		t.Fatal(err)
	}
	if v, _, found := m.Get([]byte("big"), base.SeqNumMax); !found || !bytes.Equal(v, big) {
		t.Fatalf("the big entry reads back as %d bytes, found %v", len(v), found)
	}
	if got := len(m.arena.chunks.all); got != chunks {
		t.Fatalf("%d chunks after the reset, %d before: a new chunk was allocated for the big entry", got, chunks)
	}
}

// TestMemTable_Reset_InserterForgetsSplice adds one entry through an
// Inserter, resets the table and adds another that sorts after it: the
// Inserter must search the emptied table, not link the new entry after
// the old one, whose memory the table reuses. The old entry's tower is
// one level high most times, when the stale splice would look valid, so
// the test tries many times.
func TestMemTable_Reset_InserterForgetsSplice(t *testing.T) {
	for trial := range 64 {
		m := New(nil)
		var ins Inserter
		if err := ins.Add(m, base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("1")); err != nil {
			t.Fatal(err)
		}
		m.Reset()
		if err := ins.Add(m, base.MakeInternalKey([]byte("b"), 2, base.KindSet), []byte("2")); err != nil {
			t.Fatal(err)
		}
		it := m.NewIter(nil, nil)
		if !it.First() || string(it.Key().UserKey) != "b" || it.Next() {
			t.Fatalf("trial %d: the entry added after the reset is not the table's one entry", trial)
		}
	}
}
