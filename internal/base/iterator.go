package base

// InternalIterator walks internal keys in internal-key order: user keys
// ascending, and the versions of one user key newest first. Tables,
// memtables, levels and merges of them all implement it, so the engine can
// stack them freely.
//
// Positioning methods return whether the iterator landed on an entry; Valid
// says the same afterwards. Key and Value may only be called while Valid, and
// the memory they return is valid only until the next positioning call or
// Close: callers that keep it must copy it. An iterator that meets an error
// becomes invalid and reports it through Error; Close returns it too.
type InternalIterator interface {
	// SeekGE moves to the first entry whose user key is >= key.
	SeekGE(key []byte) bool
	// SeekLT moves to the last entry whose user key is < key.
	SeekLT(key []byte) bool
	// First moves to the first entry.
	First() bool
	// Last moves to the last entry.
	Last() bool
	// Next moves to the following entry.
	Next() bool
	// Prev moves to the preceding entry.
	Prev() bool
	// Valid reports whether the iterator is at an entry.
	Valid() bool
	// Key returns the current entry's internal key.
	Key() InternalKey
	// Value returns the current entry's value.
	Value() []byte
	// Error returns the first error the iterator met, if any.
	Error() error
	// Close releases the iterator's resources and returns Error.
	Close() error
}

// PrefixIterator is an InternalIterator that can seek within one key
// prefix (see Split) and use filters to skip what cannot hold it. Iterators
// without filters need not implement it: SeekPrefixGE falls back to SeekGE.
type PrefixIterator interface {
	InternalIterator
	// SeekPrefixGE moves to the first entry whose user key is >= key, as
	// SeekGE does, where prefix is key's prefix under the comparer's Split
	// (the whole key without one). It may instead report no entry when it
	// knows that no entry >= key bears prefix (a filter said so), and it
	// may land on an entry of another prefix: callers check. Until the next
	// absolute positioning call, Next may likewise stop at the end of the
	// prefix, and Prev must not be called. prefix must stay unchanged until
	// then.
	SeekPrefixGE(prefix, key []byte) bool
}

// SeekPrefixGE calls it.SeekPrefixGE when it is a PrefixIterator, and
// it.SeekGE(key) otherwise.
func SeekPrefixGE(it InternalIterator, prefix, key []byte) bool {
	if p, ok := it.(PrefixIterator); ok {
		return p.SeekPrefixGE(prefix, key)
	}
	return it.SeekGE(key)
}
