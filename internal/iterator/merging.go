package iterator

import "github.com/bloomkv/bloomkv/internal/base"

// Merging merges the entries of several internal iterators into one stream
// in internal-key order. It keeps the children that are positioned on
// an entry in a binary heap: a min-heap while moving forward, a max-heap
// while moving backward. Entries with equal internal keys in different
// children are all returned, the child passed first to NewMerging first
// (in forward order), so the merge is a total order and Prev retraces Next
// exactly.
//
// Invariant while forward: every child other than the current one is at its
// first entry that sorts after the current entry, or exhausted; while
// backward, at its last entry that sorts before it, or exhausted. Changing
// direction re-establishes the invariant by stepping every other child once
// past the current entry.
type Merging struct {
	cmp      base.Compare
	children []mergingChild
	heap     []int // indexes into children, in heap order
	// runnerUp is the heap slot (1 or 2) of the root's lesser child in the
	// current direction, 0 when not known. While the top child keeps
	// winning, only the root moves, so the order of its two children holds
	// and each step costs one comparison instead of two.
	runnerUp int
	forward  bool
	err      error
}

// mergingChild is one input of a merge with a cached copy of its current
// key, so heap comparisons need no interface calls.
type mergingChild struct {
	iter  base.InternalIterator
	key   base.InternalKey
	valid bool
}

// NewMerging returns an iterator over the union of the entries of iters, in
// internal-key order. It owns iters: Close closes every one of them.
//
// The first error of any child makes the merged iterator invalid; every
// positioning call returns false from then on and Error and Close report
// that error. Next and Prev on an iterator that is not Valid return false.
func NewMerging(cmp base.Compare, iters ...base.InternalIterator) *Merging {
	m := new(Merging)
	m.Init(cmp, iters...)
	return m
}

// Init readies m to merge iters as NewMerging's iterator does, reusing
// m's memory: m may be the zero Merging or a closed one. It keeps no
// reference to the iters slice itself.
func (m *Merging) Init(cmp base.Compare, iters ...base.InternalIterator) {
	children := m.children[:0]
	for _, it := range iters {
		children = append(children, mergingChild{iter: it})
	}
	heap := m.heap[:0]
	if cap(heap) < len(iters) {
		heap = make([]int, 0, len(iters))
	}
	*m = Merging{cmp: cmp, children: children, heap: heap, forward: true}
}

// SeekGE implements base.InternalIterator.
func (m *Merging) SeekGE(key []byte) bool {
	return m.positionAll(true, func(it base.InternalIterator) bool { return it.SeekGE(key) })
}

// SeekPrefixGE implements base.PrefixIterator: it seeks every child with
// base.SeekPrefixGE, so children with filters may skip what cannot hold
// prefix. Prev must not follow before the next absolute positioning call.
func (m *Merging) SeekPrefixGE(prefix, key []byte) bool {
	return m.positionAll(true, func(it base.InternalIterator) bool { return base.SeekPrefixGE(it, prefix, key) })
}

// SeekLT implements base.InternalIterator.
func (m *Merging) SeekLT(key []byte) bool {
	return m.positionAll(false, func(it base.InternalIterator) bool { return it.SeekLT(key) })
}

// First implements base.InternalIterator.
func (m *Merging) First() bool {
	return m.positionAll(true, base.InternalIterator.First)
}

// Last implements base.InternalIterator.
func (m *Merging) Last() bool {
	return m.positionAll(false, base.InternalIterator.Last)
}

// Next implements base.InternalIterator.
func (m *Merging) Next() bool {
	if !m.Valid() {
		return false
	}
	if !m.forward {
		return m.switchDirection(true)
	}
	m.step(m.heap[0], m.children[m.heap[0]].iter.Next())
	return m.fixTop()
}

// Prev implements base.InternalIterator.
func (m *Merging) Prev() bool {
	if !m.Valid() {
		return false
	}
	if m.forward {
		return m.switchDirection(false)
	}
	m.step(m.heap[0], m.children[m.heap[0]].iter.Prev())
	return m.fixTop()
}

// Valid implements base.InternalIterator.
func (m *Merging) Valid() bool { return m.err == nil && len(m.heap) > 0 }

// Key implements base.InternalIterator.
func (m *Merging) Key() base.InternalKey { return m.children[m.heap[0]].key }

// Value implements base.InternalIterator.
func (m *Merging) Value() []byte { return m.children[m.heap[0]].iter.Value() }

// Error implements base.InternalIterator.
func (m *Merging) Error() error { return m.err }

// Close implements base.InternalIterator. It closes every child and returns
// the first error met, by the merge or by any child's Close.
func (m *Merging) Close() error {
	err := m.err
	for i := range m.children {
		if it := m.children[i].iter; it != nil {
			if cerr := it.Close(); err == nil {
				err = cerr
			}
			m.children[i] = mergingChild{}
		}
	}
	m.heap = m.heap[:0]
	m.err = err
	return err
}

// positionAll positions every child with pos and rebuilds the heap for the
// given direction.
func (m *Merging) positionAll(forward bool, pos func(base.InternalIterator) bool) bool {
	if m.err != nil {
		return false
	}
	for i := range m.children {
		m.step(i, pos(m.children[i].iter))
	}
	return m.buildHeap(forward)
}

// step records the outcome of positioning child i: its new key, or the
// error that stopped it.
func (m *Merging) step(i int, ok bool) {
	c := &m.children[i]
	c.valid = ok
	if ok {
		c.key = c.iter.Key()
		return
	}
	c.key = base.InternalKey{}
	if err := c.iter.Error(); err != nil && m.err == nil {
		m.err = err
	}
}

// switchDirection turns the merge around at the current entry and moves one
// entry in the new direction (forward: to the entry after the current one).
//
// Every other child is one step short of the current entry on the far side:
// backward, it sits at its last entry before the current one, so a single
// Next puts it at its first entry after it; forward, the mirror image. A
// child that ran off an end restarts from that end instead.
func (m *Merging) switchDirection(forward bool) bool {
	cur := m.heap[0]
	for i := range m.children {
		if i == cur {
			continue
		}
		c := &m.children[i]
		switch {
		case forward && c.valid:
			m.step(i, c.iter.Next())
		case forward:
			m.step(i, c.iter.First())
		case c.valid:
			m.step(i, c.iter.Prev())
		default:
			m.step(i, c.iter.Last())
		}
	}
	if forward {
		m.step(cur, m.children[cur].iter.Next())
	} else {
		m.step(cur, m.children[cur].iter.Prev())
	}
	return m.buildHeap(forward)
}

// order compares the entries (a, i) and (b, j) in the merge's total order:
// internal key, then child index.
func (m *Merging) order(i int, a base.InternalKey, j int, b base.InternalKey) int {
	if c := base.InternalCompare(m.cmp, a, b); c != 0 {
		return c
	}
	switch {
	case i < j:
		return -1
	case i > j:
		return 1
	}
	return 0
}

// less orders heap slots for the current direction.
func (m *Merging) less(x, y int) bool {
	i, j := m.heap[x], m.heap[y]
	c := m.order(i, m.children[i].key, j, m.children[j].key)
	if m.forward {
		return c < 0
	}
	return c > 0
}

// buildHeap makes a heap of the valid children for the given direction.
func (m *Merging) buildHeap(forward bool) bool {
	m.forward, m.runnerUp = forward, 0
	m.heap = m.heap[:0]
	if m.err != nil {
		return false
	}
	for i := range m.children {
		if m.children[i].valid {
			m.heap = append(m.heap, i)
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.heap) > 0
}

// fixTop restores the heap after the top child moved, dropping it if it ran
// out of entries.
func (m *Merging) fixTop() bool {
	if m.err != nil {
		m.heap = m.heap[:0]
		return false
	}
	if !m.children[m.heap[0]].valid {
		n := len(m.heap) - 1
		m.heap[0] = m.heap[n]
		m.heap = m.heap[:n]
		m.runnerUp = 0
	}
	switch len(m.heap) {
	case 0:
		return false
	case 1:
		return true
	}
	if m.runnerUp == 0 {
		m.runnerUp = 1
		if len(m.heap) > 2 && m.less(2, 1) {
			m.runnerUp = 2
		}
	}
	if r := m.runnerUp; m.less(r, 0) {
		m.heap[0], m.heap[r] = m.heap[r], m.heap[0]
		m.runnerUp = 0
		m.down(r)
	}
	return true
}

// down sifts heap slot i down to its place.
func (m *Merging) down(i int) {
	n := len(m.heap)
	for {
		smallest := i
		if l := 2*i + 1; l < n && m.less(l, smallest) {
			smallest = l
		}
		if r := 2*i + 2; r < n && m.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			return
		}
		m.heap[i], m.heap[smallest] = m.heap[smallest], m.heap[i]
		i = smallest
	}
}
