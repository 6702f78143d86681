package sstable

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Properties describes a table. The writer stores them in the properties
// block; the reader loads them at open.
type Properties struct {
	// NumEntries counts every entry, tombstones included.
	NumEntries uint64
	// NumDeletions counts the point tombstones.
	NumDeletions uint64
	// NumRangeDeletions counts the range tombstones as stored: one per
	// fragment and sequence number (see Writer.AddRangeDel). They are not
	// entries. Absent (0) in format version 1 tables.
	NumRangeDeletions uint64
	// NumDataBlocks counts the data blocks (and so the filters).
	NumDataBlocks uint64
	// RawKeySize and RawValueSize sum the encoded internal keys and the
	// values as they were added, before prefix compression and Snappy.
	RawKeySize, RawValueSize uint64
	// DataSize, IndexSize and FilterSize are the bytes of the data blocks,
	// the index block and the filter block as stored, trailers included.
	// FilterSize is 0 when the table has no filter.
	DataSize, IndexSize, FilterSize uint64
	// SmallestSeqNum and LargestSeqNum bound the sequence numbers of the
	// entries and the range tombstones.
	SmallestSeqNum, LargestSeqNum SeqNum
	// SmallestKey and LargestKey are the first and last encoded internal
	// keys of the entries (range tombstones not included; the Writer's
	// Metadata bounds both).
	SmallestKey, LargestKey []byte
	// FilterPolicyName names the policy the filters were built with; empty
	// when the table has no filter.
	FilterPolicyName string
	// FilterSplitName names the comparer's Split whose prefixes the
	// filters hold (Comparer.SplitName); empty when they hold whole user
	// keys. Stored only when set, so tables of whole keys, and tables
	// written before prefixes existed, lack it.
	FilterSplitName string
	// ComparerName names the ordering of the user keys.
	ComparerName string
}

// propertyFields lists the stored properties, sorted by name as the block
// requires. Each field points into a Properties.
// Fields marked omitEmpty are not stored when empty.
func propertyFields(p *Properties) []propertyField {
	return []propertyField{
		{"comparer", &p.ComparerName, false},
		{"data.blocks", &p.NumDataBlocks, false},
		{"data.size", &p.DataSize, false},
		{"deletions", &p.NumDeletions, false},
		{"entries", &p.NumEntries, false},
		{"filter.policy", &p.FilterPolicyName, false},
		{"filter.size", &p.FilterSize, false},
		{"filter.split", &p.FilterSplitName, true},
		{"index.size", &p.IndexSize, false},
		{"key.largest", &p.LargestKey, false},
		{"key.smallest", &p.SmallestKey, false},
		{"range-deletions", &p.NumRangeDeletions, false},
		{"raw.key.size", &p.RawKeySize, false},
		{"raw.value.size", &p.RawValueSize, false},
		{"seqnum.largest", &p.LargestSeqNum, false},
		{"seqnum.smallest", &p.SmallestSeqNum, false},
	}
}

// propertyField is one stored property: its name and the Properties field
// it fills.
type propertyField struct {
	name      string
	ptr       any
	omitEmpty bool
}

// encode writes the properties into w as one block's entries.
func (p *Properties) encode(w *blockWriter) {
	var v []byte
	for _, f := range propertyFields(p) {
		v = v[:0]
		switch x := f.ptr.(type) {
		case *uint64:
			v = binary.AppendUvarint(v, *x)
		case *base.SeqNum:
			v = binary.AppendUvarint(v, uint64(*x))
		case *[]byte:
			v = append(v, *x...)
		case *string:
			if f.omitEmpty && *x == "" {
				continue
			}
			v = append(v, *x...)
		}
		w.add([]byte(f.name), v)
	}
}

// decodeProperties parses a properties block. Unknown names are skipped so
// that later versions may add properties.
func decodeProperties(data []byte, file string, off uint64) (Properties, error) {
	var p Properties
	fields := propertyFields(&p)
	var it blockIter
	if err := it.init(data, nil, file, off); err != nil {
		return p, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		i := 0
		for i < len(fields) && fields[i].name != string(it.rawKey) {
			i++
		}
		if i == len(fields) {
			continue
		}
		if err := decodeProperty(fields[i].ptr, it.val); err != nil {
			return p, it.corrupt(it.offset, fmt.Sprintf("property %q: %v", it.rawKey, err))
		}
	}
	return p, it.err
}

// decodeProperty stores one value into the field ptr points to.
func decodeProperty(ptr any, v []byte) error {
	switch x := ptr.(type) {
	case *uint64, *base.SeqNum:
		u, n := binary.Uvarint(v)
		if n <= 0 || n != len(v) {
			return fmt.Errorf("bad number")
		}
		if s, ok := x.(*base.SeqNum); ok {
			*s = base.SeqNum(u)
		} else {
			*x.(*uint64) = u
		}
	case *[]byte:
		*x = append([]byte(nil), v...)
	case *string:
		*x = string(v)
	}
	return nil
}

// String formats the properties one per line as "name: value", keys in
// their internal-key form.
func (p *Properties) String() string {
	var b strings.Builder
	for _, f := range propertyFields(p) {
		switch x := f.ptr.(type) {
		case *uint64:
			fmt.Fprintf(&b, "%s: %d\n", f.name, *x)
		case *base.SeqNum:
			fmt.Fprintf(&b, "%s: %d\n", f.name, *x)
		case *[]byte:
			k, ok := base.DecodeInternalKey(*x)
			if ok {
				fmt.Fprintf(&b, "%s: %s\n", f.name, k)
			} else {
				fmt.Fprintf(&b, "%s: %q\n", f.name, *x)
			}
		case *string:
			if f.omitEmpty && *x == "" {
				continue
			}
			fmt.Fprintf(&b, "%s: %s\n", f.name, *x)
		}
	}
	return b.String()
}
