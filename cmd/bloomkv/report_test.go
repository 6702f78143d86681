package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestTable_Write(t *testing.T) {
	tb := newTable("name", ">count", "note")
	tb.add("a", "1", "x")
	tb.add("longer", "12345", "")
	var b bytes.Buffer
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"name    count  note\n" +
		"------  -----  ----\n" +
		"a           1  x\n" +
		"longer  12345\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestFmtBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{8 << 20, "8.0 MiB"}, {3 << 30, "3.0 GiB"},
	} {
		if got := fmtBytes(tc.n); got != tc.want {
			t.Errorf("fmtBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestFmtKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"with space", "with space"},
		{"tab\there", `"tab\there"`},
		{"\xff\x00", `"\xff\x00"`},
		{`"quoted"`, `"\"quoted\""`},
		{"", ""},
	} {
		if got := fmtKey([]byte(tc.in)); got != tc.want {
			t.Errorf("fmtKey(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestByteSize_Set(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"8MiB", 8 << 20, true}, {"8mib", 8 << 20, true},
		{"8M", 8 << 20, true}, {"8MB", 8_000_000, true}, {"512KiB", 512 << 10, true},
		{"1.5GiB", 3 << 29, true}, {"", 0, false}, {"MiB", 0, false}, {"8XB", 0, false},
		{"-1", 0, false}, {"1e30", 0, false},
	} {
		var b byteSize
		err := b.Set(tc.in)
		if (err == nil) != tc.ok || tc.ok && int64(b) != tc.want {
			t.Errorf("Set(%q) = %d, %v; want %d, ok=%t", tc.in, b, err, tc.want, tc.ok)
		}
	}
}

func TestJSONFloat(t *testing.T) {
	got, err := json.Marshal([]jsonFloat{1.5, jsonFloat(math.NaN()), jsonFloat(math.Inf(1)), 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[1.5,null,null,0]"; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLookupCounts_Minus(t *testing.T) {
	a := lookupCounts{Gets: 10, TablesConsidered: 20, FilterNegatives: 5, BlockReads: 7}
	b := lookupCounts{Gets: 4, TablesConsidered: 8, FilterNegatives: 1, BlockReads: 2}
	want := lookupCounts{Gets: 6, TablesConsidered: 12, FilterNegatives: 4, BlockReads: 5}
	if got := a.minus(b); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
