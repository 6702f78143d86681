package iterator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/cockroachdb/datadriven"
)

// levelTables is a level of in-memory tables for the Level tests: each
// table's entries, the tables that fail to open, and a log of the opens and
// closes the level iterator makes.
type levelTables struct {
	files   []*manifest.FileMetadata
	entries map[base.FileNum]*itertest.SliceIter
	badOpen map[base.FileNum]bool
	open    []*itertest.SliceIter
	log     []string
}

// define parses one table a line: its entries as itertest.ParseEntries
// reads them, or "!open" before them for a table that cannot be opened.
func (lt *levelTables) define(t *testing.T, input string) {
	*lt = levelTables{entries: map[base.FileNum]*itertest.SliceIter{}, badOpen: map[base.FileNum]bool{}}
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		num := base.FileNum(len(lt.files) + 1)
		if rest, ok := strings.CutPrefix(line, "!open "); ok {
			lt.badOpen[num] = true
			line = rest
		}
		s := itertest.ParseEntries(t, line)
		lt.entries[num] = s
		lt.files = append(lt.files, &manifest.FileMetadata{
			FileNum: num, Smallest: s.Keys[0], Largest: s.Keys[len(s.Keys)-1],
		})
	}
}

// openTable is the TableOpener of the tests. It keeps only the entries in
// [lower, upper), as a table's iterator does.
func (lt *levelTables) openTable(f *manifest.FileMetadata, lower, upper []byte) (base.InternalIterator, error) {
	if lt.badOpen[f.FileNum] {
		lt.log = append(lt.log, fmt.Sprintf("open %s failed", f.FileNum))
		return nil, fmt.Errorf("opening %s: %w", f.FileNum, itertest.ErrInjected)
	}
	lt.log = append(lt.log, "open "+f.FileNum.String())
	src := lt.entries[f.FileNum]
	it := itertest.NewSliceIter(src.Cmp, nil, nil)
	for i, k := range src.Keys {
		if OverlapsBounds(src.Cmp, k.UserKey, k.UserKey, lower, upper) {
			if i == src.FailAt {
				it.FailAt = len(it.Keys)
			}
			it.Keys = append(it.Keys, k)
			it.Vals = append(it.Vals, src.Vals[i])
		}
	}
	lt.open = append(lt.open, it)
	return &loggedIter{SliceIter: it, log: &lt.log, num: f.FileNum}, nil
}

// loggedIter records its Close in the log.
type loggedIter struct {
	*itertest.SliceIter
	log *[]string
	num base.FileNum
}

func (l *loggedIter) Close() error {
	*l.log = append(*l.log, "close "+l.num.String())
	return l.SliceIter.Close()
}

// TestLevel runs testdata/level: "define" sets up a level, one table a
// line; "iter [lower=K] [upper=K]" runs itertest's operations over it and
// prints, after the entries, which tables the iterator opened and closed.
func TestLevel(t *testing.T) {
	var lt levelTables
	datadriven.RunTest(t, "testdata/level", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			lt.define(t, d.Input)
			return ""
		case "iter":
			var lower, upper []byte
			for _, arg := range d.CmdArgs {
				switch arg.Key {
				case "lower":
					lower = []byte(arg.Vals[0])
				case "upper":
					upper = []byte(arg.Vals[0])
				default:
					t.Fatalf("unknown argument %q", arg.Key)
				}
			}
			lt.log, lt.open = nil, nil
			l := NewLevel(base.DefaultComparer.Compare, lt.files, lower, upper, lt.openTable)
			out, err := itertest.RunOps(l, d.Input, itertest.KeyValue)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				out += "close: " + err.Error() + "\n"
			}
			for _, it := range lt.open {
				if !it.Closed() {
					t.Fatalf("a table iterator was left open")
				}
			}
			for _, line := range lt.log {
				out += line + "\n"
			}
			return out
		default:
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
	})
}
