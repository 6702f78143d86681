package ycsb

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	// The binding runs bloomkv's kv package, which the test does not
	// call: importing it makes the test's cached result depend on it.
	_ "github.com/bloomkv/bloomkv/kv"
)

// harnessFiles are what run.sh reads besides the engine. go test caches
// a test's result until a file the test opened changes, so the test reads
// them (exec'd and build-tagged files are not tracked otherwise).
var harnessFiles = []string{"run.sh", "bloomkv_db.go", "bloomkv_db_test.go"}

// ycsbOps are the operations each workload's summary reports, by the
// names Pebble's driver gives them (operation and percentage).
var ycsbOps = map[string][]string{
	"A": {"read_50", "update_50"},
	"B": {"read_95", "update__5"},
	"C": {"read_100"},
	"D": {"insert__5", "read_95"},
	"E": {"insert__5", "scan_95"},
	"F": {"insert_100"},
}

// resultRow is one line of run.sh's --tsv output.
type resultRow struct {
	workload, engine, op string
	opsPerSec            float64
	p50, p99, max        float64 // ms; 0 for op "all"
}

// TestRunScript runs run.sh on 2,000 records for one second per workload
// and checks that every workload ran on both engines and reported its
// throughput and latencies. It takes ~25 s once the build cache holds
// Pebble; it is skipped with -short, and when the modules cmd/pebble needs
// cannot be fetched (run.sh exits 3).
func TestRunScript(t *testing.T) {
	out, rows, page := runScript(t)
	for _, want := range []string{"Throughput (ops/s):", "| F |", "Latency (ms), bloomkv / Pebble:", "| 2 | A | read_50 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	checkRows(t, rows, "ABCDEF")
	checkPage(t, page)
}

// TestRunScript_PointReadsGet runs run.sh as TestRunScript does, with
// --point-reads get, on the workloads that read: both engines answer
// reads of present keys with their point lookups, and scans with
// iterators.
func TestRunScript_PointReadsGet(t *testing.T) {
	out, rows, _ := runScript(t, "--point-reads", "get", "--workloads", "A C E")
	if !strings.Contains(out, "point reads by get") {
		t.Errorf("report does not say the reads were gets:\n%s", out)
	}
	checkRows(t, rows, "ACE")
}

// TestRunScript_Binding runs run.sh --test-binding: the binding's own
// tests (bloomkv_db_test.go), in the driver's module, check that its
// pooled, refreshed iterators read the latest writes, the driver's own
// included, on one thread and on several, and its benchmarks run once.
func TestRunScript_Binding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Pebble's cmd/pebble")
	}
	out := execScript(t, "--test-binding", "--dir", t.TempDir())
	for _, want := range []string{"--- PASS: TestBloomkvBinding_ReusedIteratorsSeeLatestWrites",
		"--- PASS: TestBloomkvBinding_ConcurrentReaders", "--- PASS: TestBloomkvBinding_MemTableSize/bloomkv",
		"--- PASS: TestBloomkvBinding_MemTableSize/pebble", "--- PASS: TestBloomkvBinding_SettleAsksBloomkv/get",
		"--- PASS: TestBloomkvBinding_SameAnswersAsPebble/bloomkv/get", "--- PASS: TestBloomkvBinding_CommitSyncs", "BenchmarkBloomkvBinding_Scan", "BenchmarkBloomkvBinding_Read",
		"allocs/op", "\nok "} {
		if !strings.Contains(out, want) {
			t.Errorf("run.sh --test-binding: output lacks %q:\n%s", want, out)
		}
	}
}

// runScript runs run.sh on 2,000 records, one second per run on 2 threads,
// with args, and returns its output, its TSV rows and the path of its
// Markdown page.
func runScript(t *testing.T, args ...string) (string, []resultRow, string) {
	if testing.Short() {
		t.Skip("builds Pebble's cmd/pebble and runs 12 YCSB runs")
	}
	dir := t.TempDir()
	tsv := vfs.Default.PathJoin(dir, "results.tsv")
	page := vfs.Default.PathJoin(dir, "ycsb.md")
	out := execScript(t, append([]string{"--keys", "2000", "--duration", "1s", "--threads", "2",
		"--rounds", "1", "--dir", vfs.Default.PathJoin(dir, "work"), "--tsv", tsv, "--markdown", page}, args...)...)
	return out, readRows(t, tsv), page
}

// execScript runs run.sh with args and returns its output. It skips the
// test when there is no bash or the modules cmd/pebble needs cannot be
// fetched (run.sh exits 3), and fails it when run.sh fails.
func execScript(t *testing.T, args ...string) string {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, name := range harnessFiles {
		f, err := vfs.Default.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bash, append([]string{"run.sh"}, args...)...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("modules unavailable:\n%s", out)
	}
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	return string(out)
}

// checkPage checks the Markdown page --markdown wrote: the command line
// that makes it again, the date, the tables and the headline ratios.
func checkPage(t *testing.T, page string) {
	f, err := vfs.Default.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# YCSB against Pebble", "Generated by `cmd/bloomkv/ycsb/run.sh --keys 2000 --duration 1s",
		"CPUs, go", "| workload | bloomkv, 2 thr | Pebble, 2 thr | ratio |", "Throughput ratio, bloomkv / Pebble: from "} {
		if !strings.Contains(string(data), want) {
			t.Errorf("page lacks %q:\n%s", want, data)
		}
	}
}

// checkRows checks that each of the workloads has, on each engine, one
// row of positive throughput for the whole workload and one for each of
// its operations, whose latencies are positive and ordered p50 <= p99 <=
// max, and that no other workload has rows.
func checkRows(t *testing.T, rows []resultRow, workloads string) {
	seen := map[[3]string]bool{}
	for _, r := range rows {
		key := [3]string{r.workload, r.engine, r.op}
		if seen[key] {
			t.Errorf("%v reported twice", key)
		}
		seen[key] = true
		if r.opsPerSec <= 0 {
			t.Errorf("%v: %v ops/s", key, r.opsPerSec)
		}
		if r.op != "all" && !(0 < r.p50 && r.p50 <= r.p99 && r.p99 <= r.max) {
			t.Errorf("%v: latencies p50 %v, p99 %v, max %v ms", key, r.p50, r.p99, r.max)
		}
	}
	want := 0
	for w, ops := range ycsbOps {
		if !strings.Contains(workloads, w) {
			continue
		}
		want += 2 * (1 + len(ops))
		for _, e := range []string{"bloomkv", "pebble"} {
			for _, op := range append([]string{"all"}, ops...) {
				if !seen[[3]string{w, e, op}] {
					t.Errorf("no result for workload %s, engine %s, op %s", w, e, op)
				}
			}
		}
	}
	if len(rows) != want {
		t.Errorf("%d result rows, want %d", len(rows), want)
	}
}

// readRows parses run.sh's TSV: round, threads, workload, engine, op,
// ops/s, p50, p99, max ("-" for op "all").
func readRows(t *testing.T, path string) []resultRow {
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []resultRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 9 {
			t.Fatalf("malformed line %q", sc.Text())
		}
		r := resultRow{workload: fields[2], engine: fields[3], op: fields[4]}
		nums := []*float64{&r.opsPerSec, &r.p50, &r.p99, &r.max}
		for i, s := range fields[5:] {
			if s == "-" && r.op == "all" {
				continue
			}
			if *nums[i], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
