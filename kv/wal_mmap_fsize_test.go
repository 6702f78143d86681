//go:build linux

package kv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// mmapFsizeEnv, when set, makes TestWALMmap_FileSizeLimitStopsWrites the
// child: its value names the store's directory.
const mmapFsizeEnv = "BLOOMKV_TEST_MMAP_FSIZE_CHILD"

// mmapFsizeLimit is the child's file size limit (RLIMIT_FSIZE): past it
// fallocate fails (EFBIG), as it does with ENOSPC on a full disk.
const mmapFsizeLimit = 192 << 10

func mmapFsizeOptions() *Options {
	o := &Options{FS: vfs.Default, MemTableSize: 4 << 20}
	o.private.walMmapChunk = 16 << 10
	return o
}

func mmapFsizeKV(i int) (k, v []byte) {
	return []byte(fmt.Sprintf("k%06d", i)), bytes.Repeat([]byte{byte(i)}, 100+i%3000)
}

// runMmapFsizeChild opens the store in dir, limits the size of the files
// it writes, and writes until a write fails, reporting "ack i" for each
// acknowledged; then it reports how the next write and Close fared.
func runMmapFsizeChild(dir string) {
	d, err := Open(dir, mmapFsizeOptions())
	if err != nil {
		fmt.Printf("FAIL open: %v\n", err)
		os.Exit(2)
	}
	if d.commit.log.direct == nil {
		fmt.Printf("FAIL WAL not mapped: %T\n", d.commit.log.space)
		os.Exit(2)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: mmapFsizeLimit, Max: mmapFsizeLimit}); err != nil {
		fmt.Printf("FAIL setrlimit: %v\n", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		k, v := mmapFsizeKV(i)
		opts := NoSync
		if i%5 == 4 {
			opts = Sync
		}
		if err := d.Set(k, v, opts); err != nil {
			fmt.Printf("failed %d: %v\n", i, err)
			break
		}
		fmt.Printf("ack %d\n", i)
	}
	if err := d.Set([]byte("after"), []byte("x"), NoSync); err == nil {
		fmt.Printf("FAIL a write after the failed one succeeded\n")
	}
	fmt.Printf("close: %v\n", d.Close())
	os.Exit(0)
}

// TestWALMmap_FileSizeLimitStopsWrites: a process whose mapped WAL cannot
// grow (the file size limit, as a full disk would) gets an error from the
// write that needs the space, not a SIGBUS, and no later write succeeds;
// reopened without the limit, the store holds every write acknowledged.
func TestWALMmap_FileSizeLimitStopsWrites(t *testing.T) {
	if dir := os.Getenv(mmapFsizeEnv); dir != "" {
		runMmapFsizeChild(dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALMmap_FileSizeLimitStopsWrites$")
	cmd.Env = append(os.Environ(), mmapFsizeEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	acked, failed := 0, false
	for _, line := range strings.Split(string(out), "\n") {
		var i int
		switch {
		case strings.HasPrefix(line, "ack "):
			fmt.Sscanf(line, "ack %d", &i)
			acked = i + 1
		case strings.HasPrefix(line, "failed "):
			failed = true
			t.Log(line)
		case strings.HasPrefix(line, "FAIL"):
			t.Fatal(line)
		case strings.HasPrefix(line, "close: "):
			t.Log(line)
		}
	}
	if !failed || acked == 0 {
		t.Fatalf("%d writes acknowledged, failed %v: want some, then a failure\n%s", acked, failed, out)
	}
	d, err := Open(dir, mmapFsizeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range acked {
		k, v := mmapFsizeKV(i)
		if got, err := d.Get(k); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("write %d of %d acknowledged: %v", i, acked, err)
		}
	}
	t.Logf("%d writes acknowledged, all found", acked)
}
