package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// interruptSignals end a run as Ctrl-C does: the command stops, removes
// its temporary stores and exits 1. SIGTERM is what timeout(1), kill(1)
// and service managers send.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), interruptSignals...)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes: 0 success, 1 a command failed at run time, 2 the command line
// was wrong.
const (
	exitFailure = 1
	exitUsage   = 2
)

// app holds what every command shares: where output goes and the flags that
// apply to all of them.
type app struct {
	stdout, stderr io.Writer
	json           bool   // --json: machine-readable output on stdout
	split          string // --split of db and sstable: a built-in Split's name
	verbose        bool   // db --verbose: log the store's events on stderr
}

// run executes the command line args and returns the process exit code.
// Errors are printed as one line on stderr, never with a usage dump or a
// stack trace.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if errors.Is(err, errReported) {
		return exitFailure
	}
	if errors.Is(err, context.Canceled) {
		err = errors.New("interrupted")
	}
	fmt.Fprintf(stderr, "bloomkv: %s\n", oneLine(err))
	if isUsageError(err) {
		return exitUsage
	}
	return exitFailure
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "bloomkv",
		Short: "Benchmark and inspect bloomkv stores, tables and filters",
		Long: "bloomkv benchmarks the bloomkv LSM store with and without Bloom filters " +
			"(against Pebble on request), inspects stores, tables and filters, and checks what " +
			"stores keep when the process writing them is killed.",
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print machine-readable JSON on stdout")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.benchCommand(),
		a.crashCommand(),
		a.dbCommand(),
		a.sstableCommand(),
		a.filterCommand(),
	)
	return root
}

// errReported is returned by a command that has already reported its
// failures on stderr, one line each: run exits with status 1 without
// adding a line of its own.
var errReported = errors.New("failure reported on stderr")

// usageError marks a mistake in the command line, as opposed to a failure
// of the work the command was asked to do.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func isUsageError(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// Cobra reports unknown subcommands as plain errors.
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// exactArgs is cobra.ExactArgs with the error marked as a usage error and
// naming the arguments expected.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(names) == 0 && len(args) > 0:
			return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
		case len(args) != len(names):
			return usagef("%s: want %s, got %d argument(s)",
				cmd.CommandPath(), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// oneOrMoreArgs is cobra.MinimumNArgs(1) with the error marked as a usage
// error and naming the argument expected.
func oneOrMoreArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s: want at least one %s", cmd.CommandPath(), name)
		}
		return nil
	}
}

// commandGroup returns a command that only holds subcommands. Cobra would
// print help and succeed for a missing or unknown subcommand; here both are
// usage errors.
func commandGroup(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return usagef("%s: want a command (%s); see %s --help",
				cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
		},
	}
}

// oneLine flattens err's message to a single line without the "bloomkv: "
// prefix some package errors already carry, since run adds its own.
func oneLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "bloomkv: ")
	msg = strings.ReplaceAll(msg, "\r\n", "; ")
	return strings.ReplaceAll(msg, "\n", "; ")
}

// byteSize is a flag holding a size in bytes, written as a number with an
// optional unit: B, KB, KiB, MB, MiB, GB, GiB (decimal and binary).
type byteSize int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1000, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1000 * 1000, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1000 * 1000 * 1000, "gib": 1 << 30,
}

// String implements pflag.Value.
func (b *byteSize) String() string { return fmtBytes(int64(*b)) }

// Type implements pflag.Value.
func (b *byteSize) Type() string { return "size" }

// Set implements pflag.Value.
func (b *byteSize) Set(s string) error {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	x, err := strconv.ParseFloat(s[:i], 64)
	unit, ok := sizeUnits[strings.ToLower(s[i:])]
	if err != nil || !ok || x*float64(unit) > math.MaxInt64/2 {
		return fmt.Errorf("%q is not a size (want e.g. 8MiB, 512KiB, 1048576)", s)
	}
	*b = byteSize(x * float64(unit))
	return nil
}
