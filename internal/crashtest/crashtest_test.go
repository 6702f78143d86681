package crashtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/bloomkv/bloomkv/internal/testseed"
)

// TestMain makes the test binary a child when Run starts it as one.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(ChildEnv); ok {
		err := RunChild(spec, os.Stdin, os.Stdout)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testConfig is a campaign of children of this test binary, killed
// within 300 ms: a few seconds for a few kills.
func testConfig(t *testing.T) Config {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Dir: t.TempDir(), Child: []string{self},
		Writers: []int{1, 3}, SyncShares: []float64{0, 0.5}, MemTableSizes: []int64{256 << 10, 1 << 20},
		KillWithin: 300 * time.Millisecond}
}

// TestRun_CountsKills runs a campaign of three kills and checks that its
// summary counts them, and the acknowledged ops checked, as its rounds
// do; every round checks some, since each ends with writes in the
// parent, before a Close and an Open.
func TestRun_CountsKills(t *testing.T) {
	cfg := testConfig(t)
	cfg.Kills = 3
	var told []RoundResult
	cfg.OnRound = func(r RoundResult) { told = append(told, r) }
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	kills, acks := 0, 0
	for _, r := range s.Rounds {
		t.Logf("round %d (replay with Config.Seed): %d writers, kills %+v, %d acks checked, %d reopens",
			r.Round.Seed, r.Round.Writers, r.Kills, r.Acks, r.Reopens)
		if r.Failure != "" {
			t.Errorf("round %d failed: %s", r.Round.Seed, r.Failure)
		}
		if r.Kills.Total() != r.Round.Kills || r.Reopens < 1 || r.Acks < r.Reopens*r.Round.Writers {
			t.Errorf("round %d: kills %+v of %d, %d acks checked in %d reopens", r.Round.Seed, r.Kills, r.Round.Kills, r.Acks, r.Reopens)
		}
		kills += r.Kills.Total()
		acks += r.Acks
	}
	if s.Kills.Total() != 3 || kills != 3 || s.Acks != acks || len(told) != len(s.Rounds) || s.Failures != 0 {
		t.Errorf("summary: kills %+v, %d acks checked, %d failures, %d rounds (%d told); the rounds: %d kills, %d acks",
			s.Kills, s.Acks, s.Failures, len(s.Rounds), len(told), kills, acks)
	}
}

// TestRun_ReplaysSeed checks that a campaign with a seed runs the one
// round of that seed, with every kill the round draws.
func TestRun_ReplaysSeed(t *testing.T) {
	cfg := testConfig(t)
	cfg.Seed, cfg.Duration = testseed.Seed(t), time.Nanosecond
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := newRound(cfg.Seed, &cfg)
	if len(s.Rounds) != 1 || s.Rounds[0].Round != want || s.Kills.Total() != want.Kills || s.Failures != 0 {
		t.Fatalf("campaign of seed %d: %+v, want the one round %+v", cfg.Seed, s, want)
	}
}
