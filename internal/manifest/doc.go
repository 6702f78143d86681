// Package manifest describes the shape of a store: which tables it holds and
// at which level (a Version), what each table covers (FileMetadata), and the
// edits that move a store from one version to the next (VersionEdit), as they
// are recorded in the MANIFEST log.
//
// kv keeps the current Version and persists the edits; compaction reads
// Versions to decide what to compact. Neither owns the other's job, so the
// shared description lives here.
//
// # Version edit encoding
//
// An encoded VersionEdit is a sequence of tagged fields. Every integer is an
// unsigned varint (LEB128, as encoding/binary.AppendUvarint writes it);
// "bytes" is a uvarint length followed by that many bytes; an internal key
// is stored as bytes holding its encoding (user key, then the 8-byte
// little-endian trailer). Zero scalars are omitted. A scalar may repeat, the
// last occurrence winning; each occurrence of tags 5, 6, 8 and 9 adds one
// more entry.
//
//	+-----------+----------------------------------------------------------+
//	| tag (uv)  | payload                                                  |
//	+-----------+----------------------------------------------------------+
//	| 1         | comparer name: bytes                                     |
//	| 2         | log number: uv                                           |
//	| 3         | next file number: uv                                     |
//	| 4         | last sequence number: uv (<= 2^56-1)                     |
//	| 5         | deleted table: level uv (< 7) | file number uv           |
//	| 6         | new table: level uv (< 7) | file number uv | size uv |   |
//	|           |   smallest key bytes | largest key bytes |               |
//	|           |   smallest seqnum uv | largest seqnum uv |               |
//	|           |   entry count uv | filter bytes uv                       |
//	| 7         | recyclable log number: uv (every WAL from it on is in    |
//	|           |   recyclable chunks; absent in older MANIFESTs)          |
//	| 8         | ingested table: tag 6's payload | global seqnum uv (> 0) |
//	| 9         | closed log: WAL number uv (> 0) | its length uv (one     |
//	|           |   per WAL that the last Close left live, sealed and      |
//	|           |   synced; absent in older MANIFESTs)                     |
//	+-----------+----------------------------------------------------------+
//
// Tags are never reused. An unknown tag, a truncated field or an
// out-of-range level or sequence number is corruption: the decoder cannot
// skip what it does not understand, and a MANIFEST it misreads would lose
// tables.
//
// In the MANIFEST file each encoded edit is one record of the log format of
// package internal/record.
package manifest
