package bench

import (
	"context"
	"fmt"

	"github.com/bloomkv/bloomkv/kv"
)

// Progress shows how far a phase has come.
type Progress interface {
	Add(n int)
	Done()
}

// Loader writes a Workload's keys into an engine and brings the store to
// the settled shape, as a store taking writes holds it between L0
// compactions. It counts the keys written so far, so loads continue where
// the last stopped (the growth series loads in doubling steps).
type Loader struct {
	Engine   Engine
	Workload *Workload
	MemTable int64 // the engine's memtable size: it sizes the last flushes
	Loaded   int   // keys written so far
	Name     string
	// Start starts showing a phase of total steps (negative: of unknown
	// length) described by desc; nil shows nothing.
	Start func(desc string, total int64) Progress
}

// nopProgress shows nothing.
type nopProgress struct{}

func (nopProgress) Add(int) {}
func (nopProgress) Done()   {}

func (l *Loader) start(desc string, total int64) Progress {
	if l.Start == nil {
		return nopProgress{}
	}
	return l.Start(l.Name+": "+desc, total)
}

// Phase runs f as a phase of unknown length described by desc.
func (l *Loader) Phase(desc string, f func() error) error {
	p := l.start(desc, -1)
	defer p.Done()
	return f()
}

// GrowthSteps returns the key counts after which the settled shape is
// measured: only keys, or with growth the doublings that lead to it from
// keys/64 (or from the smallest step of at least 1000 keys).
func GrowthSteps(keys int, growth bool) []int {
	steps := []int{keys}
	for growth && len(steps) < 7 && steps[0]/2 >= 1000 {
		steps = append([]int{steps[0] / 2}, steps...)
	}
	return steps
}

// SettledL0Tables is how many L0 tables the settled shape aims for: as
// many as a store holds without an L0 compaction being due.
const SettledL0Tables = kv.DefaultL0CompactionThreshold - 1

// tailChunk returns the size of the settled shape's last flushes: a
// quarter of a memtable's keys, with a generous 64 bytes of overhead per
// entry, so that two chunks together still fit one memtable.
func tailChunk(memtable int64, valueSize int) int {
	return max(1, int(memtable)/(4*(KeySize+valueSize+64)))
}

// tailChunks is how many chunks the settled shape keeps for its last
// flushes: enough for two rounds of L0 compaction.
const tailChunks = 2 * kv.DefaultL0CompactionThreshold

// Settle loads keys up to n and settles the store. A bulk load leaves L0
// empty or nearly once background compactions catch up, whereas a store
// taking writes holds a few L0 tables between its L0 compactions. So the
// last keys come after a wait, in chunks each flushed to its own L0 table
// and followed by a wait, sized so that the last flush leaves L0 with
// SettledL0Tables tables: an L0 compaction takes every L0 table once there
// are L0CompactionThreshold of them (keys arrive in random order, so each
// table spans the key range), so after each flush the flushes still needed
// are (SettledL0Tables - L0 tables) mod the threshold. Then no compaction
// is due, and nothing was compacted by hand.
func (l *Loader) Settle(ctx context.Context, n int) error {
	chunk := tailChunk(l.MemTable, l.Workload.ValueSize)
	if err := l.LoadKeys(ctx, max(l.Loaded, n-tailChunks*chunk)); err != nil {
		return err
	}
	if err := l.FlushAndWait(ctx); err != nil {
		return err
	}
	for l.Loaded < n {
		need := flushesToSettledL0(L0Tables(l.Engine.Shape()))
		size := (n - l.Loaded + need - 1) / need
		if size > 2*chunk {
			size = chunk // too many keys left for that many flushes: go round once more
		}
		if err := l.LoadKeys(ctx, l.Loaded+size); err != nil {
			return err
		}
		if err := l.FlushAndWait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// flushesToSettledL0 returns how many more flushes, at least one, leave L0
// with SettledL0Tables tables when it holds l0 now: each flush adds a
// table, and the one that makes L0CompactionThreshold of them sends them
// all to the base level.
func flushesToSettledL0(l0 int) int {
	const t = kv.DefaultL0CompactionThreshold
	return ((SettledL0Tables-l0-1)%t+t)%t + 1
}

// FlushAndWait flushes the memtable and waits until no flush or
// compaction is running or due.
func (l *Loader) FlushAndWait(ctx context.Context) error {
	return l.Phase("flush + wait for compactions", func() error {
		if err := l.Engine.Flush(); err != nil {
			return err
		}
		return l.Engine.WaitIdle(ctx)
	})
}

// LoadKeys loads the keys up to n.
func (l *Loader) LoadKeys(ctx context.Context, n int) error {
	if n <= l.Loaded {
		return nil
	}
	p := l.start(fmt.Sprintf("load %d keys", n), int64(n-l.Loaded))
	err := l.Workload.Load(ctx, l.Engine, l.Loaded, n, p.Add)
	p.Done()
	if err == nil {
		l.Loaded = n
	}
	return err
}

// WriteHeavyBatch writes batch b of the write-heavy shape's keys, which
// follow the first base loaded, and makes the lookups that follow see
// them.
func (l *Loader) WriteHeavyBatch(base, b int) error {
	lo := base + b*LoadBatch
	n := min(LoadBatch, base+l.Workload.Extra-lo)
	if err := l.Workload.LoadBatchAt(l.Engine, lo, n); err != nil {
		return err
	}
	l.Loaded = lo + n
	return l.Engine.Refresh()
}

// WriteHeavyBatches is how many batches the write-heavy shape writes.
func (w *Workload) WriteHeavyBatches() int { return (w.Extra + LoadBatch - 1) / LoadBatch }
