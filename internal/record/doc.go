// Package record frames the logs of a store, the write-ahead log (WAL) and
// the MANIFEST: a sequence of records, each an opaque byte string, that a
// reader gets back whole and in order, with damage detected by checksums.
//
// # Format
//
// The stream is cut into blocks of 32 KiB (the last one may be short). A
// block holds chunks; a chunk never crosses a block boundary. Each chunk is a
// header and its payload. A chunk comes in one of two formats, legacy
// (7-byte header) or recyclable (11-byte header, which adds the log
// number); one stream uses one format throughout. A MANIFEST is legacy; a
// WAL is recyclable (a WAL written before the recyclable format existed
// is legacy, and is still read).
//
//	legacy:
//	+---------------+-------------+----------+--------------------+
//	| checksum 4 B  | length 2 B  | type 1 B | payload (length B) |
//	| uint32 LE     | uint16 LE   | 1..4     |                    |
//	+---------------+-------------+----------+--------------------+
//
//	recyclable:
//	+---------------+-------------+----------+----------------+--------------------+
//	| checksum 4 B  | length 2 B  | type 1 B | log number 4 B | payload (length B) |
//	| uint32 LE     | uint16 LE   | 5..8     | uint32 LE      |                    |
//	+---------------+-------------+----------+----------------+--------------------+
//
// checksum is the low 32 bits of xxhash64 over the bytes from the type
// byte to the end of the payload (the log number included). log number is
// the low 32 bits of the WAL's file number. type says which part of a
// record the payload is, in the legacy and the recyclable format:
//
//	1 / 5  full    the whole record
//	2 / 6  first   the record's first fragment
//	3 / 7  middle  an inner fragment
//	4 / 8  last    the record's final fragment
//
// A record that does not fit in what is left of the block is split into a
// first chunk, middle chunks and a last chunk, one per block. When fewer
// bytes than a header are left in a block (7, or 11 in the recyclable
// format), they are zero-filled and the next chunk starts the following
// block. A header that exactly fills a block's tail carries an empty
// fragment. An empty record is one full chunk with no payload.
//
//	block 0 (32768 B)                           block 1
//	+---------+-----------+----------+---------+-----------------+----
//	| full: A | full: B   | first: C | pad     | last: C         | ...
//	+---------+-----------+----------+---------+-----------------+----
//
// # Recycling
//
// A WAL file whose writes are all in tables may be recycled: renamed to
// the next WAL's name and overwritten from offset 0, so that appending
// does not grow the file and a sync need not update its size. Past the
// new log's last write the file still holds the earlier log's chunks. A
// Reader made by NewLogReader with the new log's number ends the stream
// (io.EOF) at the first valid chunk that is not the new log's: a
// recyclable chunk with another log number, or, once the log's format is
// known, one of the other format. A file whose first new chunk never
// reached the disk holds the earlier log's chunk at offset 0, and reads as
// empty.
//
// # Which format
//
// A log's format is never taken from a byte that damage can change. The
// caller says what it knows (LogFormat): a store that records that its
// WALs are recyclable reads them with RecyclableFormat, where a legacy
// chunk is damage (and at offset 0, where no crash can leave a valid
// chunk of the other format, corruption). Otherwise (DetectFormat) the
// first chunk whose checksum verifies decides, and until one has, damage
// is followed by the scan below for chunks of either format (recyclable
// ones with the log's number).
//
// # Damage
//
// A crash while appending leaves a torn tail: an incomplete or garbled last
// record with nothing valid after it. The Reader treats that as the end of
// the log (io.EOF), because the record was never acknowledged as written.
// Damage followed by any chunk of the log (its format, and its log number)
// whose checksum verifies cannot be explained by a crash at the tail, so
// the Reader reports it as corruption wrapping
// base.ErrCorruption, naming the file and the offset of the damage. (A
// torn record whose payload happens to hold a whole valid chunk, such as a
// user value that is itself a framed log, is reported as corruption: a
// false alarm, never a silent loss.)
//
// Offsets are counted from the start of the stream, which must start at a
// block boundary: a Writer starts a new stream, it cannot append to an old one.
package record
