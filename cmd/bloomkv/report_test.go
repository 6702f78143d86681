package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
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

// testRow returns a bloomkv row with a settled shape of two levels and a
// compacted one of one level, and a growth series of two points.
func testRow() benchRow {
	settledCounts := lookupSnapshot{
		Total: lookupCounts{TablesConsidered: 300, FilterNegatives: 297, FilterFalsePositives: 3, BlockReads: 3},
		Levels: []lookupCounts{
			{TablesConsidered: 200, FilterNegatives: 198, FilterFalsePositives: 2, BlockReads: 2},
			{}, {TablesConsidered: 100, FilterNegatives: 99, FilterFalsePositives: 1, BlockReads: 1},
		},
	}
	presentCounts := lookupSnapshot{
		Total:  lookupCounts{TablesConsidered: 150, FilterNegatives: 50, FilterTruePositives: 100, BlockReads: 100},
		Levels: []lookupCounts{{TablesConsidered: 50, FilterNegatives: 50}, {}, {TablesConsidered: 100, FilterTruePositives: 100, BlockReads: 100}},
	}
	settled := shapeResult{Shape: shapeSettled, Keys: 1000,
		LSM:    []levelShape{{Level: 0, Tables: 3, Bytes: 3 << 10}, {Level: 2, Tables: 9, Bytes: 1 << 20}},
		Absent: newPhase(settledCounts, 100, time.Millisecond), Present: newPhase(presentCounts, 100, time.Millisecond)}
	compacted := shapeResult{Shape: shapeCompacted, Keys: 1250, LSM: []levelShape{{Level: 2, Tables: 10, Bytes: 1 << 20}},
		Absent: newPhase(lookupSnapshot{Total: lookupCounts{TablesConsidered: 100, FilterNegatives: 100},
			Levels: []lookupCounts{{}, {}, {TablesConsidered: 100, FilterNegatives: 100}}}, 100, time.Millisecond),
		Present: newPhase(lookupSnapshot{Total: lookupCounts{TablesConsidered: 100, FilterTruePositives: 100, BlockReads: 100},
			Levels: []lookupCounts{{}, {}, {TablesConsidered: 100, FilterTruePositives: 100, BlockReads: 100}}}, 100, time.Millisecond)}
	small := settled
	small.Keys, small.LSM = 500, []levelShape{{Level: 0, Tables: 3, Bytes: 3 << 10}, {Level: 1, Tables: 2, Bytes: 400 << 10}}
	return benchRow{Config: "bloomkv, ours", Engine: engineKV, Filter: "ours",
		Shapes: []shapeResult{settled, compacted}, Growth: []shapeResult{small, settled}}
}

func TestLevelTable(t *testing.T) {
	var b bytes.Buffer
	if err := levelTable(testRow()).write(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"  shape      level  tables  tables/lookup  filter negatives  false positives    block reads    FPR\n" +
		"  ---------  -----  ------  -------------  ----------------  ---------------  -------------  -----\n" +
		"  settled    L0          3  2.000 / 0.500     1.980 / 0.500  0.0200 / 0.0000  0.020 / 0.000  1.00%\n" +
		"             L2          9  1.000 / 1.000     0.990 / 0.000  0.0100 / 0.0000  0.010 / 1.000  1.00%\n" +
		"             total          3.000 / 1.500     2.970 / 0.500  0.0300 / 0.0000  0.030 / 1.000  1.00%\n" +
		"  compacted  L2         10  1.000 / 1.000     1.000 / 0.000  0.0000 / 0.0000  0.000 / 1.000  0.00%\n" +
		"             total          1.000 / 1.000     1.000 / 0.000  0.0000 / 0.0000  0.000 / 1.000  0.00%\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteGrowth(t *testing.T) {
	var b bytes.Buffer
	if err := writeGrowth(&b, []benchRow{testRow(), {Config: "without growth"}}); err != nil {
		t.Fatal(err)
	}
	want := "\ngrowth: the settled shape after each load step (tables per level: L0 first):\n" +
		"config         keys       size  levels  tables/lookup  block reads/lookup  reads saved/lookup\n" +
		"-------------  ----  ---------  ------  -------------  ------------------  ------------------\n" +
		"bloomkv, ours   500  403.0 KiB  3 2       3.00 / 1.50         0.03 / 1.00         2.97 / 0.50\n" +
		"               1000    1.0 MiB  3 0 9     3.00 / 1.50         0.03 / 1.00         2.97 / 0.50\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := writeGrowth(&b, []benchRow{{Config: "without growth"}}); err != nil || b.Len() != 0 {
		t.Errorf("rows without growth printed %q, %v; want nothing", b.String(), err)
	}
}

func TestFmtShapeResult(t *testing.T) {
	s := shapeResult{LSM: []levelShape{{Level: 0, Tables: 2, Bytes: 2048}, {Level: 3, Tables: 1, Bytes: 10}}}
	if got, want := fmtShapeResult(s), "L0: 2 tables, 2.0 KiB; L3: 1 tables, 10 B"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.L0 = &tableRange{Min: 0, Mean: 2.25, Max: 5}
	s.LSMAfter = []levelShape{{Level: 3, Tables: 2, Bytes: 20}}
	want := "L0 held 0–5 tables (mean 2.2) during the lookups; at the end L0: 2 tables, 2.0 KiB; " +
		"L3: 1 tables, 10 B; changed during the lookups to L3: 2 tables, 20 B"
	if got := fmtShapeResult(s); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
