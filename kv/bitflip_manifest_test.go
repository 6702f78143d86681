package kv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBitFlip_Manifest sweeps every bit of the MANIFEST of a store that
// flushed, compacted and deleted a range, with writes left in its WAL (a
// store of more rounds, so a larger MANIFEST, with -sweep=full).
func TestBitFlip_Manifest(t *testing.T) {
	rounds := 3
	if fullSweep() {
		rounds = 12
	}
	s := buildTableSweepStore(t, rounds)
	name := s.storeFile(t, func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") })
	if edits := readManifestEdits(t, s.fs, "db/"+name); len(edits) < 3 {
		t.Fatalf("%s holds %d edits: want a snapshot, then flushes and compactions", name, len(edits))
	}
	size := len(readFile(t, s.fs, "db/"+name))
	s.sweepBits(t, name, allBits, 8*size)
}

// TestBitFlip_Current sweeps every bit of CURRENT. A CURRENT that names
// a MANIFEST that does not exist is damage, as one that names nothing.
func TestBitFlip_Current(t *testing.T) {
	s := buildTableSweepStore(t, 1)
	size := len(readFile(t, s.fs, "db/CURRENT"))
	c := s.sweepBits(t, "CURRENT", allBits, 8*size)
	if c[flipRecovered] != 0 {
		t.Fatalf("%d flips of CURRENT read as a store", c[flipRecovered])
	}
}

// buildTableSweepStore builds a store in a MemFS with tables in L0 and
// deeper, made of rounds of writes (sets, deletions, a range deletion),
// each flushed, the first rounds compacted; a last round of writes stays
// in the WAL. Every write is synced. The process then crashes, so the
// MANIFEST keeps its edits to sweep: Close would rewrite it as one.
func buildTableSweepStore(t *testing.T, rounds int) *sweepStore {
	t.Helper()
	mem := vfs.NewStrictMem()
	s := &sweepStore{
		fs:     mem,
		opts:   Options{MemTableSize: 64 << 10, BlockSize: 256, DisableAutomaticCompactions: true},
		values: make(map[string]string),
	}
	o := s.opts
	o.FS = s.fs
	d, err := Open("db", &o)
	if err != nil {
		t.Fatal(err)
	}
	const perRound = 24
	for r := range rounds + 1 {
		for i := range perRound {
			s.writeSweepBatch(t, d, r*perRound+i, 12)
		}
		switch {
		case r == rounds:
		case r == rounds-1 && r > 0:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
		default:
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := d.Compact([]byte("a"), []byte("z")); err != nil {
				t.Fatal(err)
			}
		}
	}
	mem.SetIgnoreSyncs(true)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	if len(s.gone) == 0 || len(s.values) < rounds*perRound/2 {
		t.Fatalf("the store holds %d keys, %d deleted", len(s.values), len(s.gone))
	}
	return s
}

// sweepKey is the key of batch i of a sweep store.
func sweepKey(i int) string { return fmt.Sprintf("k%04d", i) }

// TestBitFlip_ManifestLastEdit sweeps every bit of a MANIFEST whose last
// edit is a flush that let the WAL it flushed be deleted (a WAL of an
// earlier Open is not recycled): that edit lost as a torn tail would
// leave the MANIFEST naming a WAL that is gone and a table it no longer
// lists. The process crashes after the flush: Close would rewrite the
// MANIFEST as one edit.
func TestBitFlip_ManifestLastEdit(t *testing.T) {
	mem := vfs.NewStrictMem()
	s := &sweepStore{
		fs:     mem,
		opts:   Options{MemTableSize: 64 << 10, DisableAutomaticCompactions: true},
		values: make(map[string]string),
	}
	o := s.opts
	o.FS = s.fs
	for round := range 2 {
		d, err := Open("db", &o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			s.writeSweepBatch(t, d, 12*round+i, 10)
		}
		if round == 1 {
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			mem.SetIgnoreSyncs(true) // the crash: nothing Close writes lasts
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	name := s.storeFile(t, func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") })
	if edits := readManifestEdits(t, s.fs, "db/"+name); len(edits) < 2 || len(edits[len(edits)-1].NewFiles) != 1 {
		t.Fatalf("%s holds %d edits, the last %+v: want a snapshot, then the flush", name, len(edits), edits)
	}
	size := len(readFile(t, s.fs, "db/"+name))
	s.sweepBits(t, name, allBits, 8*size)
}
