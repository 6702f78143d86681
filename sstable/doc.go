// Package sstable reads and writes bloomkv's immutable sorted tables.
//
// A table holds internal keys (user key, sequence number, kind) in
// increasing internal-key order, each with a value. A [Writer] builds one
// from an ordered stream of entries; a [Reader] serves point lookups
// ([Reader.Get]) and iterators ([Reader.NewIter]) over it. Every data
// block has its own filter, built through a bloompolicy.FilterPolicy over
// the block's distinct user keys (or, under a comparer with a Split, their
// distinct prefixes), so a lookup that the filter rules out costs no
// data-block read. Range tombstones ([Writer.AddRangeDel]) are kept apart
// from the entries, in a block of their own that a Reader loads once and
// keeps; a filter speaks only of the entries, never of them. Blocks read
// from the file are kept in a [Cache] shared by all the readers of a
// store, whose capacity also bounds what each open Reader keeps in
// memory (its index and filter blocks, reserved in the cache); a
// compaction's pass over a table ([IterOptions.Compaction]) does not
// fill it, and reads the file ahead of its blocks, 64 KiB at a time. A
// Reader may drop its filter block and load it again ([Reader.DropFilter],
// [Reader.LoadFilter]), or hold instead filters built in memory from the
// table's keys at another size ([Reader.BuildFilter], [Reader.HoldFilter]),
// as a store whose filter memory is capped does; the file never changes.
//
// # File
//
// All integers are little-endian; "uvarint" is encoding/binary's unsigned
// varint. A table is a sequence of blocks, each followed by its trailer,
// and ends with a fixed-size footer:
//
//	+-----------------------------+
//	| data block 0     | trailer  |  entries: internal key -> value
//	| ...              |          |
//	| data block N-1   | trailer  |
//	| filter block     | trailer  |  filter i covers data block i (absent without a policy)
//	| properties block | trailer  |  entries: property name -> value
//	| range-del block  | trailer  |  range tombstones (absent without any; format version 2)
//	| metaindex block  | trailer  |  "filter.<policy name>" -> handle, "properties" -> handle,
//	|                  |          |  "rangedel" -> handle
//	| index block      | trailer  |  separator internal key -> handle of data block i
//	| footer (56 B)               |
//	+-----------------------------+
//
// A handle locates a block: uvarint offset, uvarint length of the stored
// block (trailer excluded).
//
// # Blocks
//
// Data, index, metaindex, properties and range-deletion blocks share one
// layout: entries
// whose keys are prefix-compressed against the previous key, then an array
// of restart points, the offsets of the entries that store their key
// whole. Readers binary-search the restart points and decode forward.
//
//	entry:
//	+-----------------+-------------------+-----------------+---------------------+-----------+
//	| shared uvarint  | unshared uvarint  | value uvarint   | key[shared:]        | value     |
//	| (bytes of the   | (key bytes that   | (value length)  | (unshared B)        | (value B) |
//	|  previous key)  |  follow)          |                 |                     |           |
//	+-----------------+-------------------+-----------------+---------------------+-----------+
//
//	block:
//	+-----------+-----+-------------+-------------------+-----+--------------------+--------------------+
//	| entry 0   | ... | entry n-1   | restart 0 (4 B)   | ... | restart r-1 (4 B)  | r: uint32 (4 B)    |
//	+-----------+-----+-------------+-------------------+-----+--------------------+--------------------+
//
// Restart 0 is offset 0; an empty block has r = 0. Data blocks place a
// restart point every BlockRestartInterval entries (16 by default); the
// index block places one at every entry, so index entry i, at restart i,
// describes data block i. Index keys are encoded internal keys k with
// last(block i) <= k < first(block i+1): the comparer's shortened
// separator with the largest trailer when that fits, else block i's last
// key itself. Under a comparer with a Split, when the last key of block i
// and the first of block i+1 have different prefixes, the separator also
// sorts below the prefix of block i+1's first key: a seek for a key of
// prefix p then lands on a block after which no block holds p unless this
// one does, so that block's filter can rule p out for the whole table.
// Keys in data and index blocks are encoded internal keys: the user key
// followed by an 8-byte trailer, seqnum<<8 | kind, where kind is 0 (DEL)
// or 1 (SET); a shortened separator carries seqnum 2^56-1 and kind 2
// (base.KindMax), which version 1 tables wrote as 1.
//
// # Versions
//
// Version 2 added the range-deletion block, the range-deletions property
// and the separators' kind 2. Readers read versions 1 and 2; a version 1
// table with a range-deletion block is corrupt. Readers that know only
// version 1 refuse version 2 tables rather than read them without their
// tombstones.
//
// # Trailer
//
// Every block is followed by 5 bytes:
//
//	+-----------------------+------------------------------------------------+
//	| compression type 1 B  | checksum uint32: low 32 bits of xxhash64 over  |
//	| 0 none, 1 snappy      | the stored block and the compression type byte |
//	+-----------------------+------------------------------------------------+
//
// A block is stored Snappy-compressed when that saves at least an eighth
// of it. Handles, checksums and lengths refer to the stored bytes.
//
// # Filter block
//
// The filters of the data blocks, end to end, then their lengths, then the
// offset at which the lengths start:
//
//	+----------+-----+------------+--------------------+-----+------------------------+------------------+
//	| filter 0 | ... | filter N-1 | len 0 uvarint      | ... | len N-1 uvarint        | lengths offset   |
//	|          |     |            | (1-2 B each)       |     |                        | uint32 (4 B)     |
//	+----------+-----+------------+--------------------+-----+------------------------+------------------+
//
// The lengths sum to the lengths offset and there is exactly one per data
// block. Filter i holds each distinct user key of data block i once, or,
// when the table's properties name a Split (filter.split), each distinct
// prefix of them under it; a reader whose comparer splits otherwise (or
// not at all) reads the table without its filter. The encoding of each
// filter belongs to the policy (filters are self-describing); the table
// records the policy's name in the metaindex key and in the properties. A
// reader that does not know the name reads the table without its filter.
//
// # Range-deletion block
//
// The table's range tombstones, fragmented (see internal/rangedel): any
// two cover the same span or disjoint ones. One entry per fragment and
// sequence number, in order of start key, then sequence number
// descending; restart points every 16 entries. The key is the encoded
// internal key of the span's start with kind RANGEDEL (2); the value is
// the span's end user key, exclusive:
//
//	entry key:    +------------------+--------------------------------------+
//	              | start (n B)      | trailer: seqnum<<8 | 2 (8 B LE)       |
//	              +------------------+--------------------------------------+
//	entry value:  +------------------+
//	              | end (m B)        |
//	              +------------------+
//
//	[b, d)#9  [b, d)#4  [d, f)#7   is stored as   b#9,RANGEDEL -> d
//	                                              b#4,RANGEDEL -> d
//	                                              d#7,RANGEDEL -> f
//
// Its count is the range-deletions property. The tombstones' sequence
// numbers count in the properties' seqnum bounds; their spans do not
// count in key.smallest and key.largest, which bound the entries (a
// table's bounds in the store's manifest cover both: the last span's end
// enters as the exclusive sentinel end#max,RANGEDEL).
//
// # Properties block
//
// A block whose entries map property names, in byte order, to values:
// uvarint numbers (entries, deletions, range-deletions, data.blocks,
// data.size, index.size, filter.size, raw.key.size, raw.value.size,
// seqnum.smallest, seqnum.largest), encoded internal keys (key.smallest,
// key.largest) and strings (comparer, filter.policy, and filter.split,
// stored only when the filters hold prefixes: the comparer's SplitName).
// Readers skip names they do not know, and a table without filter.split
// holds whole keys.
//
// # Footer
//
//	offset  size
//	     0    40  metaindex handle, index handle (uvarints), zero padding
//	    40     4  format version, uint32 (2; 1 is still read)
//	    44     4  checksum, uint32: low 32 bits of xxhash64 over bytes 0..43
//	    48     8  magic, uint64 0x31766b6d6f6f6c62: the bytes "bloomkv1"
//
// # Damage
//
// Every block and the footer are checksummed, and every decoder checks
// bounds, so a damaged or truncated table yields an error wrapping
// [ErrCorruption] that names the file and offset — never a panic, a
// wrong value, or a present key reported absent. A footer that is intact
// but names a format version above FormatVersion is no damage: the table
// was written by a newer bloomkv, and NewReader's error wraps
// [ErrNewerFormat] instead.
//
// A filter carries no checksum of its own: the filter block's trailer,
// the checksum every block has, covers all the table's filters and their
// lengths at once. NewReader reads the filter block whole and verifies
// that checksum before any lookup consults a filter, so a filter bit
// flipped to 0, which would make the filter answer "absent" for a present
// key, fails NewReader with corruption naming the filter block's offset
// (TestBitFlip_FilterBitCleared). A reader that does not use the filters
// (an unknown policy, another Split) does not read the block, and its
// damage does not matter to it.
package sstable
