package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/spf13/cobra"
)

// addSplitFlag adds --split to a command group: the built-in Split the
// tool reads with (internal/splits), so that tables whose filters were
// built under it are read with them.
func (a *app) addSplitFlag(cmd *cobra.Command) {
	var names []string
	for _, b := range splits.All {
		names = append(names, b.Name)
	}
	cmd.PersistentFlags().StringVar(&a.split, "split", "",
		"read with this built-in Split (one of "+strings.Join(names, ", ")+"), the one the tables' filters were built under; "+
			"default none: whole keys")
}

// comparer returns the comparer --split names: bytewise order with that
// Split, or the default comparer without --split.
func (a *app) comparer() (*sstable.Comparer, error) {
	if a.split == "" {
		return sstable.DefaultComparer, nil
	}
	b, err := splits.Named(a.split)
	if err != nil {
		return nil, usagef("--split: %v", err)
	}
	return b.Comparer(), nil
}

// warnSplits warns on stderr about the tables, among props (of files
// named in names), whose filters were built under another Split than
// cmp's: the tool reads them without their filters. It names the --split
// that would read them with, when one is built in.
func (a *app) warnSplits(where string, props []*sstable.Properties, cmp *sstable.Comparer) {
	other := map[string]int{}
	for _, p := range props {
		if p.FilterPolicyName != "" && p.FilterSplitName != cmp.SplitName {
			other[p.FilterSplitName]++
		}
	}
	names := make([]string, 0, len(other))
	for n := range other {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(a.stderr, "bloomkv: warning: %s: %d of %d tables have filters built %s, not %s: read without their filters%s\n",
			where, other[n], len(props), describeSplit(n), describeSplit(cmp.SplitName), splitHint(n))
	}
}

// describeSplit names a SplitName in a warning.
func describeSplit(splitName string) string {
	if splitName == "" {
		return "on whole keys"
	}
	return fmt.Sprintf("under Split %q", splitName)
}

// splitHint says how to read filters built under splitName.
func splitHint(splitName string) string {
	switch b, ok := splits.BySplitName(splitName); {
	case splitName == "":
		return " (leave out --split to use them)"
	case ok:
		return fmt.Sprintf(" (--split %s reads them)", b.Name)
	}
	return " (no built-in Split has that name)"
}

// storeTableProperties returns the properties of the tables in the
// store's directory dir, read from each table's footer and properties
// block (no filter is loaded). A table file that does not read is passed
// over: the directory may hold one the store does not use (a flush or
// compaction cut short by a crash leaves its output, which only a
// writable Open deletes), and one the store uses fails the lookups that
// reach it, with the store's own error.
func storeTableProperties(dir string, cmp *sstable.Comparer) ([]*sstable.Properties, error) {
	names, err := vfs.Default.List(dir)
	if err != nil {
		return nil, err
	}
	var props []*sstable.Properties
	for _, name := range names {
		if typ, _, ok := base.ParseFilename(name); !ok || typ != base.FileTypeTable {
			continue
		}
		if p, err := tableProperties(filepath.Join(dir, name), cmp); err == nil {
			props = append(props, p)
		}
	}
	return props, nil
}

// tableProperties opens the table in path without filters and returns
// its properties.
func tableProperties(path string, cmp *sstable.Comparer) (*sstable.Properties, error) {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := sstable.NewReader(f, sstable.ReaderOptions{FileName: path, Comparer: cmp})
	if err != nil {
		return nil, err
	}
	p := *r.Properties()
	return &p, r.Close()
}
