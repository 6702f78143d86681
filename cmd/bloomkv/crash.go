package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkv/bloomkv/internal/crashtest"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// crash checks kv's promises after a crash of the process on the disk
// and file system it runs on (internal/crashtest): children write to
// stores and are killed, and each store must hold what its WAL mode
// promises.

// crashOptions are the flags of crash.
type crashOptions struct {
	dir           string
	duration      time.Duration
	kills         int
	writers       []int
	syncShares    []float64
	memtables     []int64
	backgroundWAL bool
	killWithin    time.Duration
	seed          uint64
	keep          bool
	markdown      string
	command       string // the command line, for --markdown and replays
	replay        string // the command line less what picks rounds, to which a seed is added
}

func (a *app) crashCommand() *cobra.Command {
	o := crashOptions{duration: time.Minute, writers: []int{1, 2, 4, 8}, syncShares: []float64{0, 0.02, 0.5, 1},
		memtables: []int64{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}, killWithin: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "crash",
		Short: "Kill processes writing to stores and check what the stores kept",
		Long: "crash checks the store's promises after a crash of the process, on this machine's disk and " +
			"file system: in rounds, each a new store, a child process (this program again) writes from " +
			"several goroutines (Set, Delete, DeleteRange, batches, some Sync, some Flush, some batches as " +
			"tables ingested) and reports each " +
			"write acknowledged; it is killed with SIGKILL at a random moment, in Open, while writing, in Close " +
			"or after it, and the next child reopens the store and checks it before it writes on. The store must " +
			"hold every acknowledged write (with --background-wal: a prefix of them, missing at most the " +
			"documented bound), batches whole, and no value that was never written. A failed round keeps its " +
			"store and prints the seed that replays it (--seed); the exit status is then 1.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if spec, ok := os.LookupEnv(crashtest.ChildEnv); ok {
				return crashtest.RunChild(spec, cmd.InOrStdin(), a.stdout)
			}
			o.command = commandLine(cmd)
			o.replay = replayLine(cmd)
			return a.runCrash(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory in which the run makes its own, for the stores (default: the system's temporary directory)")
	f.DurationVar(&o.duration, "duration", o.duration, "start rounds until this much time has passed")
	f.IntVar(&o.kills, "kills", 0, "run until this many children were killed instead of for --duration")
	f.Var(newListFlag(&o.writers, "ints", strconv.Atoi, strconv.Itoa), "writers", "writing goroutines: each round picks one of these counts")
	f.Var(newListFlag(&o.syncShares, "shares", parseShare, fmtShare), "sync", "share of writes acknowledged with kv.Sync: each round picks one of these")
	f.Var(newListFlag(&o.memtables, "sizes", parseSize, sizeArg), "memtable", "kv.Options.MemTableSize: each round picks one of these")
	f.BoolVar(&o.backgroundWAL, "background-wal", false, "open the stores with kv.Options.BackgroundWALWrites, which may lose the last acknowledged NoSync writes, within a bound")
	f.DurationVar(&o.killWithin, "kill-within", o.killWithin, "the longest a child writes before its kill")
	f.Uint64Var(&o.seed, "seed", 0, "replay the one round of this seed (a failure prints the command)")
	f.BoolVar(&o.keep, "keep", false, "keep every round's store, not only those of failed rounds")
	f.StringVar(&o.markdown, "markdown", "", "also write the results as a Markdown page to `FILE`, with the command line, machine, file system, Go version and date (docs/crash.md is one)")
	return cmd
}

// replayLine returns the command line of cmd without the flags that
// pick rounds (how long, how many, which seed) or only report them, and
// with --dir kept, so that a replay runs on the same file system.
func replayLine(cmd *cobra.Command) string {
	skip := map[string]bool{"duration": true, "kills": true, "seed": true, "markdown": true, "keep": true, "json": true}
	parts := []string{"go run ./cmd/bloomkv", cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case skip[f.Name]:
		case f.Value.Type() == "bool":
			parts = append(parts, "--"+f.Name)
		default:
			parts = append(parts, "--"+f.Name, f.Value.String())
		}
	})
	return strings.Join(parts, " ")
}

func (a *app) runCrash(ctx context.Context, o crashOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("crash: finding this program to run children: %w", err)
	}
	dir, err := crashDir(o.dir)
	if err != nil {
		return err
	}
	cfg := crashtest.Config{Dir: dir, Child: []string{self, "crash"}, Duration: o.duration, Kills: o.kills, Seed: o.seed,
		Writers: o.writers, SyncShares: o.syncShares, MemTableSizes: o.memtables, BackgroundWAL: o.backgroundWAL,
		KillWithin: o.killWithin, Keep: o.keep}
	rep := &crashReport{Command: o.command, Machine: machine(), FileSystem: fileSystem(dir), Dir: dir,
		BackgroundWAL: o.backgroundWAL, LossBound: crashtest.LossBound}
	if !a.json {
		fmt.Fprintf(a.stdout, "%s; stores in %s\n", crashModeLine(rep), dir)
		rounds := 0
		cfg.OnRound = func(r crashtest.RoundResult) {
			rounds++
			a.printRound(rounds, r, o)
		}
	}
	s, err := crashtest.Run(ctx, cfg)
	rep.Summary = s
	if s.Failures == 0 && !o.keep {
		_ = vfs.Default.RemoveAll(dir)
	}
	if err != nil {
		return err
	}
	return a.finishCrash(rep, o)
}

// finishCrash writes the report, and fails when a round did.
func (a *app) finishCrash(rep *crashReport, o crashOptions) error {
	if o.markdown != "" {
		if err := writeCrashMarkdown(o.markdown, rep, time.Now()); err != nil {
			return err
		}
	}
	if err := a.writeCrashReport(rep); err != nil {
		return err
	}
	if rep.Failures > 0 {
		return fmt.Errorf("crash: %d of %d rounds failed; their stores are kept in %s", rep.Failures, len(rep.Rounds), rep.Dir)
	}
	return nil
}

func (o *crashOptions) check() error {
	switch {
	case o.duration <= 0 && o.kills <= 0 && o.seed == 0:
		return usagef("--duration %v: want a positive duration, or --kills", o.duration)
	case o.kills < 0:
		return usagef("--kills %d: want 0 or more", o.kills)
	case o.killWithin < time.Millisecond:
		return usagef("--kill-within %v: want a millisecond at least", o.killWithin)
	}
	for _, w := range o.writers {
		if w < 1 || w > crashtest.MaxWriters {
			return usagef("--writers %d: want 1 to %d", w, crashtest.MaxWriters)
		}
	}
	for _, m := range o.memtables {
		if err := checkMemTable(m); err != nil {
			return err
		}
	}
	if o.markdown != "" {
		return checkOutputDir("--markdown", o.markdown)
	}
	return nil
}

// crashDir makes the run's own directory, in parent or the system's
// temporary directory: a replay never touches the stores a failed run
// kept.
func crashDir(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dir := filepath.Join(parent, "bloomkv-crash-"+strconv.FormatUint(rand.Uint64(), 36))
	if err := vfs.Default.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("crash: %w", err)
	}
	return dir, nil
}

// listFlag is a flag holding a comma-separated list, each item read by
// parse and written by format. Set replaces the whole list.
type listFlag[T any] struct {
	items  *[]T
	typ    string
	parse  func(string) (T, error)
	format func(T) string
}

func newListFlag[T any](items *[]T, typ string, parse func(string) (T, error), format func(T) string) *listFlag[T] {
	return &listFlag[T]{items: items, typ: typ, parse: parse, format: format}
}

// String implements pflag.Value.
func (l *listFlag[T]) String() string {
	s := make([]string, len(*l.items))
	for i, x := range *l.items {
		s[i] = l.format(x)
	}
	return strings.Join(s, ",")
}

// Type implements pflag.Value.
func (l *listFlag[T]) Type() string { return l.typ }

// Set implements pflag.Value.
func (l *listFlag[T]) Set(s string) error {
	var items []T
	for _, f := range strings.Split(s, ",") {
		x, err := l.parse(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		items = append(items, x)
	}
	*l.items = items
	return nil
}

// parseShare reads a share in [0, 1].
func parseShare(s string) (float64, error) {
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("%q is not a share (want 0 to 1, e.g. 0.02)", s)
	}
	return p, nil
}

func fmtShare(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) }

// parseSize reads a size, as a --size flag does.
func parseSize(s string) (int64, error) {
	var b byteSize
	err := b.Set(s)
	return int64(b), err
}
