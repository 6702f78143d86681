package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// pebbleFilter builds Pebble's bloom filter of n generated keys.
func pebbleFilter(bits, n int) []byte {
	w := bloom.FilterPolicy(bits).NewWriter(pebble.TableFilter)
	kg := bench.NewKeyGen(1)
	for i := range n {
		w.AddKey(kg.Present(nil, i))
	}
	return w.Finish(nil)
}

func TestInspectFilter(t *testing.T) {
	ours, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		t.Fatal(err)
	}
	w := ours.NewWriter()
	kg := bench.NewKeyGen(1)
	for i := range 5000 {
		w.AddKey(kg.Present(nil, i))
	}
	for _, tc := range []struct {
		name   string
		policy string
		filter []byte
		probes int
	}{
		{"bloompolicy", bloompolicy.EncodingName, w.Finish(nil), 0},
		{"pebble", bloom.FilterPolicy(10).Name(), pebbleFilter(10, 5000), 6},
	} {
		st, ok := inspectFilter(tc.policy, tc.filter)
		if !ok {
			t.Fatalf("%s: filter does not decode", tc.name)
		}
		if st.Bytes != len(tc.filter) || st.Bits < 8*(len(tc.filter)-5) || st.BitsSet == 0 || st.BitsSet > st.Bits {
			t.Errorf("%s: implausible %+v for %d bytes", tc.name, st, len(tc.filter))
		}
		if tc.probes != 0 && st.Probes != tc.probes {
			t.Errorf("%s: %d probes, want %d", tc.name, st.Probes, tc.probes)
		}
		if est := float64(st.EstimatedKeys); math.Abs(est-5000) > 250 {
			t.Errorf("%s: estimated %.0f keys from the bits set, want about 5000", tc.name, est)
		}
	}
}

func TestInspectFilter_Invalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		filter []byte
	}{
		{"unknown policy", "other", pebbleFilter(10, 10)},
		{"pebble, short", bloom.FilterPolicy(10).Name(), []byte{1, 2, 3}},
		{"pebble, zero lines", bloom.FilterPolicy(10).Name(), make([]byte, 69)},
		{"pebble, lines over bytes", bloom.FilterPolicy(10).Name(), append(make([]byte, 64), 6, 65, 0, 0, 0)},
		{"pebble, uneven lines", bloom.FilterPolicy(10).Name(), append(make([]byte, 64), 6, 3, 0, 0, 0)},
		{"bloompolicy, empty", bloompolicy.EncodingName, nil},
	} {
		if st, ok := inspectFilter(tc.policy, tc.filter); ok {
			t.Errorf("%s: decoded as %+v", tc.name, st)
		}
	}
}

func FuzzInspectFilter(f *testing.F) {
	f.Add(pebbleFilter(10, 50), true)
	f.Add(pebbleFilter(3, 1), true)
	f.Add([]byte{0, 0, 0, 0, 0, 1}, false)
	f.Fuzz(func(t *testing.T, filter []byte, pebble bool) {
		name := bloompolicy.EncodingName
		if pebble {
			name = bloom.FilterPolicy(10).Name()
		}
		st, ok := inspectFilter(name, filter)
		if ok && (st.BitsSet > st.Bits || st.Bytes != len(filter)) {
			t.Fatalf("inconsistent %+v for %d bytes", st, len(filter))
		}
	})
}

// TestPropertyMap_FilterSplit shows filter.split only for tables whose
// filters hold prefixes, as the table stores it.
func TestPropertyMap_FilterSplit(t *testing.T) {
	if _, ok := propertyMap(&sstable.Properties{})["filter.split"]; ok {
		t.Error("filter.split shown for a table of whole-key filters")
	}
	if got := propertyMap(&sstable.Properties{FilterSplitName: "app.split"})["filter.split"]; got != "app.split" {
		t.Errorf("filter.split = %q, want app.split", got)
	}
}

// TestSSTableCheck_SaysWhetherFiltersWereVerified checks tables without
// filters, with filters on whole keys and with filters on first-slash
// prefixes, with and without --split: check claims the filters verified
// only when it read them.
func TestSSTableCheck_SaysWhetherFiltersWereVerified(t *testing.T) {
	tmp := t.TempDir()
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := splits.Named("first-slash")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  sstable.WriterOptions
		split []string
		want  string // the end of the text line
		json  string
	}{
		{"nofilter", sstable.WriterOptions{}, nil,
			"key order and index verified; the table has no filters", `"filters_verified": false`},
		{"whole", sstable.WriterOptions{FilterPolicy: policy}, nil,
			"key order, index and filters verified", `"filters_verified": true`},
		{"prefix", sstable.WriterOptions{FilterPolicy: policy, Comparer: fs.Comparer()}, nil,
			"key order and index verified; filters (bloomkv.bloom.v1) not read, so not verified", `"filters_verified": false`},
		{"prefix", sstable.WriterOptions{FilterPolicy: policy, Comparer: fs.Comparer()}, []string{"--split", "first-slash"},
			"key order, index and filters verified", `"filters_verified": true`},
	}
	for i, tc := range tests {
		path := filepath.Join(tmp, fmt.Sprintf("%d-%s.sst", i, tc.name))
		writeTableWith(t, path, "k/", 100, tc.opts)
		args := append([]string{"sstable", "check", path}, tc.split...)
		if out, _ := runCLI(t, 0, args...); !strings.HasSuffix(out, "; checksums, decoding, "+tc.want+"\n") {
			t.Errorf("%s %q: %q, want it to end %q", tc.name, tc.split, out, tc.want)
		}
		if out, _ := runCLI(t, 0, append(args, "--json")...); !strings.Contains(out, tc.json) {
			t.Errorf("%s %q --json: %q, want %s", tc.name, tc.split, out, tc.json)
		}
	}
}
