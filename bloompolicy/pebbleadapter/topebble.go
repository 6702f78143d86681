package pebbleadapter

import (
	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cockroachdb/pebble"
)

// ToPebble returns p as a [pebble.FilterPolicy], so Pebble tables can carry
// bloomkv filters. Pebble v1 builds one filter per table
// ([pebble.TableFilter]), so p's writer receives every key of a table and
// builds one large filter of them.
//
// The policy keeps p's name: Pebble stores it in each table and finds the
// policy again by that name in [pebble.Options.Filters].
//
// ToPebble(nil) is nil, and ToPebble of a policy that [FromPebble] made
// returns the Pebble policy it wraps.
func ToPebble(p bloompolicy.FilterPolicy) pebble.FilterPolicy {
	switch p := p.(type) {
	case nil:
		return nil
	case fromPebble:
		return p.pp
	}
	return toPebble{p: p}
}

// toPebble presents a bloompolicy.FilterPolicy to Pebble.
type toPebble struct {
	p bloompolicy.FilterPolicy
}

var _ pebble.FilterPolicy = toPebble{}

// Name returns the name of the wrapped policy.
func (t toPebble) Name() string { return t.p.Name() }

// MayContain asks the wrapped policy about a table filter. For any other
// filter type (Pebble v1.1.5 defines none) it answers true: a filter it does
// not know how to read must never hide a key.
func (t toPebble) MayContain(ftype pebble.FilterType, filter, key []byte) bool {
	if ftype != pebble.TableFilter {
		return true
	}
	return t.p.MayContain(filter, key)
}

// NewWriter returns the wrapped policy's writer for a table filter, and nil
// (no filter) for any other filter type.
func (t toPebble) NewWriter(ftype pebble.FilterType) pebble.FilterWriter {
	if ftype != pebble.TableFilter {
		return nil
	}
	// bloompolicy.FilterWriter and pebble.FilterWriter have the same method
	// set (AddKey, Finish appending to dst and resetting), so the writer
	// serves Pebble as it is.
	return t.p.NewWriter()
}
