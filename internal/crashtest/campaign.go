package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// Config is a campaign: rounds one after the other, each a new store in
// a directory of its own under Dir, until Duration has passed or, when
// Kills is set, that many children were killed.
type Config struct {
	// Dir holds the rounds' stores (round-SEED) and the stderr of a child
	// that failed (round-SEED.stderr); it must exist.
	Dir string
	// Child is the command line of a child: a program that calls RunChild
	// when ChildEnv is set, typically this one.
	Child []string

	Duration time.Duration // how long the campaign starts rounds for
	Kills    int           // if positive, the campaign stops after this many kills instead
	// Seed, if nonzero, is the seed of the one round to run, replaying a
	// round of an earlier campaign with the same choices below (and, if
	// its kills were cut short, Kills).
	Seed uint64

	// Each round draws its writers, share of Sync ops and memtable size
	// from these.
	Writers       []int     // counts of writing goroutines
	SyncShares    []float64 // shares of ops acknowledged with kv.Sync, 0 to 1
	MemTableSizes []int64   // kv.Options.MemTableSize
	BackgroundWAL bool      // every round's store sets kv.Options.BackgroundWALWrites

	KillWithin time.Duration // the longest a child lives before its kill, Open and check aside
	Keep       bool          // keep the stores of rounds that pass too

	// OnRound, if set, is told of each round once it is over.
	OnRound func(RoundResult)
}

// Summary is what a campaign ran and found.
type Summary struct {
	Rounds   []RoundResult `json:"rounds"`       // each round, in order
	Kills    Kills         `json:"kills"`        // all rounds' kills
	Acks     int           `json:"acks_checked"` // all rounds' acknowledged ops checked
	MostLost int           `json:"most_lost"`    // bytes one kill lost at most, of acknowledged ops
	Failures int           `json:"failures"`     // rounds that failed
	Took     time.Duration `json:"took_ns"`      // the campaign's wall time
}

// Run runs the campaign cfg. A round that finds the store breaking a
// promise, or a child failing, is counted in the summary's Failures and
// keeps its store; Run's error is for a wrong Config, or ctx's end.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	var s Summary
	if err := cfg.check(); err != nil {
		return s, err
	}
	start := time.Now()
	for cfg.more(&s, start) {
		seed := cfg.Seed
		for seed == 0 {
			seed = rand.Uint64()
		}
		maxKills := 0
		if cfg.Kills > 0 {
			maxKills = cfg.Kills - s.Kills.Total()
		}
		res, err := runRound(ctx, &cfg, seed, maxKills)
		if res.Failure == "" && !cfg.Keep || err != nil {
			_ = vfs.Default.RemoveAll(res.Dir)
			_ = vfs.Default.RemoveAll(ingestDir(res.Dir))
		}
		if err != nil {
			return s, err
		}
		s.add(res)
		if cfg.OnRound != nil {
			cfg.OnRound(res)
		}
	}
	s.Took = time.Since(start)
	return s, nil
}

// more reports whether the campaign goes on after the rounds s holds.
func (cfg *Config) more(s *Summary, start time.Time) bool {
	switch {
	case cfg.Seed != 0:
		return len(s.Rounds) == 0
	case cfg.Kills > 0:
		return s.Kills.Total() < cfg.Kills
	}
	return time.Since(start) < cfg.Duration
}

func (s *Summary) add(res RoundResult) {
	s.Rounds = append(s.Rounds, res)
	s.Kills.plus(res.Kills)
	s.Acks += res.Acks
	s.MostLost = max(s.MostLost, res.MostLost)
	if res.Failure != "" {
		s.Failures++
	}
}

func (cfg *Config) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("crashtest: "+format, args...)) }
	if cfg.Dir == "" || len(cfg.Child) == 0 {
		bad("a campaign needs a directory and a child's command")
	}
	if cfg.Duration <= 0 && cfg.Kills <= 0 && cfg.Seed == 0 {
		bad("a campaign needs a duration, a number of kills or a round's seed")
	}
	if len(cfg.Writers) == 0 || len(cfg.SyncShares) == 0 || len(cfg.MemTableSizes) == 0 {
		bad("writers, Sync shares and memtable sizes each need one choice at least")
	}
	for _, w := range cfg.Writers {
		if w < 1 || w > MaxWriters {
			bad("%d writers: want 1 to %d", w, MaxWriters)
		}
	}
	for _, p := range cfg.SyncShares {
		if !(p >= 0 && p <= 1) {
			bad("Sync share %v: want 0 to 1", p)
		}
	}
	for _, m := range cfg.MemTableSizes {
		if m < kv.MinMemTableSize || m > kv.MaxMemTableSize {
			bad("memtable size %d: want %d to %d", m, kv.MinMemTableSize, int64(kv.MaxMemTableSize))
		}
	}
	if cfg.KillWithin < time.Millisecond {
		bad("kills within %v: want a millisecond at least", cfg.KillWithin)
	}
	return errors.Join(errs...)
}
