package kv_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// prefixRun is one seed of TestIterator_SeekPrefixGE_Model: a DB under a
// comparer that splits after the first '/', and its model.
type prefixRun struct {
	t     *testing.T
	rng   *rand.Rand
	opts  *kv.Options
	db    *kv.DB
	model map[string]string
	snap  *kv.Snapshot
	snapM map[string]string
	log   opLog
}

// prefixKey returns a key "u<id>/<field>" of a few dozen users, or now and
// then a user's bare name "u<id>", which is its own prefix.
func (r *prefixRun) prefixKey() string {
	id := r.rng.IntN(40)
	if r.rng.IntN(8) == 0 {
		return fmt.Sprintf("u%02d", id)
	}
	return fmt.Sprintf("u%02d/f%d", id, r.rng.IntN(6))
}

// seekKey returns a prefix, a key, or a key between keys of one prefix.
func (r *prefixRun) seekKey() string {
	k := r.prefixKey()
	switch r.rng.IntN(4) {
	case 0:
		if i := strings.IndexByte(k, '/'); i >= 0 {
			return k[:i+1]
		}
	case 1:
		return k + "~"
	}
	return k
}

// TestIterator_SeekPrefixGE_Model checks SeekPrefixGE and the Next calls
// of prefix mode against a map, through flushes, compactions, snapshots,
// bounds, deletes and reopens that switch the comparer between splitting
// and not (so tables of both kinds of filter mix, and SeekPrefixGE reads
// whole-key tables without their filters).
func TestIterator_SeekPrefixGE_Model(t *testing.T) {
	seeds, steps := 3, 3000
	if testing.Short() {
		seeds, steps = 1, 1000
	}
	forEachSeed(t, seeds, func(t *testing.T, seed uint64) {
		r := &prefixRun{t: t, rng: newRand(seed), model: map[string]string{}}
		r.opts = &kv.Options{
			FS: vfs.NewMem(), Comparer: itertest.SlashComparer(),
			MemTableSize: 2 << 10, BlockSize: 64 << r.rng.IntN(3), TargetFileSize: 4 << 10,
			LBaseMaxBytes: 16 << 10, L0CompactionThreshold: 2 + r.rng.IntN(3),
		}
		r.open()
		defer func() {
			if r.snap != nil {
				must(t, r.snap.Close())
			}
			mustClose(t, r.db)
		}()
		for i := 0; i < steps; i++ {
			r.step()
		}
	})
}

func (r *prefixRun) open() {
	db, err := kv.Open("db", r.opts)
	if err != nil {
		r.t.Fatalf("Open: %v", err)
	}
	r.db = db
}

func (r *prefixRun) step() {
	switch p := r.rng.IntN(100); {
	case p < 45:
		k, v := r.prefixKey(), fmt.Sprintf("v%d", r.log.n)
		r.log.add("Set(%s)", k)
		r.model[k] = v
		r.check(r.db.Set([]byte(k), []byte(v), kv.NoSync))
	case p < 60:
		k := r.prefixKey()
		r.log.add("Delete(%s)", k)
		delete(r.model, k)
		r.check(r.db.Delete([]byte(k), kv.NoSync))
	case p < 85:
		r.seeks()
	case p < 90:
		r.log.add("Flush")
		r.check(r.db.Flush())
	case p < 93:
		r.log.add("Snapshot")
		if r.snap != nil {
			r.check(r.snap.Close())
		}
		r.snap, r.snapM = r.db.NewSnapshot(), maps.Clone(r.model)
	case p < 99:
		r.log.add("Compact")
		r.check(r.db.Compact(nil, nil))
	default:
		r.reopen()
	}
}

func (r *prefixRun) check(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%v\nrecent steps:\n%s", err, r.log.String())
	}
}

// reopen reopens the DB under the other comparer: splitting or bytewise,
// with the same ordering.
func (r *prefixRun) reopen() {
	if r.snap != nil {
		must(r.t, r.snap.Close())
		r.snap = nil
	}
	r.check(r.db.Close())
	if r.opts.Comparer.Split != nil {
		r.opts.Comparer = sstable.DefaultComparer
	} else {
		r.opts.Comparer = itertest.SlashComparer()
	}
	r.log.add("reopen, split=%v", r.opts.Comparer.Split != nil)
	r.open()
}

// seeks opens an iterator, on the DB or the snapshot, and checks a few
// prefix seeks with the Next calls after them; without a Split, a seek
// must fail with ErrInvalidPrefixSeek.
func (r *prefixRun) seeks() {
	model, newIter := r.model, r.db.NewIter
	if r.snap != nil && r.rng.IntN(2) == 0 {
		model, newIter = r.snapM, r.snap.NewIter
	}
	o := r.prefixBounds()
	it, err := newIter(o)
	r.check(err)
	defer func() {
		// Close reports the iterator's error, a refused seek's too.
		if err := it.Close(); !errors.Is(err, kv.ErrInvalidPrefixSeek) {
			r.check(err)
		}
	}()
	im := newIterModel(model, o)
	for n := r.rng.IntN(5); n >= 0; n-- {
		k := r.seekKey()
		r.log.add("SeekPrefixGE(%s) in %s", k, boundsString(o))
		ok := it.SeekPrefixGE([]byte(k))
		if r.opts.Comparer.Split == nil {
			if ok || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
				r.t.Fatalf("SeekPrefixGE without a Split: %v, %v", ok, it.Error())
			}
			return
		}
		r.checkPrefixSeek(it, im, o, k, ok)
	}
}

// prefixBounds returns no bounds, or bounds within or around a prefix.
func (r *prefixRun) prefixBounds() *kv.IterOptions {
	switch r.rng.IntN(3) {
	case 0:
		return nil
	case 1:
		lo, hi := r.seekKey(), r.seekKey()
		if lo > hi {
			lo, hi = hi, lo
		}
		return &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)}
	}
	k := r.prefixKey()
	return &kv.IterOptions{LowerBound: []byte(k), UpperBound: []byte(k + "~")}
}

// checkPrefixSeek compares the seek to k, which returned ok, and the Next
// calls up to the prefix's end, with the model.
func (r *prefixRun) checkPrefixSeek(it *kv.Iterator, im *iterModel, o *kv.IterOptions, k string, ok bool) {
	prefix := k[:itertest.SlashSplit([]byte(k))]
	from, valid := k, true
	if o != nil && o.LowerBound != nil && k < string(o.LowerBound) {
		from, valid = string(o.LowerBound), string(o.LowerBound[:itertest.SlashSplit(o.LowerBound)]) == prefix
	} else if o != nil && o.UpperBound != nil && k > string(o.UpperBound) {
		from, valid = string(o.UpperBound), string(o.UpperBound[:itertest.SlashSplit(o.UpperBound)]) == prefix
	}
	if !valid {
		if ok || !errors.Is(it.Error(), kv.ErrInvalidPrefixSeek) {
			r.t.Fatalf("SeekPrefixGE(%s) outside %s with another prefix: %v, %v", k, boundsString(o), ok, it.Error())
		}
		return
	}
	want := im.seekGE(from)
	for step := 0; ; step++ {
		if want && im.keys[im.pos][:itertest.SlashSplit([]byte(im.keys[im.pos]))] != prefix {
			want = false
		}
		if msg := compareIterPosition(it, im, ok, want); msg != "" {
			r.t.Fatalf("SeekPrefixGE(%s) in %s, Next %d: %s\nrecent steps:\n%s", k, boundsString(o), step, msg, r.log.String())
		}
		if !ok {
			return
		}
		ok, want = it.Next(), im.next()
	}
}

// TestOpen_ComparerMismatch checks that a store created under one ordering
// refuses to open under a comparer of another name, while a comparer of
// the same name that splits differently opens it.
func TestOpen_ComparerMismatch(t *testing.T) {
	fs := vfs.NewMem()
	db, err := kv.Open("db", &kv.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	other := itertest.SlashComparer()
	other.Name = "test.other-order"
	if db, err := kv.Open("db", &kv.Options{FS: fs, Comparer: other}); err == nil {
		must(t, db.Close())
		t.Fatal("Open under another comparer name succeeded")
	} else if !strings.Contains(err.Error(), "test.other-order") {
		t.Fatalf("Open under another comparer name: %v, want it named", err)
	}
	db, err = kv.Open("db", &kv.Options{FS: fs, Comparer: itertest.SlashComparer()})
	if err != nil {
		t.Fatalf("Open under a splitting comparer of the same order: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// userComparer is bytewise with itertest.UserSplit.
func userComparer() *sstable.Comparer {
	c := *sstable.DefaultComparer
	c.Split, c.SplitName = itertest.UserSplit, "test.user"
	return &c
}

// userPrefix returns the prefix of user id: present users have even ids,
// absent ones odd.
func userPrefix(buf []byte, id int) []byte {
	return fmt.Appendf(buf[:0], "user/%08d/", id)
}

// userFields are the fields of every present user.
var userFields = []string{"email", "name", "plan"}

// loadUsers writes the fields of users present users (ids 0, 2, 4, ...)
// in a scattered order through set, and calls apply after every thousand
// users and at the end. users must not be a multiple of 7919.
func loadUsers(users int, set func(k, v []byte), apply func() error) error {
	var key []byte
	for i := 0; i < users; i++ {
		id := 2 * ((i*7919 + 13) % users) // a permutation of 0..users-1, as 7919 is a prime not dividing users
		for _, f := range userFields {
			key = append(userPrefix(key, id), f...)
			set(key, benchValue(uint64(id)))
		}
		if i%1000 == 999 {
			if err := apply(); err != nil {
				return err
			}
		}
	}
	return apply()
}

// TestIterator_SeekPrefixGE_AbsentPrefixReads checks the point of prefix
// filters: a prefix seek for an absent prefix reads a data block only
// where a filter gave a false positive, so over many seeks the blocks read
// stay within a bound derived from the filter's false-positive rate and
// the tables the seeks considered. It holds for bloompolicy's filter and
// for Pebble's bloom through pebbleadapter.FromPebble (10 bits per key,
// which Pebble measures at about 1.2%), both fed prefixes by the store.
func TestIterator_SeekPrefixGE_AbsentPrefixReads(t *testing.T) {
	ours, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy bloompolicy.FilterPolicy
		fpr    float64
	}{
		{ours, 0.01},
		{pebbleadapter.FromPebble(bloom.FilterPolicy(10)), 0.012},
	} {
		t.Run(tc.policy.Name(), func(t *testing.T) { checkAbsentPrefixReads(t, tc.policy, tc.fpr) })
	}
}

// checkAbsentPrefixReads checks the reads of absent-prefix seeks in a store
// whose filters, from policy, have the false-positive rate fpr.
func checkAbsentPrefixReads(t *testing.T, policy bloompolicy.FilterPolicy, fpr float64) {
	const users = 20000
	db, err := kv.Open("db", &kv.Options{FS: vfs.NewMem(), Comparer: userComparer(), FilterPolicy: policy,
		MemTableSize: 256 << 10, TargetFileSize: 256 << 10, LBaseMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	b := db.NewBatch()
	var setErr error
	err = loadUsers(users, func(k, v []byte) { setErr = errors.Join(setErr, b.Set(k, v)) }, func() error {
		err := db.Apply(b, kv.NoSync)
		b = db.NewBatch()
		return errors.Join(err, setErr)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	before := db.Metrics().Lookups
	var prefix []byte
	for i := 0; i < 2*users; i++ {
		prefix = userPrefix(prefix, 2*int(mix64(uint64(i))%users)+1)
		if it.SeekPrefixGE(prefix) {
			t.Fatalf("SeekPrefixGE(%s) found %s", prefix, it.Key())
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	d := m.Lookups
	d.PrefixSeeks -= before.PrefixSeeks
	d.TablesConsidered -= before.TablesConsidered
	d.FilterNegatives -= before.FilterNegatives
	d.FilterTruePositives -= before.FilterTruePositives
	d.FilterFalsePositives -= before.FilterFalsePositives
	d.BlockReads -= before.BlockReads
	t.Logf("LSM files per level %v; %d seeks: %+v", levelFiles(m), 2*users, d)
	// Every filter asked about an absent prefix answers "absent" or gives a
	// false positive, and only a false positive costs a read.
	switch {
	case d.PrefixSeeks != 2*users:
		t.Fatalf("PrefixSeeks %d, want %d", d.PrefixSeeks, 2*users)
	case d.FilterTruePositives != 0:
		t.Fatalf("%d true positives for absent prefixes", d.FilterTruePositives)
	case d.BlockReads != d.FilterFalsePositives:
		t.Fatalf("%d block reads for %d false positives", d.BlockReads, d.FilterFalsePositives)
	case d.FilterNegatives+d.FilterFalsePositives < d.TablesConsidered:
		t.Fatalf("%d filter verdicts for %d tables considered", d.FilterNegatives+d.FilterFalsePositives, d.TablesConsidered)
	}
	// Reads are a binomial count over the filters asked: allow 1.1 times
	// the target rate (bloompolicy meets it within a few percent) and six
	// standard deviations on top.
	mean := 1.1 * fpr * float64(d.FilterNegatives+d.FilterFalsePositives)
	if bound := mean + 6*math.Sqrt(mean); float64(d.BlockReads) > bound {
		t.Fatalf("%d block reads over %d tables considered: above the bound %.0f for a %.0f%% filter",
			d.BlockReads, d.TablesConsidered, bound, 100*fpr)
	}
}
