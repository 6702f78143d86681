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

// SmallWALMmapChunks makes the stores o opens map their WALs n bytes at a
// time (rounded up to a page), not maxWALMmapChunk, for the external
// tests whose records must cross mapped chunks often.
func SmallWALMmapChunks(o *Options, n int64) *Options {
	o.private.walMmapChunk = n
	return o
}

// WALPastFirstMappedChunk reports whether d's WAL is mapped and holds
// more than one mapped chunk's length of bytes, so that its writes have
// crossed into another chunk.
func WALPastFirstMappedChunk(d *DB) bool {
	d.commit.mu.Lock()
	defer d.commit.mu.Unlock()
	if d.commit.log == nil {
		return false
	}
	m, ok := d.commit.log.space.(*walMmapWriter)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.off > m.chunk
}

// TableFiles is tableFiles (compaction_test.go), for the external tests.
var TableFiles = tableFiles

// BeforeReadSeq makes the stores o opens call f as a read without a
// snapshot, its read state loaded, is about to load the visible sequence
// number, for the external tests that commit writes there.
func BeforeReadSeq(o *Options, f func()) *Options {
	o.private.beforeReadSeq = f
	return o
}
