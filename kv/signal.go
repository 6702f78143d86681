package kv

import (
	"runtime"
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
