package base

// SetDefault sets *p to def when *p is not positive. It is the one rule by
// which every options type of bloomkv fills its numeric fields: zero means
// the default. (kv.Open rejects negative fields before applying it, so a
// store never turns a negative setting into a default silently.) It is
// also Pebble's rule for its numeric fields.
func SetDefault[T int | int64 | uint64](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
