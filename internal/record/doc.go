// Package record frames the logs of a store, the write-ahead log (WAL) and
// the MANIFEST: a sequence of records, each an opaque byte string, that a
// reader gets back whole and in order, with damage detected by checksums.
//
// # Format
//
// The stream is cut into blocks of 32 KiB (the last one may be short). A
// block holds chunks; a chunk never crosses a block boundary. Each chunk is a
// 7-byte header and its payload:
//
//	+---------------+-------------+----------+--------------------+
//	| checksum 4 B  | length 2 B  | type 1 B | payload (length B) |
//	| uint32 LE     | uint16 LE   |          |                    |
//	+---------------+-------------+----------+--------------------+
//
// checksum is the low 32 bits of xxhash64 over the type byte followed by
// the payload. type says which part of a record the payload is:
//
//	1 full    the whole record
//	2 first   the record's first fragment
//	3 middle  an inner fragment
//	4 last    the record's final fragment
//
// A record that does not fit in what is left of the block is split into a
// first chunk, middle chunks and a last chunk, one per block. When fewer than
// 7 bytes are left in a block, too few for a header, they are zero-filled
// and the next chunk starts the following block. A header that exactly fills
// a block's tail carries an empty fragment. An empty record is one full
// chunk with no payload.
//
//	block 0 (32768 B)                           block 1
//	+---------+-----------+----------+---------+-----------------+----
//	| full: A | full: B   | first: C | pad 0-6 | last: C         | ...
//	+---------+-----------+----------+---------+-----------------+----
//
// # Damage
//
// A crash while appending leaves a torn tail: an incomplete or garbled last
// record with nothing valid after it. The Reader treats that as the end of
// the log (io.EOF), because the record was never acknowledged as written.
// Damage followed by any chunk whose checksum verifies cannot be explained
// by a crash at the tail, so the Reader reports it as corruption wrapping
// base.ErrCorruption, naming the file and the offset of the damage. (A
// torn record whose payload happens to hold a whole valid chunk, such as a
// user value that is itself a framed log, is reported as corruption: a
// false alarm, never a silent loss.)
//
// Offsets are counted from the start of the stream, which must start at a
// block boundary: a Writer starts a new stream, it cannot append to an old one.
package record
