package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// Round is one round of a campaign: a new store, written and killed
// Kills times, a child after another, then checked in the parent. Its
// fields are drawn from Seed and the campaign's choices (Config), so a
// round replays from its seed.
type Round struct {
	Seed          uint64  `json:"seed"`           // what the rest derive from
	Writers       int     `json:"writers"`        // writing goroutines
	SyncShare     float64 `json:"sync_share"`     // of ops acknowledged with kv.Sync
	MemTableSize  int64   `json:"memtable_size"`  // kv.Options.MemTableSize
	BackgroundWAL bool    `json:"background_wal"` // kv.Options.BackgroundWALWrites
	Keys          int     `json:"keys"`           // per writer
	Values        int     `json:"values"`         // value sizes: valuesSmall, valuesMixed or valuesLarge
	BigShare      float64 `json:"big_share"`      // of ops of 1 MiB or more
	BatchShare    float64 `json:"batch_share"`    // of ops that are a batch of 1 to 200 edits
	FlushShare    float64 `json:"flush_share"`    // of ops that are a DB.Flush
	IngestShare   float64 `json:"ingest_share"`   // of ops that ingest a table of 1 to 200 edits
	Kills         int     `json:"kills"`          // children killed, one after another
}

// newRound draws the round of seed from cfg's choices.
func newRound(seed uint64, cfg *Config) Round {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	return Round{
		Seed:          seed,
		Writers:       pick(rng, cfg.Writers),
		SyncShare:     pick(rng, cfg.SyncShares),
		MemTableSize:  pick(rng, cfg.MemTableSizes),
		BackgroundWAL: cfg.BackgroundWAL,
		Keys:          pick(rng, []int{50, 1000, 20_000}),
		Values:        rng.IntN(valueProfiles),
		BigShare:      pick(rng, []float64{0, 0.003, 0.02}),
		BatchShare:    pick(rng, []float64{0.1, 0.4, 0.8}),
		FlushShare:    pick(rng, []float64{0, 0.0005, 0.005}),
		Kills:         1 + rng.IntN(4),
		IngestShare:   pick(rng, []float64{0, 0.0005, 0.005}),
	}
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// RoundResult is what a round ran and found.
type RoundResult struct {
	Round Round  `json:"round"` // what ran
	Dir   string `json:"dir"`   // the store; kept after a failure
	Kills Kills  `json:"kills"` // where the kills landed
	// Acks counts the acknowledged ops checked: each child's, after its
	// kill, and those the parent wrote before a Close.
	Acks int `json:"acks_checked"`
	// MostLost is the most bytes (Batch.Len) of acknowledged ops one kill
	// lost; only BackgroundWALWrites may lose any.
	MostLost int           `json:"most_lost"`
	Reopens  int           `json:"reopens"`           // checks in the parent, with a Close and an Open
	Took     time.Duration `json:"took_ns"`           // the round's wall time
	Failure  string        `json:"failure,omitempty"` // what the round found wrong
}

// Kills counts kills by where they landed in the child's life.
type Kills struct {
	Opening  int `json:"opening"`  // before Open returned
	Checking int `json:"checking"` // while the child checked the store
	Writing  int `json:"writing"`  // while the child wrote
	Closing  int `json:"closing"`  // while Close ran
	Closed   int `json:"closed"`   // after Close returned
}

// Total returns the number of kills.
func (k Kills) Total() int { return k.Opening + k.Checking + k.Writing + k.Closing + k.Closed }

func (k *Kills) add(p phase) {
	switch p {
	case phaseOpening:
		k.Opening++
	case phaseChecking:
		k.Checking++
	case phaseWriting:
		k.Writing++
	case phaseClosing:
		k.Closing++
	case phaseClosed:
		k.Closed++
	}
}

func (k *Kills) plus(o Kills) {
	k.Opening += o.Opening
	k.Checking += o.Checking
	k.Writing += o.Writing
	k.Closing += o.Closing
	k.Closed += o.Closed
}

// runRound runs the round of seed, with at most maxKills kills when
// positive. It returns an error only when ctx ends; what the round finds
// wrong is its result's Failure.
func runRound(ctx context.Context, cfg *Config, seed uint64, maxKills int) (RoundResult, error) {
	res := RoundResult{Round: newRound(seed, cfg), Dir: vfs.Default.PathJoin(cfg.Dir, fmt.Sprintf("round-%d", seed))}
	if maxKills > 0 {
		res.Round.Kills = min(res.Round.Kills, maxKills)
	}
	start := time.Now()
	err := res.run(ctx, cfg)
	res.Took = time.Since(start)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		res.Failure = err.Error()
	}
	return res, nil
}

// run kills a child after another, checking what each kill left, and
// checks the store in this process between kills now and then, and last.
func (res *RoundResult) run(ctx context.Context, cfg *Config) error {
	for _, dir := range []string{res.Dir, ingestDir(res.Dir)} {
		if err := vfs.Default.RemoveAll(dir); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(res.Round.Seed, 0xbb67ae8584caa73b))
	h := newHistory(&res.Round)
	var opened time.Duration
	for k := range res.Round.Kills {
		plan := nextKill(rng, cfg.KillWithin, opened)
		spec := &childSpec{Round: res.Round, Dir: res.Dir, Windows: h.windows(), CloseAfter: plan.closeAfter}
		g, err := runChild(ctx, cfg.Child, spec, plan, res.Dir+".stderr")
		if err != nil {
			return fmt.Errorf("child %d: %w", k+1, err)
		}
		res.Kills.add(g.phase)
		opened = g.opened
		if g.phase < phaseWriting {
			continue // the next child checks what this one's kill left
		}
		if err := res.judge(h, g.found); err != nil {
			return fmt.Errorf("child %d, after kill %d: %w", k+1, k, err)
		}
		if err := h.begin(g.acks, g.phase == phaseClosed); err != nil {
			return err
		}
		if k < res.Round.Kills-1 && rng.IntN(4) == 0 {
			if err := res.reopen(h, rng); err != nil {
				return fmt.Errorf("after kill %d: %w", k+1, err)
			}
		}
	}
	if err := res.reopen(h, rng); err != nil {
		return fmt.Errorf("after the last kill: %w", err)
	}
	return nil
}

// nextKill draws the next child's kill: three kills in four come once the
// child is ready, one in four from its start (of those, two in three
// aimed at Open, within 1.2 times the time the last child's Open took,
// when it took over 2 ms); one ready child in eight stops writing and
// calls Close, and is killed from 10 µs to 100 ms after, so that its kill
// lands in Close or after it.
func nextKill(rng *rand.Rand, within, lastOpen time.Duration) (p killPlan) {
	p.after, p.from = killDelay(rng, time.Millisecond, within), phaseWriting
	switch {
	case rng.IntN(4) == 0:
		p.from = phaseOpening
		if lastOpen > 2*time.Millisecond && rng.IntN(3) > 0 {
			p.after = time.Duration(rng.Float64() * 1.2 * float64(lastOpen))
		}
	case rng.IntN(8) == 0:
		p.closeAfter = p.after
		p.after, p.from = killDelay(rng, 10*time.Microsecond, 100*time.Millisecond), phaseClosing
	}
	return p
}

// killDelay draws a delay in [lo, hi): half the time spread evenly over
// the magnitudes, so that the first moments (Open, the first writes) are
// hit often, half the time evenly, so that children live long enough
// to fill memtables.
func killDelay(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	hi = max(hi, lo)
	if rng.IntN(2) == 0 {
		return lo + time.Duration(rng.Float64()*float64(hi-lo))
	}
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return time.Duration(math.Exp(l + rng.Float64()*(h-l)))
}

// judge checks the states found against the history, and counts.
func (res *RoundResult) judge(h *history, found [][]int) error {
	v, err := h.check(found)
	res.Acks += v.acks
	res.MostLost = max(res.MostLost, v.lost)
	return err
}

// reopen checks the store in this process: it opens it read-only and
// checks what the last kill left, then opens it for writes, checks it
// finds the same, writes more, closes it, and opens it again to find
// exactly what was written.
func (res *RoundResult) reopen(h *history, rng *rand.Rand) error {
	r := h.r
	readOnly, err := readOnlyStates(res.Dir, h)
	if err != nil {
		return err
	}
	db, err := kv.Open(res.Dir, r.options())
	if err != nil {
		return fmt.Errorf("crashtest: Open after the kill: %w", err)
	}
	last, err := res.checkAndWrite(db, h, rng, readOnly)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("crashtest: Close: %w", cerr)
	}
	if err != nil {
		return err
	}
	if db, err = kv.Open(res.Dir, r.options()); err != nil {
		return fmt.Errorf("crashtest: Open after Close: %w", err)
	}
	_, err = checkStore(db, r, exactly(last))
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("crashtest: Close: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("after Close and Open: %w", err)
	}
	copy(h.checked, last)
	res.Reopens++
	return nil
}

// readOnlyStates opens the store in dir read-only (kv.Options.ReadOnly)
// and returns the states of each writer it finds; nil where there is no
// store yet (a kill in its first Open).
func readOnlyStates(dir string, h *history) ([][]int, error) {
	o := h.r.options()
	o.ReadOnly = true
	db, err := kv.Open(dir, o)
	if errors.Is(err, kv.ErrDBDoesNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crashtest: read-only Open after the kill: %w", err)
	}
	found, err := checkStore(db, h.r, h.windows())
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("crashtest: Close of the read-only DB: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("read-only: %w", err)
	}
	return found, nil
}

// checkAndWrite checks the store db holds against the history, and
// against readOnly, the states a read-only DB found in it, if not nil:
// the two recoveries must agree. It then writes 1 to 40 more ops per
// writer, at once, and checks they are all there. It returns each
// writer's last op.
func (res *RoundResult) checkAndWrite(db *kv.DB, h *history, rng *rand.Rand, readOnly [][]int) ([]int, error) {
	found, err := checkStore(db, h.r, h.windows())
	if err == nil {
		err = res.judge(h, found)
	}
	if err == nil && readOnly != nil && !slices.EqualFunc(found, readOnly, slices.Equal) {
		err = fmt.Errorf("crashtest: the store opened for writes holds states %v, opened read-only %v", found, readOnly)
	}
	if err != nil {
		return nil, err
	}
	last := make([]int, len(h.checked))
	errs := make([]error, len(h.checked))
	var wg sync.WaitGroup
	for w, from := range h.checked {
		last[w] = from + 1 + rng.IntN(40)
		res.Acks += last[w] - from
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := from + 1; n <= last[w] && errs[w] == nil; n++ {
				errs[w] = h.r.apply(db, res.Dir, w, n)
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("crashtest: writer %d after the reopen: %w", w, err)
		}
	}
	if _, err := checkStore(db, h.r, exactly(last)); err != nil {
		return nil, fmt.Errorf("after writes in the parent: %w", err)
	}
	return last, nil
}

// exactly returns windows of one state per writer, last's.
func exactly(last []int) []window {
	ws := make([]window, len(last))
	for w, m := range last {
		ws[w] = window{m, m}
	}
	return ws
}
