package kv

import (
	"errors"

	"github.com/bloomkv/bloomkv/internal/base"
)

// ErrNotFound is returned by Get when the key has no visible value.
var ErrNotFound = errors.New("kv: not found")

// ErrClosed is returned by every method of a DB, Iterator, Snapshot or Batch
// application after the DB has been closed.
var ErrClosed = errors.New("kv: closed")

// ErrDBAlreadyExists is wrapped by the error of an Open with
// Options.ErrorIfExists of a directory that already holds a store.
var ErrDBAlreadyExists = errors.New("kv: store already exists")

// ErrDBDoesNotExist is wrapped by the error of an Open with
// Options.ErrorIfNotExists of a directory that holds no store (or does not
// exist).
var ErrDBDoesNotExist = errors.New("kv: store does not exist")

// ErrReadOnly is returned by the writes of a DB opened with
// Options.ReadOnly, and by its Flush, Compact and Ingest.
var ErrReadOnly = errors.New("kv: read-only")

// ErrCorruption marks errors caused by damaged or truncated files. It is the
// same value as the one every bloomkv package wraps, so errors.Is(err,
// kv.ErrCorruption) holds whichever layer found the damage.
var ErrCorruption = base.ErrCorruption

// ErrNewerFormat marks errors reading a file written in a format version
// newer than this build knows (a table's footer version): the file is
// sound, a newer bloomkv reads it. It is the same value as
// sstable.ErrNewerFormat.
var ErrNewerFormat = base.ErrNewerFormat

// ErrInvalidSplit is wrapped by the error of Open, of a write, of a flush
// or compaction, of Get or of a prefix seek that met an Options.Comparer
// whose Split broke its contract: a length outside its key, or a prefix
// that is not its own prefix. Open tries the Split on a few sample keys
// and on the bounds of the store's tables; a write (Set, Delete, Apply)
// tries it on each point key it brings, and fails whole, applying
// nothing; the other calls check each length they get. A flush or compaction that fails so stops writes, as
// any failed flush does, and Close reports it. It is the same value as
// sstable.ErrInvalidSplit.
var ErrInvalidSplit = base.ErrInvalidSplit

// The limits on what one write may carry. Larger keys, values or batches are
// refused with an error; nothing is written. They bound the writes of Set,
// Delete, DeleteRange and batches; a table that Ingest adds may hold
// larger entries, up to sstable's own bound of 1 GiB an entry, which the
// store then reads, compacts and keeps as it does any other.
const (
	// MaxKeySize is the largest key, in bytes, a write may carry.
	MaxKeySize = 64 << 10
	// MaxValueSize is the largest value, in bytes, a write may carry.
	MaxValueSize = 64 << 20
	// MaxBatchSize is the largest encoded batch, in bytes, the DB applies.
	MaxBatchSize = 256 << 20
)

// ErrKeyTooLarge, ErrValueTooLarge and ErrBatchTooLarge report writes over
// the limits above.
var (
	ErrKeyTooLarge   = errors.New("kv: key larger than MaxKeySize")
	ErrValueTooLarge = errors.New("kv: value larger than MaxValueSize")
	ErrBatchTooLarge = errors.New("kv: batch larger than MaxBatchSize")
)

// ErrLeaked is wrapped by the error of a DB.Close that found iterators or
// snapshots still open. The store is closed all the same; the error points
// at a caller that forgot to close them.
var ErrLeaked = errors.New("kv: iterators or snapshots left open at Close")

// ErrReversePrefixIteration is the error of Iterator.Prev in prefix mode
// (after SeekPrefixGE), as in Pebble: whether or not the iterator is
// Valid, so a prefix seek that found nothing makes Prev fail too. The
// iterator is then exhausted until the next absolute positioning call,
// which clears the error.
var ErrReversePrefixIteration = errors.New("kv: unsupported reverse prefix iteration")

// ErrInvalidPrefixSeek is wrapped by the error of an Iterator.SeekPrefixGE
// that cannot be served: the DB's Comparer has no Split, or the key lies
// outside the iterator's bounds with another prefix than theirs. The next
// absolute positioning call clears the error.
var ErrInvalidPrefixSeek = errors.New("kv: invalid prefix seek")
