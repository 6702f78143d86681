package kv

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// signal tells one waiting goroutine that an event happened: a writer
// that its batch is published. The event is usually a few microseconds
// away, closer than a goroutine takes to fall asleep and be woken again,
// so wait yields the processor a few times, watching the state, before
// it parks on the channel; set wakes it only if it parked. Many writers
// then hand work on without a system call or a trip through the
// scheduler's sleep queue, each costing more than the event it waits
// for.
type signal struct {
	state atomic.Uint32 // signalPending, signalSet or signalParked
	ch    chan struct{}
}

const (
	signalPending = iota
	signalSet
	signalParked
)

// signalSpins is how many times wait yields before it parks.
const signalSpins = 64

// reset readies s for the next event, before any goroutine may set it.
func (s *signal) reset() {
	if s.ch == nil {
		s.ch = make(chan struct{}, 1)
	}
	s.state.Store(signalPending)
}

// set marks the event happened, waking the waiter if it parked. It is
// called once per reset.
func (s *signal) set() {
	if s.state.Swap(signalSet) == signalParked {
		s.ch <- struct{}{}
	}
}

// wait returns once set has been called.
func (s *signal) wait() {
	for range signalSpins {
		if s.state.Load() == signalSet {
			return
		}
		runtime.Gosched()
	}
	if s.state.CompareAndSwap(signalPending, signalParked) {
		<-s.ch
	}
}

// waiters are goroutines waiting, rarely, for a condition that goroutines
// on a hot path make true: the publications that a flush waits for, say.
// Those goroutines call wake after each change, which costs them one
// atomic load while nobody waits. The zero value is ready to use.
type waiters struct {
	n    atomic.Int32 // the goroutines in waitUntil
	mu   sync.Mutex
	cond sync.Cond
}

// waitUntil returns once done reports true. done must turn true only by
// changes each followed by a wake.
func (w *waiters) waitUntil(done func() bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cond.L == nil {
		w.cond.L = &w.mu
	}
	// Counted before done is first called, and wake loads n after its
	// change: if done misses a change, its wake sees the waiter.
	w.n.Add(1)
	for !done() {
		w.cond.Wait()
	}
	w.n.Add(-1)
}

// wake wakes the goroutines in waitUntil, if any, to call done again.
func (w *waiters) wake() {
	if w.n.Load() > 0 {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}
