package kv

import "github.com/bloomkv/bloomkv/internal/manifest"

// EstimateDiskUsage returns an estimate of the bytes on disk of the
// tables' data for user keys in [start, end] (both inclusive; nil is
// unbounded), as Pebble's DB.EstimateDiskUsage: a table whose keys all
// lie in the range counts its whole size; a table that overlaps it only
// partly counts the data blocks its index places in the range (see
// sstable.Reader.EstimateDiskUsage), whole blocks. Memtables and WALs are
// not counted. Key ranges and indexes are in memory, so it reads no data
// block, but it may open tables.
//
// start sorting after end is an error, as is a call after Close
// (ErrClosed).
func (d *DB) EstimateDiskUsage(start, end []byte) (uint64, error) {
	if err := d.checkOpen(); err != nil {
		return 0, err
	}
	if err := d.checkKeyRange("EstimateDiskUsage", start, end); err != nil {
		return 0, err
	}
	d.mu.Lock()
	v := d.mu.versions.current
	v.Ref()
	d.mu.Unlock()
	defer d.unrefVersion(v)
	var total uint64
	for level := range v.Levels {
		for _, f := range v.Overlaps(level, d.cmp.Compare, start, end) {
			n, err := d.estimateTable(f, start, end)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

// estimateTable returns the bytes of table f holding keys in [start,
// end], which its key range overlaps: all of it when the range covers it.
func (d *DB) estimateTable(f *manifest.FileMetadata, start, end []byte) (uint64, error) {
	cmp := d.cmp.Compare
	if (start == nil || cmp(start, f.Smallest.UserKey) <= 0) && (end == nil || cmp(f.Largest.UserKey, end) <= 0) {
		return f.Size, nil
	}
	e, err := d.tableCache.get(f)
	if err != nil {
		return 0, err
	}
	defer d.tableCache.release(e)
	return e.reader.EstimateDiskUsage(start, end)
}
