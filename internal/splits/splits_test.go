package splits

import (
	"testing"
)

// TestAll checks that every built-in Split passes base.Comparer.CheckSplit,
// cuts a few keys where its Doc says, and is found by its names.
func TestAll(t *testing.T) {
	want := map[string]map[string]string{
		"first-slash": {"user/7/name": "user/", "apple": "apple", "/x": "/", "": ""},
		"user":        {"user/7/name": "user/7/", "user/7": "user/7", "a//b": "a//", "": ""},
	}
	for _, b := range All {
		c := b.Comparer()
		if err := c.CheckSplit(); err != nil {
			t.Errorf("%s: %v", b.Name, err)
		}
		cases := want[b.Name]
		if len(cases) == 0 {
			t.Errorf("%s: no test cases", b.Name)
		}
		for k, p := range cases {
			got, err := c.Prefix([]byte(k))
			if err != nil || string(got) != p {
				t.Errorf("%s: prefix of %q = %q, %v; want %q", b.Name, k, got, err, p)
			}
		}
		if n, err := Named(b.Name); err != nil || n.SplitName != b.SplitName {
			t.Errorf("Named(%s) = %v, %v", b.Name, n, err)
		}
		if n, ok := BySplitName(b.SplitName); !ok || n.Name != b.Name {
			t.Errorf("BySplitName(%s) = %v, %v", b.SplitName, n, ok)
		}
	}
	if len(All) != len(want) {
		t.Errorf("%d built-in splits, %d tested", len(All), len(want))
	}
	if _, err := Named("nope"); err == nil {
		t.Error("Named(nope) succeeded")
	}
}
