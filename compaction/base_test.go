package compaction

import (
	"strings"
	"testing"
)

// TestNewVersion orders the tables it is given as a store keeps them and
// rejects the sets no Version may hold.
func TestNewVersion(t *testing.T) {
	var levels [NumLevels][]*FileMetadata
	levels[0] = []*FileMetadata{parseFile(t, "9:c-d"), parseFile(t, "4:a-z"), parseFile(t, "7:b-k")}
	levels[2] = []*FileMetadata{parseFile(t, "5:m-p"), parseFile(t, "6:a-c")}
	v, err := NewVersion(nil, levels)
	if err != nil {
		t.Fatal(err)
	}
	got := v.Describe(func(f *FileMetadata) string { return "" })
	want := "L0:\n  000004:[a#4,SET-z#4,SET] \n  000007:[b#7,SET-k#7,SET] \n  000009:[c#9,SET-d#9,SET] \n" +
		"L2:\n  000006:[a#6,SET-c#6,SET] \n  000005:[m#5,SET-p#5,SET] \n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if f := levels[0][0]; f.Refs() != 1 {
		t.Errorf("table %s held by %d versions, want 1", f, f.Refs())
	}

	bad := []struct {
		name  string
		level int
		files []string
		want  string
	}{
		{"overlap", 1, []string{"1:a-f", "2:e-k"}, "overlap"},
		{"reversed", 3, []string{"1:k-a"}, "smallest key sorts after its largest"},
		{"repeated number", 0, []string{"1:a-b", "1:c-d"}, "already present"},
	}
	for _, tc := range bad {
		var levels [NumLevels][]*FileMetadata
		for _, s := range tc.files {
			levels[tc.level] = append(levels[tc.level], parseFile(t, s))
		}
		_, err := NewVersion(nil, levels)
		if err == nil || !strings.HasPrefix(err.Error(), "compaction: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a compaction: error saying %q", tc.name, err, tc.want)
		}
	}
	levels = [NumLevels][]*FileMetadata{4: {nil}}
	if _, err := NewVersion(nil, levels); err == nil {
		t.Errorf("a nil table was accepted")
	}
}
