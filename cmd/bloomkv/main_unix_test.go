//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestMain_TermRemovesBenchStores sends SIGTERM, as timeout(1) does, to a
// bench writing into a new --dir: the run stops, exits 1 and removes the
// directory, as it does on Ctrl-C, leaving no stores behind.
func TestMain_TermRemovesBenchStores(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stores")
	cmd := exec.Command(os.Args[0], "bench", "--keys", "1000000", "--lookups", "1000", "--rounds", "0", "--dir", dir)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "bloomkv-nofilter")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("bench created no store in 20s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
			t.Errorf("bench after SIGTERM: %v, want exit status %d", err, exitFailure)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bench still running 30s after SIGTERM")
	}
	if names, err := filepath.Glob(filepath.Join(dir, "*")); err != nil || len(names) > 0 {
		t.Errorf("after SIGTERM the stores are left: %v %v", names, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after SIGTERM --dir %s, which bench created, is left (%v)", dir, err)
	}
}
