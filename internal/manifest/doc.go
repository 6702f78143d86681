// Package manifest describes the shape of a store: which tables it holds and
// at which level (a Version), what each table covers (FileMetadata), and the
// edits that move a store from one version to the next (VersionEdit), as they
// are recorded in the MANIFEST log.
//
// kv keeps the current Version and persists the edits; compaction reads
// Versions to decide what to compact. Neither owns the other's job, so the
// shared description lives here.
package manifest
