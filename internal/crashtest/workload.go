package crashtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// The workload: writer w of a round owns the keys "wWW/kKKKKKK" (its
// two-digit number, a six-digit index below Round.Keys) and issues ops
// 0, 1, 2, ... in turn, each one DB call. Op n of writer w is a function
// of the round's seed, w and n alone, so the parent rebuilds any state of
// the store from the numbers of the ops a child reported acknowledged.

// MaxWriters is the most writers a round may have: the key format gives
// a writer's number two digits.
const MaxWriters = 99

// keyLen is the length of every key, "wWW/kKKKKKK".
const keyLen = len("w00/k000000")

// Value sizes a round draws its values from.
const (
	valuesSmall = iota // under 64 bytes
	valuesMixed        // mostly small, some of kilobytes, a few up to 64 KiB
	valuesLarge        // spread evenly over the magnitudes up to 64 KiB
	valueProfiles
)

// editKind is what an edit does to its writer's keys.
type editKind uint8

const (
	editSet editKind = iota
	editDelete
	editDeleteRange
)

// edit is one change of an op: a Set of key (with a value of valueLen
// filler bytes after its header), a Delete of key, or a DeleteRange of
// the keys [key, end).
type edit struct {
	kind     editKind
	key, end int
	valueLen int
}

// op is one DB call of a writer: a Flush, one Set, Delete or DeleteRange,
// or a Batch of edits applied at once.
type op struct {
	edits  []edit
	flush  bool
	batch  bool
	ingest bool // the edits go into a table, ingested (see Round.ingest)
	sync   bool // acknowledged with kv.Sync, else kv.NoSync
	size   int  // Batch.Len of the edits: what the loss bound counts
}

// op returns op n of writer w.
func (r *Round) op(w, n int) op {
	rng := rand.New(rand.NewPCG(mix(r.Seed, uint64(w)), mix(uint64(n), 0xc2b2ae3d27d4eb4f)))
	if rng.Float64() < r.FlushShare {
		return op{flush: true}
	}
	if rng.Float64() < r.IngestShare {
		o := op{ingest: true, batch: true}
		o.edits = r.batchEdits(rng)
		o.size = batchLen(o.edits)
		return o
	}
	o := op{sync: rng.Float64() < r.SyncShare}
	switch {
	case rng.Float64() < r.BigShare:
		o.edits, o.batch = r.bigEdits(rng)
	case rng.Float64() < r.BatchShare:
		o.edits, o.batch = r.batchEdits(rng), true
	default:
		o.edits = []edit{r.edit(rng)}
	}
	o.size = batchLen(o.edits)
	return o
}

// batchEdits draws the edits of a batch: from 1 to 200, as many batches
// of each order of magnitude.
func (r *Round) batchEdits(rng *rand.Rand) []edit {
	var edits []edit
	for range max(1, min(200, int(math.Exp(rng.Float64()*math.Log(200.99))))) {
		edits = append(edits, r.edit(rng))
	}
	return edits
}

// edit draws one edit: three Sets in four, then Deletes, a few ranges.
func (r *Round) edit(rng *rand.Rand) edit {
	switch u := rng.Float64(); {
	case u < 0.75:
		return edit{kind: editSet, key: rng.IntN(r.Keys), valueLen: r.valueLen(rng)}
	case u < 0.93:
		return edit{kind: editDelete, key: rng.IntN(r.Keys)}
	default:
		start := rng.IntN(r.Keys)
		return edit{kind: editDeleteRange, key: start, end: min(r.Keys, start+1+rng.IntN(1+r.Keys/20))}
	}
}

// bigEdits draws the edits of a big op: 5 to 9 MiB in one batch (more
// than a chunk of a mapped WAL), one Set of 1 MiB, or a batch of 1 MiB.
func (r *Round) bigEdits(rng *rand.Rand) (edits []edit, batch bool) {
	set := func(valueLen int) edit { return edit{kind: editSet, key: rng.IntN(r.Keys), valueLen: valueLen} }
	switch rng.IntN(6) {
	case 0:
		for range 80 + rng.IntN(64) {
			edits = append(edits, set(64<<10))
		}
		return edits, true
	case 1, 2:
		return []edit{set(1 << 20)}, false
	}
	for range 16 {
		edits = append(edits, set(64<<10))
	}
	return edits, true
}

// valueLen draws the filler length of a Set's value.
func (r *Round) valueLen(rng *rand.Rand) int {
	switch r.Values {
	case valuesSmall:
		return rng.IntN(64)
	case valuesMixed:
		switch u := rng.Float64(); {
		case u < 0.80:
			return rng.IntN(100)
		case u < 0.95:
			return 100 + rng.IntN(4000)
		}
		return 4096 + rng.IntN(60<<10)
	}
	return int(math.Exp(rng.Float64() * math.Log(64<<10)))
}

// batchLen is Batch.Len of a batch of edits: its 12-byte header, then
// per edit a kind byte and the key and value (a range's end; nothing for
// a Delete), each after its length as a uvarint.
func batchLen(edits []edit) int {
	n := 12
	for _, e := range edits {
		v := 0
		switch e.kind {
		case editSet:
			v = valueHeaderLen + e.valueLen
		case editDeleteRange:
			v = keyLen
		}
		n += 1 + uvarintLen(keyLen) + keyLen + uvarintLen(v) + v
	}
	return n
}

func uvarintLen(x int) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], uint64(x))
}

// key returns key i of writer w.
func key(w, i int) []byte { return fmt.Appendf(nil, "w%02d/k%06d", w, i) }

// parseKey returns the writer and index of a workload key.
func parseKey(k []byte) (w, i int, ok bool) {
	if len(k) != keyLen || k[0] != 'w' || string(k[3:5]) != "/k" {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(string(k[1:3]))
	i, err2 := strconv.Atoi(string(k[5:]))
	return w, i, err1 == nil && err2 == nil
}

// A value starts with a header naming the Set that wrote it,
// "WW:NNNNNNNNN:JJJ|" (writer, op, edit), and goes on with filler bytes
// drawn from the seed and the header's numbers: a value is right only
// where every byte is the one that Set wrote.
const valueHeaderLen = len("00:000000000:000|")

// value returns the value of edit j of op n of writer w, a Set of
// valueLen filler bytes.
func (r *Round) value(w, n, j, valueLen int) []byte {
	size := valueHeaderLen + valueLen
	v := fmt.Appendf(make([]byte, 0, size+8), "%02d:%09d:%03d|", w, n, j)
	s := mix(mix(r.Seed, uint64(w)<<32|uint64(j)), uint64(n))
	for len(v) < size {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		v = binary.LittleEndian.AppendUint64(v, s)
	}
	return v[:size]
}

// parseValueHeader returns the writer, op and edit a value names.
func parseValueHeader(v []byte) (w, n, j int, ok bool) {
	if len(v) < valueHeaderLen || v[2] != ':' || v[12] != ':' || v[16] != '|' {
		return 0, 0, 0, false
	}
	w, err1 := strconv.Atoi(string(v[:2]))
	n, err2 := strconv.Atoi(string(v[3:12]))
	j, err3 := strconv.Atoi(string(v[13:16]))
	return w, n, j, err1 == nil && err2 == nil && err3 == nil
}

// mix hashes two words into one (SplitMix64's finalizer over their
// combination), so that neighbouring seeds, writers and ops draw
// unrelated streams.
func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ (b + 0x632be59bd9b4e019 + a<<6 + a>>2)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
