package manifest

import (
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

func TestVersion_Overlaps(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	v, err := (&Version{}).Apply(cmp, &VersionEdit{NewFiles: []NewFileEntry{
		{Level: 0, Meta: meta(1, "c#1,SET", "f#2,SET")},
		{Level: 0, Meta: meta(2, "a#3,SET", "d#4,SET")},
		{Level: 1, Meta: meta(3, "a#0,SET", "b#0,SET")},
		{Level: 1, Meta: meta(4, "d#0,SET", "e#0,SET")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		level      int
		start, end string // "" is unbounded
		want       string
	}{
		{0, "e", "z", "[000001]"},
		{0, "", "a", "[000002]"},
		{0, "d", "d", "[000001 000002]"},
		{0, "g", "", "[]"},
		{1, "b", "d", "[000003 000004]"},
		{1, "c", "c", "[]"},
		{1, "", "", "[000003 000004]"},
		{2, "", "", "[]"},
	}
	for _, tt := range tests {
		var start, end []byte
		if tt.start != "" {
			start = []byte(tt.start)
		}
		if tt.end != "" {
			end = []byte(tt.end)
		}
		var nums []string
		for _, f := range v.Overlaps(tt.level, cmp, start, end) {
			nums = append(nums, f.FileNum.String())
		}
		if got := "[" + strings.Join(nums, " ") + "]"; got != tt.want {
			t.Errorf("L%d [%q, %q]: %s, want %s", tt.level, tt.start, tt.end, got, tt.want)
		}
	}
}

func TestVersion_CheckOrdering(t *testing.T) {
	cmp := base.DefaultComparer.Compare
	tests := []struct {
		name  string
		level int
		files []*FileMetadata
		want  string // "" means no error
	}{
		{"l0-oldest-first", 0, []*FileMetadata{meta(1, "a#1,SET", "b#2,SET"), meta(2, "a#3,SET", "b#4,SET")}, ""},
		{"l0-newest-first", 0, []*FileMetadata{meta(2, "a#3,SET", "b#4,SET"), meta(1, "a#1,SET", "b#2,SET")}, "out of order"},
		{"l1-sorted", 1, []*FileMetadata{meta(1, "a#1,SET", "b#2,SET"), meta(2, "c#3,SET", "d#4,SET")}, ""},
		{"l1-shared-user-key", 1, []*FileMetadata{meta(1, "a#1,SET", "b#2,SET"), meta(2, "b#1,SET", "d#4,SET")}, "overlap"},
		{"l1-inverted-bounds", 1, []*FileMetadata{meta(1, "b#1,SET", "a#2,SET")}, "smallest > largest"},
	}
	for _, tt := range tests {
		var v Version
		v.Levels[tt.level] = tt.files
		err := v.CheckOrdering(cmp)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CheckOrdering = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestVersion_Unref_TooOften(t *testing.T) {
	for name, unref := range map[string]func(){
		"table":   func() { new(FileMetadata).Unref() },
		"version": func() { new(Version).Unref() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Unref below zero did not panic", name)
				}
			}()
			unref()
		}()
	}
}

func TestVersion_Describe(t *testing.T) {
	size := func(f *FileMetadata) string { return "size=" + strings.Repeat("#", int(f.Size/100)) }
	if got := (&Version{}).Describe(size); got != "" {
		t.Fatalf("empty version: %q", got)
	}
	var v Version
	v.Levels[0] = []*FileMetadata{meta(1, "a#1,SET", "b#2,SET")}
	v.Levels[2] = []*FileMetadata{meta(2, "c#0,SET", "d#0,DEL"), meta(3, "e#0,SET", "f#0,SET")}
	want := `L0:
  000001:[a#1,SET-b#2,SET] size=#
L2:
  000002:[c#0,SET-d#0,DEL] size=##
  000003:[e#0,SET-f#0,SET] size=###
`
	if got := v.Describe(size); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
