package kv

// LookupDelta is lookupDelta (filters_test.go), for the external tests.
var LookupDelta = lookupDelta

// WALMapped reports whether d writes its WAL through a memory mapping
// (wal_mmap.go), for the external tests.
func WALMapped(d *DB) bool {
	_, ok := d.commit.log.space.(*walMmapWriter)
	return ok
}

// TableFiles is tableFiles (compaction_test.go), for the external tests.
var TableFiles = tableFiles
