package crashtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/testseed"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// The checks must fail when the store breaks a promise: each test below
// plants a breach, an acknowledged write the store lacks, half a batch,
// a value never written, and the check must find it; beside each, the
// same store against a history it keeps must pass.

// plantRound is a small round without Sync writes or Flushes, so that
// what a test plants decides what the check finds; its ops, of small
// values, are each far below LossBound.
func plantRound(t *testing.T) Round {
	return Round{Seed: testseed.Seed(t), Writers: 2, Keys: 50, Values: valuesSmall, BatchShare: 0.4, MemTableSize: 1 << 20, Kills: 1}
}

// openPlanted opens a store in memory holding ops 0 to last[w] of each
// writer w.
func openPlanted(t *testing.T, r *Round, last ...int) *kv.DB {
	t.Helper()
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), MemTableSize: r.MemTableSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for w, m := range last {
		for n := range m + 1 {
			if err := r.apply(db, "db", w, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

// acked returns acks of ops from to last, one after another in time
// from the moment at, each 10 ns long: the moment after them is at+10k
// for k acks.
func acked(from, last int, at int64) []ack {
	var as []ack
	for n := from; n <= last; n++ {
		as = append(as, ack{n: n, start: at, end: at + 10})
		at += 10
	}
	return as
}

// lostOp returns the first op n of writer w, from n = from on, whose
// loss a check must see: the store holds writer w's keys as op n-1 left
// them, and neither as op n nor as op n+1 leaves them. An ack of ops up
// to n makes n+1 the op in flight, whose state the store may hold, and
// an op n+1 that undoes op n (a Delete of the key op n set) would make
// the loss of op n one no check can tell.
func lostOp(t *testing.T, db *kv.DB, r *Round, w, from int) int {
	t.Helper()
	got, err := readStore(db, r)
	if err != nil {
		t.Fatal(err)
	}
	for n := from; n < from+r.Keys*10; n++ {
		if slices.Equal(statesIn(r, got, w, n-1, n+1), []int{n - 1}) {
			return n
		}
	}
	t.Fatalf("no op of writer %d from %d on changes its keys for good", w, from)
	return 0
}

// judgeStore checks the store against a history of acks.
func judgeStore(t *testing.T, db *kv.DB, r *Round, acks [][]ack) (verdict, error) {
	t.Helper()
	h := newHistory(r)
	if err := h.begin(acks, false); err != nil {
		t.Fatal(err)
	}
	found, err := checkStore(db, r, h.windows())
	if err != nil {
		t.Fatalf("the store of ops 0-9 of each writer, against windows %v: %v", h.windows(), err)
	}
	return h.check(found)
}

// TestCheck_LostAck plants acknowledged ops of writer 0 that the store
// lacks: in the default mode the check must fail; with
// BackgroundWALWrites it must pass and count their bytes as lost.
func TestCheck_LostAck(t *testing.T) {
	r := plantRound(t)
	db := openPlanted(t, &r, 9, 9)
	lost := lostOp(t, db, &r, 0, 10)
	if v, err := judgeStore(t, db, &r, [][]ack{acked(0, 9, 0), acked(0, 9, 0)}); err != nil || v.acks != 20 || v.lost != 0 {
		t.Fatalf("the store holds every op acknowledged, yet: %+v, %v", v, err)
	}
	acks := [][]ack{acked(0, lost, 0), acked(0, 9, 0)}
	if v, err := judgeStore(t, db, &r, acks); err == nil || !strings.Contains(err.Error(), "writer 0 holds the state of op") {
		t.Errorf("writer 0's ops 10 to %d acknowledged and lost, in the default mode: %+v, %v; want an error naming writer 0", lost, v, err)
	}
	// The store holds the state of op lost-1, so the least loss that
	// explains it is op lost alone.
	r.BackgroundWAL = true
	want := r.op(0, lost).size
	v, err := judgeStore(t, db, &r, acks)
	if err != nil || v.lost != want {
		t.Errorf("writer 0's ops 10 to %d lost with BackgroundWALWrites: %+v, %v; want op %d's %d bytes lost", lost, v, err, lost, want)
	}
}

// TestCheck_BackgroundLossBreaches plants losses BackgroundWALWrites does
// not allow: an acknowledged Sync write, and more than LossBound bytes.
func TestCheck_BackgroundLossBreaches(t *testing.T) {
	r := plantRound(t)
	r.BackgroundWAL = true
	db := openPlanted(t, &r, 9, 9)
	lost := lostOp(t, db, &r, 0, 10)
	synced := r
	synced.SyncShare = 1 // the same edits, each acknowledged with Sync
	if v, err := judgeStore(t, db, &synced, [][]ack{acked(0, lost, 0), acked(0, 9, 0)}); err == nil {
		t.Errorf("acknowledged Sync ops 10 to %d of writer 0 lost: %+v, want an error", lost, v)
	}
	bytes := 0
	for bytes <= LossBound {
		lost++
		bytes += r.op(0, lost).size
	}
	if v, err := judgeStore(t, db, &r, [][]ack{acked(0, lost, 0), acked(0, 9, 0)}); err == nil {
		t.Errorf("writer 0's ops 10 to %d lost, at least %d bytes: %+v, want an error over the bound of %d", lost, bytes, v, LossBound)
	}
}

// TestCheck_NotAPrefix plants, with BackgroundWALWrites, a store where
// writer 1 kept an op that began after an op of writer 0 was
// acknowledged, which it lost: no prefix of the order of commits holds
// one and not the other. Had writer 1's op begun before, the loss would
// be a prefix.
func TestCheck_NotAPrefix(t *testing.T) {
	r := plantRound(t)
	r.BackgroundWAL = true
	db := openPlanted(t, &r, 9, 9)
	lost := lostOp(t, db, &r, 0, 10)
	kept := keepOps(t, db, &r, 1, 10)
	early := acked(0, 9, 0) // up to moment 100
	lostAcks := append(early, acked(10, lost, 1000)...)
	lostAcked := lostAcks[10].end
	keptAfter := append(acked(0, 9, 0), acked(10, kept, lostAcks[len(lostAcks)-1].end+10)...)
	if v, err := judgeStore(t, db, &r, [][]ack{lostAcks, keptAfter}); err == nil {
		t.Errorf("writer 1 kept ops 10 to %d, begun after writer 0's op 10 was acknowledged (at %d), which it lost: %+v, want an error",
			kept, lostAcked, v)
	}
	keptBefore := append(acked(0, 9, 0), acked(10, kept, lostAcks[10].start-10*int64(kept-9))...)
	if v, err := judgeStore(t, db, &r, [][]ack{lostAcks, keptBefore}); err != nil {
		t.Errorf("writer 1 kept ops 10 to %d, all begun before writer 0's op 10 (acknowledged at %d): %+v, %v", kept, lostAcked, v, err)
	}
}

// keepOps applies writer w's ops from n = from on, until the store holds
// its keys as op n leaves them and as no other op up to n+1 does (an op
// may undo the one before, or leave the keys as an earlier op did), and
// returns n: a check can then tell that the store kept op n.
func keepOps(t *testing.T, db *kv.DB, r *Round, w, from int) int {
	t.Helper()
	for n := from; n < from+r.Keys*10; n++ {
		if err := r.apply(db, "db", w, n); err != nil {
			t.Fatal(err)
		}
		got, err := readStore(db, r)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(statesIn(r, got, w, -1, n+1), []int{n}) {
			return n
		}
	}
	t.Fatalf("no op of writer %d from %d on leaves its keys in a state of its own", w, from)
	return 0
}

// TestCheckStore_TornBatch plants the first edit of a batch alone, whose
// last edit sets another key: no op of the writer leaves its keys so,
// and the check must say so.
func TestCheckStore_TornBatch(t *testing.T) {
	r := plantRound(t)
	db := openPlanted(t, &r, 9, 9)
	n := 10
	for ; !tearable(r.op(0, n)); n++ {
		if err := r.apply(db, "db", 0, n); err != nil {
			t.Fatal(err)
		}
	}
	o := r.op(0, n)
	if err := r.applyEdit(dbWriter{db, kv.NoSync}, 0, n, 0, o.edits[0]); err != nil {
		t.Fatal(err)
	}
	found, err := checkStore(db, &r, []window{{-1, n}, {-1, 10}})
	if err == nil || !strings.Contains(err.Error(), "writer 0's keys are in no state") {
		t.Errorf("op %d of writer 0 (a batch of %d edits) torn after its first: found %v, %v; want no state of writer 0", n, len(o.edits), found, err)
	}
}

// tearable reports whether o is a batch whose first and last edits set
// different keys.
func tearable(o op) bool {
	if !o.batch || len(o.edits) < 2 {
		return false
	}
	first, last := o.edits[0], o.edits[len(o.edits)-1]
	return first.kind == editSet && last.kind == editSet && first.key != last.key
}

// TestReadStore_ValueNotWritten plants entries no write made: the read
// must refuse each. good returns a key writer 0 holds, and its value,
// one with filler bytes after the header.
func TestReadStore_ValueNotWritten(t *testing.T) {
	r := plantRound(t)
	good := func(db *kv.DB) (k, v []byte) {
		got, err := readStore(db, &r)
		if err != nil {
			t.Fatal(err)
		}
		for i, ver := range got[0] {
			if ver == absent {
				continue
			}
			if v := r.versionValue(0, ver); len(v) > valueHeaderLen {
				return key(0, i), v
			}
		}
		t.Fatal("writer 0 holds no value with filler bytes")
		return nil, nil
	}
	for _, tc := range []struct {
		name  string
		plant func(db *kv.DB) (k, v []byte)
		want  string
	}{
		{"key of no writer", func(db *kv.DB) ([]byte, []byte) { return key(r.Writers, 0), []byte("x") }, "which no writer writes"},
		{"key past the writer's", func(db *kv.DB) ([]byte, []byte) { return key(0, r.Keys), []byte("x") }, "which no writer writes"},
		{"value of no Set", func(db *kv.DB) ([]byte, []byte) { k, _ := good(db); return k, []byte("not a value") }, "which no Set of it wrote"},
		{"damaged value", func(db *kv.DB) ([]byte, []byte) {
			k, v := good(db)
			v[len(v)-1] ^= 1
			return k, v
		}, "damaged value"},
		{"another key's value", func(db *kv.DB) ([]byte, []byte) {
			k, v := good(db)
			_, i, _ := parseKey(k)
			return key(0, (i+1)%r.Keys), v
		}, "which does not set it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openPlanted(t, &r, 9, 9)
			k, v := tc.plant(db)
			if err := db.Set(k, v, kv.NoSync); err != nil {
				t.Fatal(err)
			}
			if _, err := readStore(db, &r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("planted %s = %q: %v, want an error with %q", k, clip(v), err, tc.want)
			}
		})
	}
}

// TestWorkload_BatchLen checks that an op's size, which the loss bound
// counts, is Batch.Len of its edits, for every kind of op.
func TestWorkload_BatchLen(t *testing.T) {
	seed := testseed.Seed(t)
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for values := range valueProfiles {
		r := Round{Seed: seed, Writers: 1, Keys: 1000, Values: values, BigShare: 0.05, BatchShare: 0.4}
		for n := range 300 {
			o := r.op(0, n)
			b := db.NewBatch()
			for j, e := range o.edits {
				if err := r.applyEdit(b, 0, n, j, e); err != nil {
					t.Fatal(err)
				}
			}
			if b.Len() != o.size {
				t.Fatalf("values %d, op %d (%d edits): Batch.Len %d, size %d", values, n, len(o.edits), b.Len(), o.size)
			}
			b.Close()
		}
	}
}

// TestIngestLeavesTheBatchState: an op that ingests its edits as a table
// leaves its writer's keys as the same edits applied as a batch do, so
// the history's states hold for rounds that ingest: ranges that delete
// keys set before them in the op, keys set after them, repeated keys.
func TestIngestLeavesTheBatchState(t *testing.T) {
	r := plantRound(t)
	r.IngestShare, r.Keys = 0.3, 20 // small key ranges: the edits meet
	dir := t.TempDir() + "/db"
	db, err := kv.Open(dir, r.options())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const ops = 300
	ingested, ranged := 0, 0
	for n := range ops {
		for w := range r.Writers {
			if err := r.apply(db, dir, w, n); err != nil {
				t.Fatalf("op %d of writer %d: %v", n, w, err)
			}
			if o := r.op(w, n); o.ingest {
				ingested++
				if slices.ContainsFunc(o.edits, func(e edit) bool { return e.kind == editDeleteRange }) {
					ranged++
				}
			}
		}
		if n%50 != 49 {
			continue
		}
		got, err := readStore(db, &r)
		if err != nil {
			t.Fatal(err)
		}
		for w := range r.Writers {
			if states := statesIn(&r, got, w, n, n); len(states) == 0 {
				t.Fatalf("after op %d writer %d's keys are not the state its ops leave: %s", n, w, nearest(&r, got, w, n))
			}
		}
	}
	if ingested < ops/10 || ranged == 0 {
		t.Fatalf("%d ops ingested, %d of them with a range deletion: want %d and some", ingested, ranged, ops/10)
	}
	t.Logf("%d ops of %d ingested, %d of them with a range deletion", ingested, 2*ops, ranged)
}
