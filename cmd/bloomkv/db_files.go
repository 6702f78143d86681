package main

import (
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
)

// The db commands that work on a store's files as a whole: checkpoint,
// ingest and disk-usage.

func (a *app) dbCheckpointCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint DEST",
		Short: "Copy the store into the new directory DEST, consistently (tables hard-linked where possible)",
		Long: "checkpoint writes a consistent copy of the store in --dir into DEST, which must not " +
			"exist: tables are hard-linked where the filesystem allows and copied otherwise, the " +
			"MANIFEST is written afresh and the WALs are copied. The copy is an ordinary store: " +
			"open it with --dir DEST. It is built under DEST.checkpoint-tmp and renamed at the end.",
		Args: exactArgs("DEST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withDB(*dir, dbRead, func(db *kv.DB) error { return db.Checkpoint(args[0]) })
		},
	}
}

func (a *app) dbIngestCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "ingest FILE...",
		Short: "Add tables written by sstable.Writer to the store (creates the store if --dir holds none)",
		Long: "ingest links (or copies) each FILE, a table written with sequence number 0 by " +
			"sstable.Writer, into the store; their keys become visible at once, above every " +
			"earlier write. The FILEs must be in key order and must not overlap. Warnings about " +
			"filters the store cannot read go to stderr.",
		Args: oneOrMoreArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if *dir == "" {
				return usagef("--dir is required")
			}
			// A missing file creates no store.
			for _, path := range args {
				if _, err := vfs.Default.Stat(path); err != nil {
					return fmt.Errorf("ingest: %w", err)
				}
			}
			return a.withDB(*dir, dbCreate, func(db *kv.DB) error { return db.Ingest(args) })
		},
	}
}

// stderrLogger prints the store's log messages on the app's stderr.
type stderrLogger struct{ a *app }

// Infof prints one message, prefixed "bloomkv: ".
func (l stderrLogger) Infof(format string, args ...any) {
	fmt.Fprintf(l.a.stderr, "bloomkv: "+format+"\n", args...)
}

func (a *app) dbDiskUsageCommand(dir *string) *cobra.Command {
	var start, end string
	cmd := &cobra.Command{
		Use:   "disk-usage",
		Short: "Print an estimate of the bytes of tables holding keys in [--start, --end]",
		Long: "disk-usage prints DB.EstimateDiskUsage: the bytes of the tables whose keys lie in " +
			"[--start, --end] (both inclusive), estimated from the index for tables partly in it. " +
			"Keys only in the WAL count nothing.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lo, hi []byte
			if cmd.Flags().Changed("start") {
				lo = []byte(start)
			}
			if cmd.Flags().Changed("end") {
				hi = []byte(end)
			}
			return a.withDB(*dir, dbRead, func(db *kv.DB) error {
				n, err := db.EstimateDiskUsage(lo, hi)
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, struct {
						Bytes uint64 `json:"bytes"`
					}{n})
				}
				fmt.Fprintln(a.stdout, n)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&start, "start", "", "first key (inclusive; default: the first key)")
	cmd.Flags().StringVar(&end, "end", "", "last key (inclusive; default: the last key)")
	return cmd
}
