// Package itertest holds what the tests of internal iterators share:
// RunOps drives a base.InternalIterator from a script of positioning
// operations, for the datadriven tests of the packages that implement one
// (memtable, sstable, iterator, compaction), and SliceIter is an in-memory
// iterator over parsed entries, to feed merges and compactions; NearKey
// picks seek keys next to the keys a randomized test holds.
// SlashSplit and UserSplit, the Split functions of the prefix tests, are
// internal/splits' FirstSlash and User: the built-in Splits that the
// command-line tool and the bench's prefix-scan workload use, so tests,
// benchmarks and the tool cut keys the same way.
package itertest

import (
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
)

// RunOps applies script to it, one operation a line:
//
//	first | last | next | prev | seek-ge KEY | seek-lt KEY
//	seek-prefix-ge KEY [PREFIX]
//
// seek-prefix-ge seeks with base.SeekPrefixGE, PREFIX being KEY's prefix
// (KEY itself when left out).
// Blank lines are skipped. For each operation RunOps writes one line: the
// entry the iterator lands on, as format prints it; "err=<error>" when it
// stopped on an error; "." when it is exhausted. An unknown operation, a
// seek without its key, or a result that disagrees with Valid is an error.
func RunOps(it base.InternalIterator, script string, format func(base.InternalIterator) string) (string, error) {
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		ok, err := step(it, f)
		if err != nil {
			return "", fmt.Errorf("%q: %w", line, err)
		}
		if ok != it.Valid() {
			return "", fmt.Errorf("%q returned %t but Valid is %t", line, ok, it.Valid())
		}
		switch {
		case ok:
			b.WriteString(format(it))
		case it.Error() != nil:
			b.WriteString("err=" + it.Error().Error())
		default:
			b.WriteString(".")
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// step applies one operation, given as its fields.
func step(it base.InternalIterator, f []string) (bool, error) {
	switch op := f[0]; op {
	case "first":
		return it.First(), nil
	case "last":
		return it.Last(), nil
	case "next":
		return it.Next(), nil
	case "prev":
		return it.Prev(), nil
	case "seek-prefix-ge":
		if len(f) != 2 && len(f) != 3 {
			return false, fmt.Errorf("%s takes a key and an optional prefix", op)
		}
		prefix := f[len(f)-1]
		return base.SeekPrefixGE(it, []byte(prefix), []byte(f[1])), nil
	case "seek-ge", "seek-lt":
		if len(f) != 2 {
			return false, fmt.Errorf("%s takes one key", op)
		}
		if op == "seek-ge" {
			return it.SeekGE([]byte(f[1])), nil
		}
		return it.SeekLT([]byte(f[1])), nil
	default:
		return false, fmt.Errorf("unknown operation %q", op)
	}
}

// KeyValue formats the iterator's entry as "key:value", the key as
// base.InternalKey prints it.
func KeyValue(it base.InternalIterator) string {
	return fmt.Sprintf("%s:%s", it.Key(), it.Value())
}
