package sstable

import "sync"

// pool is a typed sync.Pool.
type pool[T any] struct{ p sync.Pool }

func newPool[T any](alloc func() T) *pool[T] {
	return &pool[T]{p: sync.Pool{New: func() any { return alloc() }}}
}

// Get returns a pooled or new value.
func (p *pool[T]) Get() T { return p.p.Get().(T) }

// Put returns v to the pool.
func (p *pool[T]) Put(v T) { p.p.Put(v) }
