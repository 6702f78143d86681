package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/cockroachdb/datadriven"
)

// TestVersion_Apply runs testdata/apply. Each "apply" command applies one
// edit per "--"-separated group of lines to the current version and prints
// the result, which becomes the current version; "reset" starts again from
// an empty version.
//
//	add L<level> <num> <smallest> <largest> [seqs=<lo>-<hi>]
//	del L<level> <num>
func TestVersion_Apply(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	v := &Version{}
	datadriven.RunTest(t, "testdata/apply", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "reset":
			v = &Version{}
			return ""
		case "apply":
			edits, err := parseEdits(td.Input)
			if err != nil {
				return err.Error()
			}
			nv, err := v.Apply(cmp, edits...)
			if err != nil {
				return "error: " + err.Error()
			}
			v.Release()
			v = nv
			return describe(v)
		}
		return "unknown command " + td.Cmd
	})
}

func parseEdits(input string) ([]*VersionEdit, error) {
	edits := []*VersionEdit{{}}
	for _, line := range strings.Split(input, "\n") {
		e := edits[len(edits)-1]
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "--" {
			edits = append(edits, &VersionEdit{})
			continue
		}
		if len(f) < 3 || !strings.HasPrefix(f[1], "L") {
			return nil, fmt.Errorf("bad line %q", line)
		}
		level, err1 := strconv.Atoi(f[1][1:])
		num, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad line %q", line)
		}
		switch {
		case f[0] == "del" && len(f) == 3:
			if e.DeletedFiles == nil {
				e.DeletedFiles = map[DeletedFileEntry]bool{}
			}
			e.DeletedFiles[DeletedFileEntry{Level: level, FileNum: base.FileNum(num)}] = true
		case f[0] == "add" && (len(f) == 5 || len(f) == 6):
			smallest, err1 := base.ParseInternalKey(f[3])
			largest, err2 := base.ParseInternalKey(f[4])
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("bad line %q: %w", line, err)
			}
			m := metaKeys(base.FileNum(num), smallest, largest)
			if len(f) == 6 {
				lo, hi, _ := strings.Cut(strings.TrimPrefix(f[5], "seqs="), "-")
				l, err1 := strconv.ParseUint(lo, 10, 64)
				h, err2 := strconv.ParseUint(hi, 10, 64)
				if err1 != nil || err2 != nil {
					return nil, fmt.Errorf("bad seqs in %q", line)
				}
				m.SmallestSeqNum, m.LargestSeqNum = base.SeqNum(l), base.SeqNum(h)
			}
			e.NewFiles = append(e.NewFiles, NewFileEntry{Level: level, Meta: m})
		default:
			return nil, fmt.Errorf("bad line %q", line)
		}
	}
	return edits, nil
}

// describe prints a version's levels, one table a line with its seqnum range
// and reference count.
func describe(v *Version) string {
	s := v.Describe(func(f *FileMetadata) string {
		return fmt.Sprintf("seqs=%d-%d refs=%d", f.SmallestSeqNum, f.LargestSeqNum, f.Refs())
	})
	if s == "" {
		return "empty"
	}
	return s
}

func TestVersion_Apply_LeavesOldVersionUntouched(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	v1, err := (&Version{}).Apply(cmp, &VersionEdit{NewFiles: []NewFileEntry{
		{Level: 0, Meta: meta(1, "a#1,SET", "c#2,SET")},
		{Level: 1, Meta: meta(2, "a#0,SET", "b#0,SET")},
		{Level: 1, Meta: meta(3, "d#0,SET", "e#0,SET")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	before := describe(v1)
	v2, err := v1.Apply(cmp, &VersionEdit{
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 2}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: meta(4, "f#0,SET", "g#0,SET")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	after := strings.ReplaceAll(before, "refs=1", "refs=2")
	after = strings.Replace(after, "000002:[a#0,SET-b#0,SET] seqs=0-0 refs=2", "000002:[a#0,SET-b#0,SET] seqs=0-0 refs=1", 1)
	if got := describe(v1); got != after {
		t.Fatalf("old version changed:\n%s\nwant\n%s", got, after)
	}
	if len(v2.Levels[1]) != 2 || v2.Levels[1][0].FileNum != 3 || v2.Levels[1][1].FileNum != 4 {
		t.Fatalf("new version:\n%s", describe(v2))
	}
	if obsolete := v1.Release(); len(obsolete) != 1 || obsolete[0].FileNum != 2 {
		t.Fatalf("releasing the old version freed %v, want table 2 only", obsolete)
	}
	if obsolete := v2.Release(); len(obsolete) != 3 {
		t.Fatalf("releasing the new version freed %v, want 3 tables", obsolete)
	}
}

func TestVersion_Apply_ErrorRefsNothing(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	m := meta(1, "a#1,SET", "c#2,SET")
	v, err := (&Version{}).Apply(cmp, &VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: m}}})
	if err != nil {
		t.Fatal(err)
	}
	bad := []*VersionEdit{
		{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(2, "b#1,SET", "d#1,SET")}}},
		{DeletedFiles: map[DeletedFileEntry]bool{{Level: 2, FileNum: 1}: true}},
		{NewFiles: []NewFileEntry{{Level: 3, Meta: meta(1, "x#1,SET", "y#1,SET")}}},
		{NewFiles: []NewFileEntry{{Level: NumLevels, Meta: meta(5, "x#1,SET", "y#1,SET")}}},
		{NewFiles: []NewFileEntry{{Level: 2}}},
	}
	for i, e := range bad {
		if nv, err := v.Apply(cmp, e); err == nil {
			t.Fatalf("edit %d: Apply succeeded:\n%s", i, describe(nv))
		}
		if m.Refs() != 1 {
			t.Fatalf("edit %d: failed Apply left refs=%d", i, m.Refs())
		}
	}
}

func TestVersion_Apply_ThroughEncoding(t *testing.T) {
	// Replaying encoded edits gives the same version as applying the edits.
	cmp := base.DefaultComparer.Compare
	edits := []*VersionEdit{
		{ComparerName: "leveldb.BytewiseComparator", NextFileNum: 7},
		{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(3, "b#5,SET", "f#4,DEL")}}, LastSeqNum: 5},
		{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(4, "a#6,SET", "z#7,SET")}}, LastSeqNum: 7},
		{DeletedFiles: map[DeletedFileEntry]bool{{Level: 0, FileNum: 3}: true, {Level: 0, FileNum: 4}: true},
			NewFiles: []NewFileEntry{{Level: 1, Meta: meta(5, "a#6,SET", "c#0,SET")}, {Level: 1, Meta: meta(6, "d#0,SET", "z#7,SET")}}},
	}
	direct, err := (&Version{}).Apply(cmp, edits...)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []*VersionEdit
	for _, e := range edits {
		var d VersionEdit
		if err := d.Decode(e.Encode()); err != nil {
			t.Fatal(err)
		}
		replayed = append(replayed, &d)
	}
	again, err := (&Version{}).Apply(cmp, replayed...)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := describe(direct), describe(again); a != b || !bytes.Contains([]byte(a), []byte("000006")) {
		t.Fatalf("direct:\n%s\nreplayed:\n%s", a, b)
	}
}

// TestBuilder_Accumulate_Contradictions feeds edits whose fields contradict
// each other or the tables before them; each must be refused with an
// error saying what is wrong.
func TestBuilder_Accumulate_Contradictions(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	seqs := func(m *FileMetadata, lo, hi base.SeqNum) *FileMetadata {
		m.SmallestSeqNum, m.LargestSeqNum = lo, hi
		return m
	}
	start := &VersionEdit{NextFileNum: 10, LastSeqNum: 20, NewFiles: []NewFileEntry{{Level: 1, Meta: meta(3, "c#5,SET", "f#6,SET")}}}
	tests := []struct {
		name string
		edit *VersionEdit
		want string
	}{
		{"added twice", &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(3, "a#7,SET", "b#7,SET")}}},
			"table 000003 at L0, already present at L1"},
		{"deleted absent", &VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 4}: true}},
			"deletes table 000004 from L1, which does not hold it"},
		{"inverted keys", &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(4, "z#7,SET", "a#7,SET")}}},
			"smallest key sorts after its largest"},
		{"inverted seqnums", &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: seqs(meta(4, "a#7,SET", "b#7,SET"), 9, 7)}}},
			"seqnums 9-7, smallest above largest"},
		{"file at next", &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(10, "a#7,SET", "b#7,SET")}}},
			"not below the next file number 000010"},
		{"log at next", &VersionEdit{LogNum: 12, NextFileNum: 11}, "log number 000012, not below the next file number 000011"},
		{"seqnum above last", &VersionEdit{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(4, "a#21,SET", "b#7,SET")}}},
			"holding seqnum 21, above the last seqnum 20"},
		{"no metadata", &VersionEdit{NewFiles: []NewFileEntry{{Level: 2}}}, "without metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(&Version{}, cmp)
			if err := b.Accumulate(start); err != nil {
				t.Fatal(err)
			}
			err := b.Accumulate(tt.edit)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Accumulate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestBuilder_Build_Overlap builds L1 tables that share a user key: the
// edits are each sound, the version they make is not.
func TestBuilder_Build_Overlap(t *testing.T) {
	b := NewBuilder(&Version{}, base.DefaultComparer.Compare)
	for _, e := range []*VersionEdit{
		{NextFileNum: 9, LastSeqNum: 9, NewFiles: []NewFileEntry{{Level: 1, Meta: meta(3, "c#5,SET", "f#6,SET")}}},
		{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(4, "f#2,SET", "k#1,SET")}}},
	} {
		if err := b.Accumulate(e); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := b.Build(); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("Build = %v, %v; want an overlap error", v, err)
	}
}

// TestBuilder_Accumulate_GlobalSeqNum checks that an ingested table's
// seqnums must be its global seqnum.
func TestBuilder_Accumulate_GlobalSeqNum(t *testing.T) {
	ok := meta(3, "a#9,SET", "c#9,SET")
	ok.SmallestSeqNum, ok.LargestSeqNum, ok.GlobalSeqNum = 9, 9, 9
	bad := meta(4, "d#8,SET", "f#9,SET")
	bad.SmallestSeqNum, bad.LargestSeqNum, bad.GlobalSeqNum = 8, 9, 9
	b := NewBuilder(&Version{}, base.DefaultComparer.Compare)
	if err := b.Accumulate(&VersionEdit{NewFiles: []NewFileEntry{{Level: 6, Meta: ok}}}); err != nil {
		t.Fatalf("ingested table with matching seqnums: %v", err)
	}
	err := b.Accumulate(&VersionEdit{NewFiles: []NewFileEntry{{Level: 6, Meta: bad}}})
	if err == nil || !strings.Contains(err.Error(), "global seqnum") {
		t.Fatalf("err = %v, want a refusal of seqnums other than the global one", err)
	}
}

// TestBuilder_Build_CountersAfterTables adds tables in edits that set no
// counters, then sets counters they contradict: Accumulate cannot tell
// yet, Build must (LevelDB and Pebble refuse a MANIFEST whose tables
// hold seqnums past its last one, or numbers past its next).
func TestBuilder_Build_CountersAfterTables(t *testing.T) {
	tests := []struct {
		name  string
		edits []*VersionEdit
		want  string
	}{
		{"seqnum above a later last", []*VersionEdit{
			{NewFiles: []NewFileEntry{{Level: 0, Meta: meta(4, "a#100,SET", "b#1,SET")}}},
			{NextFileNum: 20, LastSeqNum: 5},
		}, "table 000004:[a#100,SET-b#1,SET] holding seqnum 100, above the last seqnum 5"},
		{"number at a later next", []*VersionEdit{
			{LastSeqNum: 9, NewFiles: []NewFileEntry{{Level: 1, Meta: meta(30, "a#1,SET", "b#1,SET")}}},
			{NextFileNum: 30},
		}, "table 000030:[a#1,SET-b#1,SET], not below the next file number 000030"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(&Version{}, base.DefaultComparer.Compare)
			for _, e := range tt.edits {
				if err := b.Accumulate(e); err != nil {
					t.Fatalf("Accumulate: %v", err)
				}
			}
			if v, err := b.Build(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build = %v, %v; want an error containing %q", v, err, tt.want)
			}
		})
	}
}
