package pebbleadapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// TestPebbleScript runs testdata/pebble: scripts that show, query by query,
// when Pebble consults a filter made by ToPebble. The policy is exact (a
// "filter" listing its keys), so the counts never depend on luck.
//
// Commands:
//
//	open [register=levels|filters|none]  (re)open the DB; levels (default): the
//	                                      policy in every Levels[i], filters: only
//	                                      in Options.Filters, none: not at all
//	flush                                 set the input's keys (space-separated,
//	                                      value = key) and flush them as a table
//	compact                               compact everything (to L6)
//	lsm                                   tables per non-empty level
//	get <key>...                          Get each key; print the result and the
//	                                      filter queries it made
//	seek-prefix [use-l6] <key>...         the same with Iterator.SeekPrefixGE
func TestPebbleScript(t *testing.T) {
	datadriven.Walk(t, "testdata/pebble", func(t *testing.T, path string) {
		s := &pebbleScript{fs: vfs.NewMem()}
		defer s.close(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return s.run(t, td)
		})
	})
}

type pebbleScript struct {
	fs vfs.FS
	db *pebble.DB
}

func (s *pebbleScript) close(t *testing.T) {
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			t.Fatal(err)
		}
		s.db = nil
	}
}

func (s *pebbleScript) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "open":
		return s.open(t, td)
	case "flush":
		b := s.db.NewBatch()
		for _, k := range strings.Fields(td.Input) {
			if err := b.Set([]byte(k), []byte(k), nil); err != nil {
				return err.Error()
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err.Error()
		}
		if err := s.db.Flush(); err != nil {
			return err.Error()
		}
		return s.lsm()
	case "compact":
		if err := s.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
			return err.Error()
		}
		return s.lsm()
	case "lsm":
		return s.lsm()
	case "get", "seek-prefix":
		return s.lookups(t, td)
	}
	t.Fatalf("unknown command %q", td.Cmd)
	return ""
}

// exactPolicy is a ToPebble policy without false positives.
func exactPolicy() pebble.FilterPolicy {
	return ToPebble(recordingPolicy{mayContainCalls: new(int)})
}

func (s *pebbleScript) open(t *testing.T, td *datadriven.TestData) string {
	s.close(t)
	register := "levels"
	td.MaybeScanArgs(t, "register", &register)
	policy := exactPolicy()
	var opts *pebble.Options
	switch register {
	case "levels":
		opts = pebbleOptions(s.fs, policy)
	case "filters":
		opts = pebbleOptions(s.fs, nil)
		opts.Filters = map[string]pebble.FilterPolicy{policy.Name(): policy}
	case "none":
		opts = pebbleOptions(s.fs, nil)
	default:
		t.Fatalf("unknown register=%s", register)
	}
	opts.Comparer = wholeKeyPrefix()
	db, err := pebble.Open("db", opts)
	if err != nil {
		return err.Error()
	}
	s.db = db
	return s.lsm()
}

func (s *pebbleScript) lsm() string {
	var b strings.Builder
	for level, m := range s.db.Metrics().Levels {
		if m.NumFiles > 0 {
			fmt.Fprintf(&b, "L%d: tables=%d\n", level, m.NumFiles)
		}
	}
	if b.Len() == 0 {
		return "empty\n"
	}
	return b.String()
}

func (s *pebbleScript) lookups(t *testing.T, td *datadriven.TestData) string {
	var b strings.Builder
	for _, arg := range td.CmdArgs {
		if arg.Key == "use-l6" {
			continue
		}
		var result string
		c := countFilter(s.db, func() {
			if td.Cmd == "get" {
				result = s.get([]byte(arg.Key))
			} else {
				result = s.seekPrefix(t, []byte(arg.Key), td.HasArg("use-l6"))
			}
		})
		fmt.Fprintf(&b, "%s: %s; filter said absent %d, maybe %d\n", arg.Key, result, c.hits, c.misses)
	}
	return b.String()
}

func (s *pebbleScript) get(key []byte) string {
	v, closer, err := s.db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return "not found"
	case err != nil:
		return err.Error()
	}
	defer closer.Close()
	return fmt.Sprintf("found %s", v)
}

func (s *pebbleScript) seekPrefix(t *testing.T, key []byte, useL6 bool) string {
	it, err := s.db.NewIter(&pebble.IterOptions{UseL6Filters: useL6})
	if err != nil {
		return err.Error()
	}
	defer it.Close()
	if !it.SeekPrefixGE(key) {
		return "not found"
	}
	return fmt.Sprintf("found %s", it.Key())
}
