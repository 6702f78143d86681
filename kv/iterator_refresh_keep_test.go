package kv

import "testing"

// TestIterator_Refresh_KeepsInputs checks that Refresh keeps the open
// tables while the DB's memtables and tables stay the same, seeing the
// writes made since all the same, and builds the inputs again once a
// flush changes them.
func TestIterator_Refresh_KeepsInputs(t *testing.T) {
	d, _ := openMem(t, &Options{DisableAutomaticCompactions: true})
	defer mustClose(t, d)
	must(t, d.Set([]byte("a"), []byte("1"), NoSync))
	must(t, d.Set([]byte("c"), []byte("1"), NoSync))
	must(t, d.Flush())
	it, err := d.NewIter(nil)
	must(t, err)
	defer mustClose(t, it)
	s := it.s
	if !it.SeekGE([]byte("a")) || s.nLevels != 1 || !s.levels[0].loaded {
		t.Fatalf("SeekGE(a): valid %v, %d levels; want a table open", it.Valid(), s.nLevels)
	}

	must(t, d.Set([]byte("b"), []byte("2"), NoSync))
	must(t, d.DeleteRange([]byte("c"), []byte("d"), NoSync))
	must(t, it.Refresh())
	if it.Valid() {
		t.Fatal("valid after Refresh")
	}
	if s.nLevels != 1 || !s.levels[0].loaded {
		t.Fatal("Refresh over an unchanged state closed the open table")
	}
	if !it.SeekGE([]byte("b")) || string(it.Key()) != "b" || string(it.Value()) != "2" {
		t.Fatalf("SeekGE(b) after Refresh: %q=%q (valid %v), want b=2", it.Key(), it.Value(), it.Valid())
	}
	if it.Next() {
		t.Fatalf("Next after b: %q, want c deleted by the range deletion written since", it.Key())
	}
	must(t, it.Error())

	must(t, d.Flush())
	must(t, it.Refresh())
	if s.nLevels != 2 || s.levels[0].loaded || s.levels[1].loaded {
		t.Fatalf("after a flush, Refresh kept %d levels (loaded %v); want 2 new ones, none open",
			s.nLevels, s.levels[0].loaded)
	}
	wantPairs := []string{"a=1", "b=2"}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	must(t, it.Error())
	if len(got) != len(wantPairs) || got[0] != wantPairs[0] || got[1] != wantPairs[1] {
		t.Fatalf("after the flush: %q, want %q", got, wantPairs)
	}
}
