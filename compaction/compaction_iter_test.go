package compaction

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/cockroachdb/datadriven"
)

// TestCompactionIter runs testdata/compaction_iter. Command:
//
//	iter [snapshots=(s1,s2,...)] [elide=(k1,k2,...)|elide=all] [zero]
//	<entries, user#seq,KIND[:value], whitespace-separated; !err fails the next>
//
// It prints the kept versions, one user key per line, and the stats;
// zero sets compactionIter.zero (RunConfig.ZeroSeqNums).
func TestCompactionIter(t *testing.T) {
	datadriven.RunTest(t, "testdata/compaction_iter", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "iter" {
			return fmt.Sprintf("unknown command %q", d.Cmd)
		}
		zero := d.HasArg("zero")
		d.CmdArgs = filterArgs(d.CmdArgs, "snapshots", "elide")
		snapshots, elide := parseIterArgs(t, d)
		// The entries parsed stay put: both ways of reading them, in
		// place and copied, must yield the same.
		var outs [2]string
		for j, stable := range []bool{false, true} {
			input := itertest.ParseEntries(t, strings.Join(strings.Fields(d.Input), " "))
			ci := newCompactionIter(base.DefaultComparer, stable, input, snapshots, elide, nil, new(RunStats))
			ci.zero = zero
			outs[j] = drainCompactionIter(ci)
		}
		if outs[0] != outs[1] {
			t.Fatalf("copied input:\n%s\ninput read in place:\n%s", outs[0], outs[1])
		}
		return outs[0]
	})
}

// drainCompactionIter prints the kept versions of each user key, one key
// per line, then the error if any and the stats.
func drainCompactionIter(ci *compactionIter) string {
	var b strings.Builder
	for {
		versions, ok := ci.nextKey()
		if !ok {
			break
		}
		for j, v := range versions {
			if j > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%s", v.key, v.value)
		}
		b.WriteString("\n")
	}
	if err := ci.Error(); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	fmt.Fprintf(&b, "in=%d shadowed=%d elided=%d", ci.stats.EntriesIn, ci.stats.Shadowed, ci.stats.TombstonesElided)
	if ci.zero {
		fmt.Fprintf(&b, " zeroed=%d", ci.stats.SeqNumsZeroed)
	}
	b.WriteString("\n")
	return b.String()
}

func parseIterArgs(t *testing.T, d *datadriven.TestData) ([]base.SeqNum, func([]byte) bool) {
	var snapshots []base.SeqNum
	var elide func([]byte) bool
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "snapshots":
			for _, v := range arg.Vals {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatalf("bad snapshot %q", v)
				}
				snapshots = append(snapshots, base.SeqNum(n))
			}
		case "elide":
			keys := map[string]bool{}
			for _, v := range arg.Vals {
				keys[v] = true
			}
			elide = func(k []byte) bool { return keys["all"] || keys[string(k)] }
		default:
			t.Fatalf("unknown argument %q", arg.Key)
		}
	}
	return snapshots, elide
}
