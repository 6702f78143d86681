package rangedel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
)

// parse reads "a-e#9 c-h#5" into tombstones.
func parse(t *testing.T, s string) []Tombstone {
	var out []Tombstone
	for _, f := range strings.Fields(s) {
		var seq uint64
		span, seqStr, _ := strings.Cut(f, "#")
		start, end, _ := strings.Cut(span, "-")
		if _, err := fmt.Sscan(seqStr, &seq); err != nil {
			t.Fatalf("bad tombstone %q", f)
		}
		out = append(out, Tombstone{Start: []byte(start), End: []byte(end), Seq: base.SeqNum(seq)})
	}
	return out
}

func format(ts []Tombstone) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s-%s#%d", t.Start, t.End, t.Seq))
	}
	return strings.Join(parts, " ")
}

func TestFragment(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"a-e#9", "a-e#9"},
		{"a-e#9 c-h#5", "a-c#9 c-e#9 c-e#5 e-h#5"},
		{"c-h#5 a-e#9", "a-c#9 c-e#9 c-e#5 e-h#5"},
		{"a-z#3 c-d#7 c-d#7", "a-c#3 c-d#7 c-d#3 d-z#3"},
		{"e-a#4 b-b#2", ""},
		{"a-b#1 b-c#2", "a-b#1 b-c#2"},
	}
	for _, tt := range tests {
		got := Fragment(bytes.Compare, parse(t, tt.in))
		if format(got) != tt.want {
			t.Errorf("Fragment(%s) = %s, want %s", tt.in, format(got), tt.want)
		}
		if err := CheckFragmented(bytes.Compare, got); err != nil {
			t.Errorf("Fragment(%s): %v", tt.in, err)
		}
	}
}

func TestCheckFragmented(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for valid
	}{
		{"a-c#9 c-e#9 c-e#5", ""},
		{"a-c#9 b-e#5", "overlaps"},
		{"a-c#5 a-c#9", "must descend"},
		{"a-c#5 a-c#5", "must descend"},
		{"c-a#5", "empty"},
	}
	for _, tt := range tests {
		err := CheckFragmented(bytes.Compare, parse(t, tt.in))
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckFragmented(%s) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestCovering(t *testing.T) {
	frags := Fragment(bytes.Compare, parse(t, "b-e#9 c-h#5 c-h#2"))
	tests := []struct {
		key     string
		readSeq base.SeqNum
		want    string
	}{
		{"a", 100, "-"}, {"b", 100, "9"}, {"c", 100, "9"}, {"c", 8, "5"}, {"c", 4, "2"},
		{"c", 1, "-"}, {"e", 100, "5"}, {"g", 5, "5"}, {"h", 100, "-"}, {"z", 100, "-"},
	}
	for _, tt := range tests {
		seq, ok := Covering(bytes.Compare, frags, []byte(tt.key), tt.readSeq)
		got := "-"
		if ok {
			got = fmt.Sprint(seq)
		}
		if got != tt.want {
			t.Errorf("Covering(%s@%d) = %s, want %s", tt.key, tt.readSeq, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	frags := Fragment(bytes.Compare, parse(t, "b-e#9 c-h#5"))
	tests := []struct{ lower, upper, want string }{
		{"", "", "b-c#9 c-e#9 c-e#5 e-h#5"},
		{"d", "", "d-e#9 d-e#5 e-h#5"},
		{"", "d", "b-c#9 c-d#9 c-d#5"},
		{"c", "e", "c-e#9 c-e#5"},
		{"h", "", ""},
	}
	for _, tt := range tests {
		var lo, hi []byte
		if tt.lower != "" {
			lo = []byte(tt.lower)
		}
		if tt.upper != "" {
			hi = []byte(tt.upper)
		}
		if got := format(Truncate(bytes.Compare, frags, lo, hi)); got != tt.want {
			t.Errorf("Truncate(%q, %q) = %s, want %s", tt.lower, tt.upper, got, tt.want)
		}
	}
}

// TestFragment_Model checks Covering over fragments against a direct scan
// of the unfragmented tombstones, for random tombstones.
func TestFragment_Model(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	key := func() []byte { return []byte{byte('a' + rng.IntN(12))} }
	for round := 0; round < 200; round++ {
		var ts []Tombstone
		for i := rng.IntN(8); i > 0; i-- {
			ts = append(ts, Tombstone{Start: key(), End: key(), Seq: base.SeqNum(1 + rng.IntN(20))})
		}
		frags := Fragment(bytes.Compare, ts)
		if err := CheckFragmented(bytes.Compare, frags); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for c := byte('a'); c <= 'm'; c++ {
			for readSeq := base.SeqNum(0); readSeq <= 21; readSeq++ {
				var want base.SeqNum
				wantOK := false
				for _, tb := range ts {
					k := []byte{c}
					if bytes.Compare(tb.Start, k) <= 0 && bytes.Compare(k, tb.End) < 0 && tb.Seq <= readSeq && tb.Seq >= want {
						want, wantOK = tb.Seq, true
					}
				}
				got, ok := Covering(bytes.Compare, frags, []byte{c}, readSeq)
				if ok != wantOK || got != want {
					t.Fatalf("seed %d: %s: Covering(%c@%d) = %d,%v want %d,%v", seed, format(ts), c, readSeq, got, ok, want, wantOK)
				}
			}
		}
	}
}
