package crashtest

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bloomkv/bloomkv/kv"
)

// LossBound is the most bytes of acknowledged NoSync writes that a crash
// of the process may lose with kv.Options.BackgroundWALWrites
// (kv.BackgroundWALLossBound): 256 KiB of WAL records. The records of the
// lost ops are at least their batches' Batch.Len, which the check adds
// up, so a loss it reports over the bound is one.
const LossBound = kv.BackgroundWALLossBound

// ack is an op a child reported acknowledged, with the moments its call
// began and returned, in nanoseconds since the child started.
type ack struct {
	n          int
	start, end int64
}

// history is what the parent knows of a round's store: per writer, the
// last op of the state the last check found, and the ops a child
// acknowledged since, in order.
type history struct {
	r       *Round
	checked []int
	acks    [][]ack
	closed  bool // the child closed the store after its last ack
}

func newHistory(r *Round) *history {
	h := &history{r: r, checked: make([]int, r.Writers), acks: make([][]ack, r.Writers)}
	for w := range h.checked {
		h.checked[w] = -1
	}
	return h
}

// lastAcked returns writer w's last op acknowledged, or the last one
// checked when none was acknowledged since.
func (h *history) lastAcked(w int) int {
	if n := len(h.acks[w]); n > 0 {
		return h.acks[w][n-1].n
	}
	return h.checked[w]
}

// windows returns, per writer, the ops whose states the store may hold
// after a kill: from the last checked (all acknowledged ops lost, which
// only BackgroundWALWrites allows) to one past the last acknowledged (the
// op in flight, or acknowledged and not yet reported, when the child died).
func (h *history) windows() []window {
	ws := make([]window, h.r.Writers)
	for w := range ws {
		ws[w] = window{h.checked[w], h.lastAcked(w) + 1}
	}
	return ws
}

// window is the ops [Lo, Hi] of a writer whose states a check looks for.
type window struct{ Lo, Hi int }

// begin records the acks of the child that wrote after the last check,
// each writer's first being the op after its checked one.
func (h *history) begin(acks [][]ack, closed bool) error {
	for w, as := range acks {
		for k, a := range as {
			if a.n != h.checked[w]+1+k {
				return fmt.Errorf("crashtest: writer %d reported op %d acknowledged after op %d", w, a.n, h.checked[w]+k)
			}
		}
	}
	h.acks, h.closed = acks, closed
	return nil
}

// verdict is what a check of a store against its history found.
type verdict struct {
	acks int // acknowledged ops checked
	lost int // Batch.Len of the acknowledged ops lost (BackgroundWALWrites)
}

// check judges the states found in the store, per writer those of
// statesIn over windows (none empty), against the promises: with the
// default WAL, or after a clean Close, every acknowledged op survives;
// with BackgroundWALWrites a prefix of the acknowledged history does, no
// acknowledged Sync op or Flush lost and at most LossBound bytes of the
// rest. Then the last state found of each writer is the checked one.
func (h *history) check(found [][]int) (verdict, error) {
	v := verdict{lost: -1}
	for w := range found {
		v.acks += len(h.acks[w])
	}
	last := make([]int, len(found))
	for w, ms := range found {
		last[w] = ms[len(ms)-1]
	}
	if !h.r.BackgroundWAL || h.closed {
		if l := h.loss(last); l.ops > 0 {
			return v, fmt.Errorf("crashtest: %s%s", h.describe(last), h.afterClose())
		}
		v.lost = 0
	} else {
		for _, cut := range h.cuts(found) {
			if l := h.loss(cut); l.ok() && (v.lost < 0 || l.bytes < v.lost) {
				v.lost = l.bytes
			}
		}
		if v.lost < 0 {
			return v, fmt.Errorf("crashtest: no prefix of the acknowledged history within the loss bound explains the store: %s", h.describe(last))
		}
	}
	copy(h.checked, last)
	h.acks = make([][]ack, h.r.Writers)
	h.closed = false
	return v, nil
}

// afterClose says that the store was closed, where it was.
func (h *history) afterClose() string {
	if h.closed {
		return " (after the child's Close returned)"
	}
	return ""
}

// loss is what the acknowledged ops past a state of each writer add up to.
type loss struct {
	ops, bytes int
	synced     int // acknowledged Sync ops and Flushes among them
}

// ok reports whether BackgroundWALWrites allows the loss.
func (l loss) ok() bool { return l.synced == 0 && l.bytes <= LossBound }

// loss returns what is lost if writer w's keys hold the state of op
// states[w], for each w.
func (h *history) loss(states []int) loss {
	var l loss
	for w, m := range states {
		lw := h.writerLoss(w, m)
		l.ops, l.bytes, l.synced = l.ops+lw.ops, l.bytes+lw.bytes, l.synced+lw.synced
	}
	return l
}

// writerLoss returns what writer w loses if its keys hold the state of op m.
func (h *history) writerLoss(w, m int) loss {
	var l loss
	for n := m + 1; n <= h.lastAcked(w); n++ {
		o := h.r.op(w, n)
		l.ops++
		l.bytes += o.size
		if o.sync || o.flush || o.ingest { // an Ingest flushes the memtables first
			l.synced++
		}
	}
	return l
}

// describe tells the acknowledged ops lost if the store holds states.
func (h *history) describe(states []int) string {
	var parts []string
	for w, m := range states {
		if la := h.lastAcked(w); m < la {
			l := h.writerLoss(w, m)
			parts = append(parts, fmt.Sprintf("writer %d holds the state of op %d, but ops up to %d were acknowledged: %d lost (%d bytes, %d Sync, Flush or Ingest)",
				w, m, la, l.ops, l.bytes, l.synced))
		}
	}
	total := h.loss(states)
	return fmt.Sprintf("%s; %d acknowledged ops lost in all, %d bytes", strings.Join(parts, "; "), total.ops, total.bytes)
}

// cuts returns the ways the store's states can be a prefix of the order
// in which the child's ops committed. That order is unknown, but an op
// acknowledged before another began committed first. So a state per
// writer is a prefix only if some moment T parts them: every op kept
// began by T, every acknowledged op lost was acknowledged after T. For
// each such T, the last state of each writer that T parts.
func (h *history) cuts(found [][]int) [][]int {
	var moments []int64
	for w, ms := range found {
		for _, m := range ms {
			moments = append(moments, h.keptBegan(w, m))
		}
	}
	slices.Sort(moments)
	var cuts [][]int
	for _, t := range slices.Compact(moments) {
		if cut, ok := h.cutAt(found, t); ok {
			cuts = append(cuts, cut)
		}
	}
	return cuts
}

// cutAt returns the last state of each writer that moment t parts, if
// every writer has one.
func (h *history) cutAt(found [][]int, t int64) ([]int, bool) {
	cut := make([]int, len(found))
	for w, ms := range found {
		cut[w] = -2
		for _, m := range ms {
			if h.keptBegan(w, m) <= t && h.lostAcked(w, m) >= t {
				cut[w] = m
			}
		}
		if cut[w] == -2 {
			return nil, false
		}
	}
	return cut, true
}

// keptBegan returns the moment the last op of writer w's state m began
// (or a moment before it): -1 for a state checked before the child ran.
func (h *history) keptBegan(w, m int) int64 {
	as, first := h.acks[w], h.checked[w]+1
	switch {
	case m < first:
		return -1
	case m-first < len(as):
		return as[m-first].start
	case len(as) > 0:
		return as[len(as)-1].end // the op in flight began after the last ack
	}
	return 0
}

// lostAcked returns the moment the first acknowledged op past writer w's
// state m was acknowledged, or the end of time when none is past it.
func (h *history) lostAcked(w, m int) int64 {
	if k := m + 1 - (h.checked[w] + 1); k < len(h.acks[w]) {
		return h.acks[w][k].end
	}
	return math.MaxInt64
}
