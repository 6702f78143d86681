package kv_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/bloomkv/bloomkv/sstable"
)

// toleratedFileOp reports whether a failed operation may go unreported by
// Checkpoint or Ingest: those tolerated everywhere (see tolerated);
// closing a file once it is read or synced, which loses nothing; a hard
// link, which falls back to a copy; and the Stat with which a directory
// about to be created is looked for (creating it is harmless when it
// exists).
func toleratedFileOp(op string) bool {
	for _, prefix := range []string{"close ", "removeall ", "link ", "stat "} {
		if strings.HasPrefix(op, prefix) {
			return true
		}
	}
	return tolerated(op)
}

// TestErrorFS_Checkpoint fails each filesystem operation of a Checkpoint
// in turn, on a store with tables in two levels and a WAL: the error comes
// back wrapped, the store keeps its contents and takes writes, and the
// checkpoint directory is absent or complete.
func TestErrorFS_Checkpoint(t *testing.T) {
	base, want := faultBase(t, 1)
	points := 0
	for i := 0; ; i++ {
		mem := copyDir(t, base, "db")
		opts, inj := quietFaultOpts(mem)
		db, err := kv.Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		inj.arm(i)
		err = db.Checkpoint("backup/ckpt")
		inj.disarm()
		fired := inj.firedOp()
		what := fmt.Sprintf("Checkpoint with operation %d (%s) failing", i, fired)
		checkInjected(t, err, fired, what)
		if err == nil && fired != "" && !toleratedFileOp(fired) {
			t.Fatalf("%s: Checkpoint succeeded", what)
		}
		checkContents(t, db, want, what)
		if err := db.Set([]byte("new"), []byte("v"), kv.Sync); err != nil {
			t.Fatalf("%s: a write after it: %v", what, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("%s: Close: %v", what, err)
		}
		complete := checkCheckpointDir(t, mem, "backup/ckpt", want, what)
		if err == nil && !complete {
			t.Fatalf("%s: Checkpoint succeeded, no checkpoint", what)
		}
		after := maps.Clone(want)
		after["new"] = "v"
		checkStore(t, mem, after, what)
		if fired == "" {
			break
		}
		points++
	}
	if points < 10 {
		t.Fatalf("%d faults fired, fewer than a Checkpoint's operations", points)
	}
	t.Logf("%d operations failed in turn", points)
}

// TestErrorFS_Ingest fails each filesystem operation of an Ingest in
// turn (its flush of the memtable included): the error comes back
// wrapped, the file ingested stays in place, and the store reopens
// holding its contents from before the Ingest or, once the MANIFEST may
// hold the edit, from after it.
func TestErrorFS_Ingest(t *testing.T) {
	base, want := faultBase(t, 1)
	ext := keyRange("f", 0, 300, "ing") // overlaps the store's f0000..f1998
	after := maps.Clone(want)
	maps.Copy(after, ext)
	points, sawAfter := 0, 0
	for i := 0; ; i++ {
		mem := copyDir(t, base, "db")
		writeExternal(t, mem, "ext/t.sst", ext, sstable.WriterOptions{})
		opts, inj := quietFaultOpts(mem)
		db, err := kv.Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		inj.arm(i)
		err = db.Ingest([]string{"ext/t.sst"})
		inj.disarm()
		fired := inj.firedOp()
		what := fmt.Sprintf("Ingest with operation %d (%s) failing", i, fired)
		checkInjected(t, err, fired, what)
		if err == nil && fired != "" && !toleratedFileOp(fired) {
			t.Fatalf("%s: Ingest succeeded", what)
		}
		if err == nil {
			checkContents(t, db, after, what)
		}
		db.Close()
		if _, serr := mem.Stat("ext/t.sst"); serr != nil {
			t.Fatalf("%s: the ingested file is gone: %v", what, serr)
		}
		got, rerr := readStore(mem)
		switch {
		case rerr != nil:
			t.Fatalf("%s: %v", what, rerr)
		case diffMaps(got, after) == "":
			sawAfter++
		case err == nil:
			t.Fatalf("%s: Ingest succeeded, the reopened store: %s", what, diffMaps(got, after))
		case diffMaps(got, want) != "":
			t.Fatalf("%s: the reopened store is neither before nor after: %s", what, diffMaps(got, want))
		}
		if fired == "" {
			break
		}
		points++
	}
	if points < 10 {
		t.Fatalf("%d faults fired, fewer than an Ingest's operations", points)
	}
	t.Logf("%d operations failed in turn; %d runs left the tables ingested", points, sawAfter)
}
