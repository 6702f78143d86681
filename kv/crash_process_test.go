package kv_test

// A real crash of the process: the test runs its own binary as a child
// that commits NoSync batches to a store on disk and reports each one
// acknowledged, kills it with SIGKILL, and reopens the store.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// killChildEnv, when set, makes TestProcessKill the child: its value is
// "seed background"; killDirEnv names the store's directory.
const (
	killChildEnv = "BLOOMKV_TEST_KILL_CHILD"
	killDirEnv   = "BLOOMKV_TEST_KILL_DIR"
)

// killChildLimit stops a child its parent never killed.
const killChildLimit = 30 * time.Second

// killOpts are the options of the killed store: the WAL writes are slowed
// (see slowWALFS), so the background writer falls behind.
func killOpts(background bool) *kv.Options {
	fs := &slowWALFS{FS: vfs.Default, piece: 16 << 10, pause: 50 * time.Microsecond}
	return &kv.Options{FS: fs, MemTableSize: 16 << 20, BackgroundWALWrites: background}
}

// runKillChild is the child: it opens the store in dir and commits the
// loss-bound workload of seed (crash_bound_test.go) one NoSync batch at a
// time, printing "ack <i> <size>" once batch i is acknowledged, until it
// is killed.
func runKillChild(spec, dir string) {
	var seed uint64
	var background bool
	if _, err := fmt.Sscan(spec, &seed, &background); err != nil {
		fmt.Printf("bad %s %q: %v\n", killChildEnv, spec, err)
		os.Exit(2)
	}
	db, err := kv.Open(dir, killOpts(background))
	if err != nil {
		fmt.Printf("open: %v\n", err)
		os.Exit(2)
	}
	deadline := time.Now().Add(killChildLimit)
	for i := 0; time.Now().Before(deadline); i++ {
		n, err := applyBoundBatch(db, seed, i)
		if err != nil {
			fmt.Printf("batch %d: %v\n", i, err)
			os.Exit(2)
		}
		fmt.Printf("ack %d %d\n", i, n)
	}
	os.Exit(3)
}

// killRun is one child, killed: the sizes of the batches it reported
// acknowledged, in order.
type killRun struct {
	sizes []int
	other []string // lines of output that are no acknowledgement
}

// killChildAfter starts a child over the store in dir, kills it once it
// has reported acks acknowledged batches, and returns what it reported,
// the lines it wrote before it died included.
func killChildAfter(t *testing.T, dir string, seed uint64, background bool, acks int) killRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessKill$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %t", killChildEnv, seed, background), killDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var r killRun
	killed := false
	for sc := bufio.NewScanner(out); sc.Scan(); {
		var i, n int
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &i, &n); err != nil || i != len(r.sizes) {
			r.other = append(r.other, sc.Text())
			continue
		}
		r.sizes = append(r.sizes, n)
		if !killed && len(r.sizes) >= acks {
			killed = true
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the child ended (%v) after %d acknowledged batches, before it was killed: %q", err, len(r.sizes), r.other)
	}
	return r
}

// TestProcessKill kills a child process (os.Process.Kill, SIGKILL on
// Unix) that commits NoSync batches to a store on disk, right after it
// reports batches acknowledged, and reopens the store. It must hold the
// first r batches of the workload, whole and right, and nothing else. In
// the default mode r covers every batch the child reported acknowledged;
// with BackgroundWALWrites, the acknowledged batches past r hold at most
// walLossBound bytes (Batch.Len).
func TestProcessKill(t *testing.T) {
	if spec := os.Getenv(killChildEnv); spec != "" {
		runKillChild(spec, os.Getenv(killDirEnv))
		return
	}
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for _, mode := range walModes {
		t.Run("wal="+mode.name, func(t *testing.T) {
			forEachSeed(t, 1, func(t *testing.T, seed uint64) {
				rng := newRand(seed)
				worst, checked := 0, 0
				for round := range rounds {
					s := seed + uint64(round)
					dir := filepath.Join(t.TempDir(), "db")
					acks := 10 + rng.IntN(150)
					run := killChildAfter(t, dir, s, mode.background, acks)
					lost := checkKilledStore(t, dir, s, mode.background, run)
					t.Logf("round %d: killed after %d acknowledged batches reported (%d read), %d bytes of them lost",
						round, acks, len(run.sizes), lost)
					worst = max(worst, lost)
					checked++
				}
				t.Logf("%d kills: at most %d acknowledged bytes lost; the bound is %d", checked, worst, walLossBound)
				if checked != rounds {
					t.Fatalf("%d kills checked, want %d", checked, rounds)
				}
			})
		})
	}
}

// checkKilledStore reopens the store in dir that run's child left and
// checks it against the workload of seed. It returns the bytes of
// acknowledged batches lost.
func checkKilledStore(t *testing.T, dir string, seed uint64, background bool, run killRun) int {
	t.Helper()
	if len(run.other) > 0 {
		t.Fatalf("the child wrote %q", run.other)
	}
	db, err := kv.Open(dir, &kv.Options{MemTableSize: 16 << 20})
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	got, err := readAll(db.NewIter)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("reading after the kill: %v", err)
	}
	r, err := recoveredBatches(got, seed)
	if err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	lost := 0
	for _, n := range run.sizes[min(r, len(run.sizes)):] {
		lost += n
	}
	switch acked := len(run.sizes); {
	case !background && r < acked:
		t.Fatalf("%d of %d acknowledged NoSync batches back after the kill in the default mode", r, acked)
	case lost > walLossBound:
		t.Fatalf("%d of %d acknowledged batches back after the kill: %d bytes lost, over the bound of %d", r, acked, lost, walLossBound)
	}
	return lost
}
