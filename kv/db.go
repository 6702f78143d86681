package kv

// DB is an open store. It is safe for concurrent use by many goroutines.
type DB struct{}
