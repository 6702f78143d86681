package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
)

// smallTable returns the entries and bytes of a table with several data
// blocks, some Snappy-compressed, tombstones and straddling versions.
func smallTable(t testing.TB, policy bloompolicy.FilterPolicy) ([]testEntry, []byte) {
	var entries []testEntry
	for i := 0; i < 24; i++ {
		k := []byte(fmt.Sprintf("key%02d", i))
		for v := 3; v > 0; v -= 1 + i%2 {
			kind := base.KindSet
			if (i+v)%7 == 0 {
				kind = base.KindDelete
			}
			val := []byte(nil)
			if kind == base.KindSet {
				val = bytes.Repeat([]byte{byte('a' + i%26)}, 4+i%9)
			}
			entries = append(entries, testEntry{base.MakeInternalKey(k, base.SeqNum(10*v+i%3), kind), val})
		}
	}
	// Range tombstones, fragmented, with seqnums among the entries'.
	for _, rd := range []string{"key03#25,RANGEDEL:key05", "key03#15,RANGEDEL:key05", "key05#15,RANGEDEL:key09",
		"key20#31,RANGEDEL:zz"} {
		e, err := parseEntry(rd)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	data := buildBytes(t, entries, WriterOptions{BlockSize: 96, BlockRestartInterval: 3, FilterPolicy: policy})
	if n := countSnappyBlocks(t, data); n == 0 {
		t.Fatal("no Snappy block in the test table")
	}
	return entries, data
}

// countSnappyBlocks counts the data blocks stored compressed.
func countSnappyBlocks(t testing.TB, data []byte) int {
	r := openTable(t, data, ReaderOptions{})
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range l.Data {
		if blockType(data[d.Handle.Offset+d.Handle.Length]) == blockTypeSnappy {
			n++
		}
	}
	return n
}

// verifyTable opens data and reads everything back: iteration both ways,
// a compaction iterator's pass and Get of every key at every seqnum of
// interest. Any error must wrap ErrCorruption; any data returned must be
// exactly right. It returns the first error seen (nil if the damage went
// unnoticed by reads), having also run Check.
func verifyTable(entries []testEntry, data []byte, policy bloompolicy.FilterPolicy) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	r, err := openBytes(data, ReaderOptions{Cache: NewCache(1 << 20), Filters: filters(policy)})
	if err != nil {
		return err
	}
	defer r.Close()
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	note(verifyCompactionIter(r, entries)) // first, while no block is cached
	note(verifyIter(r, entries, true))
	note(verifyIter(r, entries, false))
	note(verifyRangeDels(r, entries))
	for _, e := range entries {
		for _, seq := range []base.SeqNum{base.SeqNumMax, e.key.SeqNum(), e.key.SeqNum() - 1} {
			want, wantFound := modelGet(entries, e.key.UserKey, seq)
			v, kind, found, err := r.Get(e.key.UserKey, seq, nil)
			if err != nil {
				note(err)
				continue
			}
			if found != wantFound || found && (kind != want.key.Kind() || !bytes.Equal(v, want.value)) {
				return fmt.Errorf("wrong answer: Get(%s, %d) = %q %v %v", e.key.UserKey, seq, v, kind, found)
			}
		}
	}
	note(r.Check())
	return first
}

// verifyIter walks the table one way and compares with entries.
func verifyIter(r *Reader, entries []testEntry, forward bool) error {
	it, err := r.NewIter(nil)
	if err != nil {
		return err
	}
	return checkIterEntries(it, entries, forward)
}

// verifyCompactionIter walks the table with a compaction iterator and
// compares with entries.
func verifyCompactionIter(r *Reader, entries []testEntry) error {
	it, err := r.NewIter(&IterOptions{Compaction: true})
	if err != nil {
		return err
	}
	return checkIterEntries(it, entries, true)
}

// checkIterEntries walks it one way, closes it and compares what it
// returned with entries' point entries.
func checkIterEntries(it InternalIterator, entries []testEntry, forward bool) error {
	var got []string
	if forward {
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, fmt.Sprintf("%s=%q", it.Key(), it.Value()))
		}
	} else {
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append([]string{fmt.Sprintf("%s=%q", it.Key(), it.Value())}, got...)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	var want []string
	for _, e := range entries {
		if e.isRangeDel() {
			continue
		}
		want = append(want, fmt.Sprintf("%s=%q", e.key, e.value))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		return fmt.Errorf("wrong answer: iteration (forward %v) returned\n%s", forward, strings.Join(got, "\n"))
	}
	return nil
}

// TestCorruption_EveryByte flips every byte of a small table, three ways.
// Reads must either fail with ErrCorruption or return exactly the right
// data, and since every byte is covered by a checksum, open or Check must
// notice every flip.
func TestCorruption_EveryByte(t *testing.T) {
	for _, policy := range testPolicies(t) {
		t.Run(policyName(policy), func(t *testing.T) {
			entries, data := smallTable(t, policy)
			if err := verifyTable(entries, data, policy); err != nil {
				t.Fatalf("intact table: %v", err)
			}
			xors := []byte{0x01, 0x80, 0xff}
			if testing.Short() {
				xors = xors[2:]
			}
			flips := 0
			for i := range data {
				for _, x := range xors {
					bad := bytes.Clone(data)
					bad[i] ^= x
					err := verifyTable(entries, bad, policy)
					if !errors.Is(err, base.ErrCorruption) {
						t.Fatalf("byte %d ^ %#x: got %v, want corruption", i, x, err)
					}
					if !strings.Contains(err.Error(), "t.sst") || !strings.Contains(err.Error(), "offset") {
						t.Fatalf("byte %d: error names no file and offset: %v", i, err)
					}
					flips++
				}
			}
			t.Logf("%d-byte table, %d flips, all detected", len(data), flips)
		})
	}
}

// TestCorruption_Truncated opens every proper prefix of a table.
func TestCorruption_Truncated(t *testing.T) {
	entries, data := smallTable(t, hashSetPolicy{})
	for n := 0; n < len(data); n++ {
		err := verifyTable(entries, data[:n], hashSetPolicy{})
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d bytes: got %v", n, err)
		}
	}
}

func policyName(p bloompolicy.FilterPolicy) string {
	if p == nil {
		return "none"
	}
	return p.Name()
}

// verifyRangeDels compares the table's range tombstones with the RANGEDEL
// entries.
func verifyRangeDels(r *Reader, entries []testEntry) error {
	var want, got []string
	for _, e := range entries {
		if e.isRangeDel() {
			want = append(want, e.tombstone().String())
		}
	}
	for _, t := range r.RangeDels() {
		got = append(got, t.String())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Errorf("wrong answer: range tombstones %v, want %v", got, want)
	}
	return nil
}

// TestCorruption_NewerFormatVersion opens a sound table whose footer names
// a format version above FormatVersion (checksum fixed up): that is a table
// of a newer bloomkv, reported as ErrNewerFormat, not as corruption. A
// version below the first one is corruption.
func TestCorruption_NewerFormatVersion(t *testing.T) {
	_, data := smallTable(t, nil)
	footerAt := len(data) - FooterLen
	tests := []struct {
		version uint32
		newer   bool
	}{{FormatVersion + 1, true}, {1 << 31, true}, {0, false}}
	for _, tt := range tests {
		bad := bytes.Clone(data)
		f := bad[footerAt:]
		binary.LittleEndian.PutUint32(f[footerHandlesLen:], tt.version)
		binary.LittleEndian.PutUint32(f[footerHandlesLen+4:], checksum(f[:footerHandlesLen+4]))
		_, err := openBytes(bad, ReaderOptions{})
		if got := errors.Is(err, ErrNewerFormat); got != tt.newer || errors.Is(err, base.ErrCorruption) == tt.newer {
			t.Errorf("version %d: got %v, want newer format %v (and corruption %v)", tt.version, err, tt.newer, !tt.newer)
		}
		if !strings.Contains(err.Error(), "t.sst") || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", footerAt)) {
			t.Errorf("version %d: error names no file and offset: %v", tt.version, err)
		}
	}
}
