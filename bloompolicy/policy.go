package bloompolicy

// FilterPolicy builds and queries filters: compact summaries of a set of keys
// that answer "definitely absent" or "maybe present". A table keeps one
// filter per data block, so a lookup can skip a block, and often a whole
// table, without reading it.
type FilterPolicy interface {
	// Name names the filter encoding. It is stored in every table, and a
	// table whose filter was written under another name is read without its
	// filter: correct, only slower. Change the name whenever the encoding
	// changes, or old tables would be misread.
	Name() string
	// NewWriter returns a writer that builds one filter at a time.
	NewWriter() FilterWriter
	// MayContain reports whether key may be in the set the filter was built
	// from. It never returns false for a key that was added, and it never
	// panics, whatever the bytes of filter: a filter it cannot decode makes
	// it answer true.
	MayContain(filter, key []byte) bool
}

// FilterWriter accumulates keys and encodes the filter of them. A writer is
// not safe for concurrent use.
type FilterWriter interface {
	// AddKey adds key to the filter being built. The writer does not keep
	// key after the call returns.
	AddKey(key []byte)
	// Finish appends the filter of the keys added since the last Finish to
	// dst, returns the extended slice, and resets the writer.
	Finish(dst []byte) []byte
}
