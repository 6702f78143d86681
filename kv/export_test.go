package kv

// LookupDelta is lookupDelta (filters_test.go), for the external tests.
var LookupDelta = lookupDelta

// WALMapped reports whether d writes its WAL through a memory mapping
// (wal_mmap.go), for the external tests.
func WALMapped(d *DB) bool {
	_, ok := d.commit.log.space.(*walMmapWriter)
	return ok
}

// FullSizeMemTables makes the stores o opens start their memtables at
// o.MemTableSize, for the external tests that need a run's writes in one
// memtable and one WAL.
func FullSizeMemTables(o *Options) *Options {
	o.private.fullSizeMemTables = true
	return o
}

// TableFiles is tableFiles (compaction_test.go), for the external tests.
var TableFiles = tableFiles
