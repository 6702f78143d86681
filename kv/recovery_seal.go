package kv

import (
	"encoding/binary"
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
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

// The mark of a WAL switch. A seal read where a crash could also have cut
// the WAL looks the same as a seal lost with the records before it: the
// last WAL replayed ends at a torn tail either way. So a WAL that
// follows a sealed one starts with a mark, written only once the seal
// before it is synced: a copy of that seal (an empty batch holding the
// last sequence number assigned). Recovery then knows that the WAL
// replayed before one that starts with a mark ended in that seal, though
// every WAL after it is empty: a WAL before it cut short or emptied, or
// missing between two, is corruption, not a crash's torn tail. A WAL
// that starts without a mark, as the first of a store, one made at Open
// or one created by an older version, makes no such promise.

// markSwitch writes the mark of a WAL switch into newLog, the WAL that
// takes over from the pipeline's, which is sealed and synced. Called
// under the pipeline's mu, before newLog takes any write.
func (p *commitPipeline) markSwitch(d *DB, newLog *walWriter) error {
	mark := sealRecord(p.logSeq)
	var mapped mappedRecord // a record appended alone is never left to encode
	end, copied, err := newLog.append(mark[:], false, false, &d.metrics, &mapped)
	if err == nil && !copied {
		err = newLog.sink.wait(end, false) // in the file, as a write is once acknowledged
	}
	if err != nil {
		return fmt.Errorf("kv: marking WAL %s: %w", newLog.name, err)
	}
	return nil
}

// closeSealed closes the WAL of the pipeline (walWriter.closeSealed),
// sealing it unless it already ends in a seal (or holds no record), and
// reports whether it ends in one. The caller holds the pipeline's mu.
//
// The seal is written only once every record before it is synced, and
// synced in turn: the pages of a file not yet synced may reach the disk
// in any order, and a crash of the machine during one sync of records
// and seal together could leave the seal on the disk after pages never
// written, which recovery must take for corruption (see the package
// documentation). A seal on the disk thus vouches for every record
// before it. Where the records are synced already (Sync writes), the
// first sync returns at once.
func (p *commitPipeline) closeSealed() (sealed bool, err error) {
	var seal []byte
	if !p.log.closed.Load() && p.err.get() == nil && p.log.w.Size() != p.sealedAt {
		s := sealRecord(p.logSeq)
		seal = s[:]
	}
	if err := p.log.closeSealed(seal); err != nil {
		return false, err
	}
	if seal != nil {
		p.sealedAt = p.log.w.Size()
	}
	return p.log.w.Size() > 0 && p.log.w.Size() == p.sealedAt, nil
}

// sealRecord returns a seal, or a mark, holding seq, the last sequence
// number assigned: an empty batch.
func sealRecord(seq base.SeqNum) [batchHeaderLen]byte {
	var seal [batchHeaderLen]byte
	binary.LittleEndian.PutUint64(seal[:8], uint64(seq))
	return seal
}

// sealSeqNum returns the sequence number a seal, or a mark, holds.
func sealSeqNum(seal []byte) base.SeqNum { return base.SeqNum(binary.LittleEndian.Uint64(seal[:8])) }

// isSeal reports whether the WAL record batch adds nothing: a seal, or
// an empty batch that serves as one.
func isSeal(batch []byte) bool {
	return len(batch) == batchHeaderLen && binary.LittleEndian.Uint32(batch[8:12]) == 0
}
