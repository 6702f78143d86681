//go:build linux

package kv

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// Process kills of a store whose WAL is memory-mapped (wal_mmap.go), at
// random points: while it writes batches of every size (some larger than
// a mapped chunk, some larger than a block), Sync and NoSync mixed, over
// many WALs of small memtables (rotations, recycled files), while it
// closes and reopens itself, and while it recovers what the last kill
// left. Each child, once open, checks that the store holds a prefix of
// the workload and reports its length; every batch acknowledged before
// must be in it.

// mmapKillEnv, when set, makes TestWALMmap_KillAnywhere the child: its
// value is "dir seed chunk".
const mmapKillEnv = "BLOOMKV_TEST_MMAP_KILL_CHILD"

// mmapKillOptions are the killed store's options: small memtables, the
// WAL on disk, mapped chunk bytes at a time (0: the default).
func mmapKillOptions(chunk int64) *Options {
	o := &Options{FS: vfs.Default, MemTableSize: 256 << 10}
	o.private.walMmapChunk = chunk
	return o
}

// mmapKillValue returns the value of batch i of the workload of seed:
// mostly small, sometimes kilobytes, now and then larger than a block
// (32 KiB) and than a small mapped chunk.
func mmapKillValue(seed uint64, i int) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	var n int
	switch p := rng.IntN(100); {
	case p < 70:
		n = 8 + rng.IntN(100)
	case p < 90:
		n = 1<<10 + rng.IntN(5<<10)
	case p < 98:
		n = 10<<10 + rng.IntN(30<<10)
	default:
		n = 60<<10 + rng.IntN(40<<10)
	}
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i*31 + j*7 + int(seed))
	}
	return v
}

// mmapKillSync reports whether batch i of the workload of seed is written
// with Sync.
func mmapKillSync(seed uint64, i int) bool {
	return rand.New(rand.NewPCG(seed^0x5eed, uint64(i))).IntN(5) == 0
}

// mmapKillWriters is how many goroutines of the child write at once,
// each its own stream of batches, so that their records overlap (and are
// reserved in the mapping, then encoded by their writers: see walOrder).
const mmapKillWriters = 3

// mmapKillKeys are the two keys batch i of writer g sets.
func mmapKillKeys(g, i int) (b, c []byte) {
	return []byte(fmt.Sprintf("%db%08d", g, i)), []byte(fmt.Sprintf("%dc%08d", g, i))
}

// mmapKillBatch is the seed of writer g's batches: each writes the
// workload of its own seed.
func mmapKillBatch(seed uint64, g int) uint64 { return seed + uint64(g)*1000003 }

// mmapKillPrefix returns, for each writer, n when d holds exactly its
// batches 0..n-1, whole and right, and an error otherwise.
func mmapKillPrefix(d *DB, seed uint64) ([mmapKillWriters]int, error) {
	var bs, cs [mmapKillWriters]int
	it, err := d.NewIter(nil)
	if err != nil {
		return bs, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := string(it.Key())
		var g, i int
		var kind byte
		if _, err := fmt.Sscanf(k, "%1d%c%d", &g, &kind, &i); err != nil || g >= mmapKillWriters {
			return bs, fmt.Errorf("unexpected key %q", k)
		}
		want := mmapKillValue(mmapKillBatch(seed, g), i)
		n := &bs[g]
		if kind == 'c' {
			n, want = &cs[g], want[:len(want)/2]
		}
		if i != *n || !bytes.Equal(it.Value(), want) {
			return bs, fmt.Errorf("key %q (%d bytes): want batch %d, %d bytes", k, len(it.Value()), *n, len(want))
		}
		*n++
	}
	if err := it.Error(); err != nil {
		return bs, err
	}
	if bs != cs {
		return bs, fmt.Errorf("%v b keys but %v c keys: a batch split", bs, cs)
	}
	return bs, nil
}

// runMmapKillChild is the child: it opens the store, reports "open n"
// with n the batches it holds, then writes batches n on, reporting
// "ack i" once batch i is acknowledged, closing and reopening the store
// now and then, until it is killed. Any failure is reported on a line
// of its own, which the parent fails on.
func runMmapKillChild(spec string) {
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL "+format+"\n", args...)
		os.Exit(2)
	}
	var dir string
	var seed uint64
	var chunk int64
	if _, err := fmt.Sscan(spec, &dir, &seed, &chunk); err != nil {
		fail("bad spec %q: %v", spec, err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		d, err := Open(dir, mmapKillOptions(chunk))
		if err != nil {
			fail("open: %v", err)
		}
		if d.commit.log.direct == nil {
			fail("WAL not mapped: writer %T", d.commit.log.space)
		}
		ns, err := mmapKillPrefix(d, seed)
		if err != nil {
			fail("after open: %v", err)
		}
		fmt.Printf("open %v\n", ns)
		count := 20 + rng.IntN(150)
		var wg sync.WaitGroup
		for g, n := range ns {
			wg.Go(func() {
				s := mmapKillBatch(seed, g)
				for i := n; i < n+count; i++ {
					b := d.NewBatch()
					k1, k2 := mmapKillKeys(g, i)
					v := mmapKillValue(s, i)
					if err := b.Set(k1, v); err != nil {
						fail("batch %d: %v", i, err)
					}
					if err := b.Set(k2, v[:len(v)/2]); err != nil {
						fail("batch %d: %v", i, err)
					}
					opts := NoSync
					if mmapKillSync(s, i) {
						opts = Sync
					}
					if err := d.Apply(b, opts); err != nil {
						fail("batch %d: %v", i, err)
					}
					fmt.Printf("ack %d %d\n", g, i)
				}
			})
		}
		wg.Wait()
		if err := d.Close(); err != nil {
			fail("close: %v", err)
		}
	}
	os.Exit(3)
}

// mmapKillRound runs one child over dir and kills it: after a random
// delay (often in the middle of recovering what the last kill left) or
// after a random number of acknowledged batches. It checks that each
// open found every batch acknowledged before it, and returns the number
// of batches acknowledged in all (acked, from previous rounds, included)
// and how many opens it saw.
func mmapKillRound(t *testing.T, dir string, seed uint64, chunk int64, acked *[mmapKillWriters]int, rng *rand.Rand) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALMmap_KillAnywhere$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", mmapKillEnv, dir, seed, chunk))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAfter := -1
	var timer *time.Timer
	if rng.IntN(2) == 0 {
		timer = time.AfterFunc(time.Duration(rng.IntN(60_000))*time.Microsecond, func() { cmd.Process.Kill() })
	} else {
		killAfter = 1 + rng.IntN(600)
	}
	acks, opens := 0, 0
	var other []string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		line := sc.Text()
		var g, i int
		var ns [mmapKillWriters]int
		switch {
		case strings.HasPrefix(line, "ack "):
			fmt.Sscanf(line, "ack %d %d", &g, &i)
			acked[g] = max(acked[g], i+1)
			if acks++; acks == killAfter {
				cmd.Process.Kill()
			}
		case strings.HasPrefix(line, "open "):
			fmt.Sscanf(strings.Trim(line[5:], "[]"), "%d %d %d", &ns[0], &ns[1], &ns[2])
			opens++
			for g := range ns {
				if ns[g] < acked[g] {
					cmd.Process.Kill()
					t.Fatalf("reopened with batches %v, but %v were acknowledged", ns, *acked)
				}
			}
			*acked = ns // batches found count as acknowledged from now on
		default:
			other = append(other, line)
		}
	}
	if timer != nil {
		timer.Stop()
	}
	err = cmd.Wait()
	if len(other) > 0 {
		t.Fatalf("child: %q (%v)", other, err)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("child ended (%v), not killed", err)
	}
	return opens
}

// TestWALMmap_KillAnywhere kills, again and again, a process writing to
// and reopening a store whose WAL is mapped, chunks of one page, of
// 16 KiB and of the default size, and reopens it after each kill: it must
// hold a prefix of the workload that includes every batch acknowledged.
func TestWALMmap_KillAnywhere(t *testing.T) {
	if spec := os.Getenv(mmapKillEnv); spec != "" {
		runMmapKillChild(spec)
		return
	}
	if d, err := Open(t.TempDir(), mmapKillOptions(0)); err != nil {
		t.Fatal(err)
	} else if mapped := d.commit.log.direct != nil; d.Close() != nil || !mapped {
		t.Skip("no mapped WAL here")
	}
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for _, chunk := range []int64{int64(pageSize), 16 << 10, 0} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			dir := filepath.Join(t.TempDir(), "db")
			var acked [mmapKillWriters]int
			opens := 0
			for range rounds {
				opens += mmapKillRound(t, dir, seed, chunk, &acked, rng)
			}
			d, err := Open(dir, mmapKillOptions(chunk))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			n, err := mmapKillPrefix(d, seed)
			if err != nil {
				t.Fatal(err)
			}
			for g := range n {
				if n[g] < acked[g] {
					t.Fatalf("after %d kills: batches %v, but %v were acknowledged", rounds, n, acked)
				}
			}
			if opens == 0 || acked == [mmapKillWriters]int{} {
				t.Fatalf("%d opens and %d batches acknowledged: the kills tested nothing", opens, acked)
			}
			t.Logf("%d kills, %d opens, %d batches acknowledged, %d found", rounds, opens, acked, n)
		})
	}
}
