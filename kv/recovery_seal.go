package kv

import (
	"encoding/binary"
	"fmt"
)

// The seal of a WAL. Recovery takes a damaged last record with nothing
// valid after it for a torn tail (see Recovery in the package
// documentation): a crash in mid-write, never acknowledged. Damage to a
// last record that was synced looks the same, so without more a single
// flipped bit there would lose a synced batch silently. So a WAL that is
// done with, at Close or when the memtable rotates to a new WAL, ends with
// a seal: an empty batch (its header alone, count 0), synced with the
// rest. Every batch of a sealed WAL is then followed by a valid record,
// and damage to any of them is corruption; damage to the seal itself is
// a torn tail that loses nothing. An empty batch is a valid WAL record to
// any reader, this one's or an older one's: replaying it adds nothing.

// sealLog appends the seal to the WAL of the pipeline, unless it already
// ends in one (or holds no record), and notes that it does. The caller
// holds the pipeline's mu, and closes the WAL next, which writes out and
// syncs the seal.
func (p *commitPipeline) sealLog() error {
	if p.log == nil || p.log.closed.Load() || p.err.get() != nil || p.log.w.Size() == p.sealedAt {
		return nil
	}
	var seal [batchHeaderLen]byte
	binary.LittleEndian.PutUint64(seal[:8], uint64(p.logSeq))
	if _, err := p.log.w.WriteRecord(seal[:]); err != nil {
		return fmt.Errorf("kv: sealing WAL %s: %w", p.log.name, err)
	}
	p.sealedAt = p.log.w.Size()
	return nil
}

// isSeal reports whether the WAL record batch adds nothing: a seal, or
// an empty batch that serves as one.
func isSeal(batch []byte) bool {
	return len(batch) == batchHeaderLen && binary.LittleEndian.Uint32(batch[8:12]) == 0
}
