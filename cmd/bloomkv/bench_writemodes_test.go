package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/bench"
)

// TestWriteModeRows checks the section's arithmetic: the best round per
// mode, per Set, divided by Pebble's best, and no ratio without Pebble.
func TestWriteModeRows(t *testing.T) {
	results := []bench.WriteModeResult{
		{Mode: bench.WriteMode{Name: bench.WriteModeKV, Engine: engineKV}, Keys: 1000, SyncKeys: 10,
			NoSync: []time.Duration{3 * time.Millisecond, 2 * time.Millisecond}, Sync: []time.Duration{40 * time.Millisecond, 50 * time.Millisecond}},
		{Mode: bench.WriteMode{Name: bench.WriteModePebble, Engine: enginePebble}, Keys: 1000, SyncKeys: 10,
			NoSync: []time.Duration{4 * time.Millisecond, 5 * time.Millisecond}, Sync: []time.Duration{80 * time.Millisecond, 90 * time.Millisecond}},
	}
	rows := writeModeRows(results)
	kv, p := rows[0], rows[1]
	if kv.BestNoSyncNs != 2000 || kv.BestSyncNs != 4e6 || kv.NoSyncNs[0] != 3000 || kv.SyncNs[1] != 5e6 {
		t.Errorf("bloomkv row %+v: want best 2000 ns NoSync and 4e6 ns Sync, rounds 3000 ns and 5e6 ns", kv)
	}
	if kv.NoSyncVsPebble != 0.5 || kv.SyncVsPebble != 0.5 || p.NoSyncVsPebble != 1 || p.SyncVsPebble != 1 {
		t.Errorf("ratios %v %v (bloomkv), %v %v (Pebble): want 0.5 0.5 1 1", kv.NoSyncVsPebble, kv.SyncVsPebble,
			p.NoSyncVsPebble, p.SyncVsPebble)
	}
	alone := writeModeRows(results[:1])
	if !math.IsNaN(float64(alone[0].NoSyncVsPebble)) || !math.IsNaN(float64(alone[0].SyncVsPebble)) {
		t.Errorf("without Pebble: ratios %v %v, want none", alone[0].NoSyncVsPebble, alone[0].SyncVsPebble)
	}
}

// TestWriteModesMarkdown checks the section's Markdown: its title, what
// it measured, and a row per mode with its promise, times and ratios.
func TestWriteModesMarkdown(t *testing.T) {
	s := &writeModesSection{Rounds: 2, Rows: []writeModeRow{
		{Mode: bench.WriteModeKV, Promise: "survives", Keys: 500, SyncKeys: 100, BestNoSyncNs: 1234.4, BestSyncNs: 99999.6,
			NoSyncVsPebble: 0.8, SyncVsPebble: 0.456},
		{Mode: bench.WriteModePebble, Promise: "a prefix | survives", Keys: 500, SyncKeys: 100, BestNoSyncNs: 1543,
			BestSyncNs: 219298, NoSyncVsPebble: 1, SyncVsPebble: 1},
	}}
	var b strings.Builder
	if err := writeModesMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n" + writeModesTitle + "\n\n", "500 keys NoSync, then 100 Sync", "over 2 rounds; times are the best round's",
		"| mode | promise after a process crash | ns per NoSync Set | ÷ Pebble | ns per Sync Set | ÷ Pebble |\n" +
			"| --- | --- | ---: | ---: | ---: | ---: |\n" +
			"| bloomkv, default | survives | 1234 | 0.80x | 100000 | 0.46x |\n" +
			"| Pebble v1.1.5 | a prefix \\| survives | 1543 | 1.00x | 219298 | 1.00x |\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := writeModesMarkdown(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("with --rounds 0: %q, %v; want nothing", b.String(), err)
	}
}

// TestBenchWriteModes runs the section as bench does, on tiny stores
// with and without --pebble, and checks that every mode ran every round.
// Under 1000 keys, the Sync fill writes as many as the NoSync one.
func TestBenchWriteModes(t *testing.T) {
	ours, err := bloompolicy.New(0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, pebble := range []bool{false, true} {
		o := smallBenchOptions(t, pebble)
		o.keys, o.rounds = 400, 2
		s, err := (&app{}).benchWriteModes(context.Background(), o.dir, o, ours)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{bench.WriteModeKV, bench.WriteModeKVBackground}
		if pebble {
			want = append(want, bench.WriteModePebble)
		}
		if len(s.Rows) != len(want) {
			t.Fatalf("--pebble=%v: %d modes ran, want %q", pebble, len(s.Rows), want)
		}
		for i, r := range s.Rows {
			if r.Mode != want[i] || len(r.NoSyncNs) != 2 || len(r.SyncNs) != 2 || !(r.BestNoSyncNs > 0) || !(r.BestSyncNs > 0) ||
				r.Keys != 400 || r.SyncKeys != 400 {
				t.Errorf("--pebble=%v: row %d: %+v, want %s with 2 rounds of 400 NoSync and 400 Sync Sets", pebble, i, r, want[i])
			}
			if hasRatio := !math.IsNaN(float64(r.NoSyncVsPebble)); hasRatio != pebble {
				t.Errorf("--pebble=%v: %s has ratio %v", pebble, r.Mode, r.NoSyncVsPebble)
			}
		}
	}
	o := smallBenchOptions(t, true)
	o.rounds = 0
	if s, err := (&app{}).benchWriteModes(context.Background(), o.dir, o, ours); s != nil || err != nil {
		t.Errorf("--rounds 0: %+v, %v; want the section skipped", s, err)
	}
}
