package kv

import (
	"time"

	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/manifest"
	"github.com/bloomkv/bloomkv/internal/record"
)

// Recovery at Open follows the contract drawn under Recovery in the
// package documentation: the MANIFEST gives the Version, the log number
// and the last sequence number; the WALs from the log number on are
// replayed into one memtable, each batch above everything recovered
// before it; writes that fit stay in memory, backed by their WALs, the
// last of which takes new writes when it ends cleanly (LevelDB's
// reuse_logs); writes past Options.MemTableSize go to L0 tables, and every
// replayed WAL then becomes obsolete.

// recovered is what the WAL replay found.
type recovered struct {
	// mem holds the replayed writes not written to tables; its logs are
	// the WALs replayed. In a read-only DB, imm holds the memtables the
	// replay filled before it, oldest first: nothing is written to tables.
	mem *memTable
	imm []*memTable
	// edit adds the tables written at Open, if any.
	edit *manifest.VersionEdit
	// lastSeq is the last sequence number recovered, MANIFEST and WALs.
	lastSeq base.SeqNum
	// flushed is set once replayed writes went to tables: the rest must
	// follow, since the replayed WALs become obsolete.
	flushed bool
	// tail is where the replay of the last WAL stopped, and sealed
	// whether its last record is a seal (see sealLog).
	tail   walTail
	sealed bool
	// seal is the last record replayed when it is the seal of a WAL this
	// version wrote (recyclable), nil otherwise: the next batch must take
	// the sequence number after the seal's (see replayBatch).
	seal *sealMark
}

// sealMark is a seal replayed: where it is, and the last sequence number
// assigned when it was written.
type sealMark struct {
	at  recordPos
	seq base.SeqNum
}

// recover rebuilds the store's state at Open: the Version from the
// MANIFEST, then the writes of the WALs (see above). It then opens the WAL
// for new writes and records the state in a new MANIFEST.
func (d *DB) recover() error {
	vs := &d.mu.versions
	exists, err := d.storeExists()
	if err != nil {
		return err
	}
	if exists {
		if err := vs.load(); err != nil {
			return err
		}
	}
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return fmt.Errorf("kv: listing %s: %w", d.dirname, err)
	}
	if !exists {
		if err := d.checkNoStoreLeft(names); err != nil {
			return err
		}
	}
	if err := d.checkTablesPresent(names); err != nil {
		return err
	}
	for _, name := range names {
		if _, n, ok := base.ParseFilename(name); ok {
			if err := checkFileNum(name+": offset 0", "numbered", n); err != nil {
				return err
			}
			vs.markFileNumUsed(n)
		}
	}
	nums := walNums(names, vs.logNum)
	if err := d.checkLogNumWAL(nums); err != nil {
		return err
	}
	if err := d.checkClosedLogsPresent(nums); err != nil {
		return err
	}
	rec, err := d.replayWALs(nums)
	if err != nil {
		return err
	}
	if d.opts.ReadOnly {
		d.startReadOnly(rec)
		return nil
	}
	return d.startFresh(rec)
}

// checkLogNumWAL reports the WAL the MANIFEST's log number names missing
// from nums, the WALs found from it on. The log number is the first WAL of
// the oldest memtable not in tables, created (and its directory entry
// synced) before any MANIFEST names it, and retired only once the log
// number has passed it: it is there, whether or not it holds writes,
// unless something deleted it and the writes it held. Checked for the
// stores this version wrote (their WALs recyclable, see walFormat).
func (d *DB) checkLogNumWAL(nums []base.FileNum) error {
	vs := &d.mu.versions
	if vs.logNum == 0 || vs.walFormat(vs.logNum) != record.RecyclableFormat || (len(nums) > 0 && nums[0] == vs.logNum) {
		return nil
	}
	return base.CorruptionErrorf("kv: WAL %s, the first whose writes the MANIFEST says are not in tables, is missing",
		base.MakeFilename(base.FileTypeLog, vs.logNum))
}

// checkClosedLogsPresent reports a WAL that the last Close left live,
// sealed and synced (see manifest.VersionEdit.ClosedLogs), missing from
// nums, the WALs found from the MANIFEST's log number on: while the log
// number has not passed it, it holds writes that are in no table.
func (d *DB) checkClosedLogsPresent(nums []base.FileNum) error {
	vs := &d.mu.versions
	for _, c := range vs.closedLogs {
		if c.Num >= vs.logNum && !slices.Contains(nums, c.Num) {
			return base.CorruptionErrorf("kv: WAL %s, which Close sealed and synced with %d bytes of records, is missing",
				base.MakeFilename(base.FileTypeLog, c.Num), c.Size)
		}
	}
	return nil
}

// checkClosedLogLength reports, as corruption, WAL num ending at tail
// before the length the last Close recorded for it, if it recorded one:
// the WAL lost records synced whole, where a crash in mid-append would
// have left a torn tail. Only the seal may be lost, which adds nothing:
// the records end where the seal began.
func (d *DB) checkClosedLogLength(num base.FileNum, tail walTail) error {
	i := slices.IndexFunc(d.mu.versions.closedLogs, func(c manifest.ClosedLog) bool { return c.Num == num })
	if i < 0 {
		return nil
	}
	c := d.mu.versions.closedLogs[i]
	if tail.end >= c.Size {
		return nil
	}
	var w *record.Writer
	if tail.recyclable || d.mu.versions.walFormat(num) == record.RecyclableFormat {
		w = record.NewRecyclableWriterAt(io.Discard, tail.end, uint32(num))
	} else {
		w = record.NewWriterAt(io.Discard, tail.end)
	}
	if _, err := w.WriteRecord(make([]byte, batchHeaderLen)); err == nil && w.Size() == c.Size {
		return nil // the seal alone is lost
	}
	return base.CorruptionErrorf("kv: %s: the WAL's records end here, but Close sealed and synced it with %d bytes of records: it was cut short or damaged",
		*walPos(num, tail.end), c.Size)
}

// checkNoStoreLeft, for a directory without CURRENT, reports the files of
// a store whose CURRENT is lost that opening it as a new store would
// drop: a table (deleted as obsolete), or a MANIFEST that records tables
// (forgotten). Its WALs alone do not count: a new store replays every WAL
// it finds, and loses none of their writes. A store whose first Open
// crashed before writing CURRENT leaves neither (its MANIFEST records an
// empty store), and opens as new.
func (d *DB) checkNoStoreLeft(names []string) error {
	for _, name := range names {
		typ, _, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		holds := typ == base.FileTypeTable
		if typ == base.FileTypeManifest {
			var err error
			if holds, err = d.manifestRecordsTables(name); err != nil {
				return err
			}
		}
		if holds {
			return base.CorruptionErrorf("kv: %s has no CURRENT, but %s holds a store's tables: its CURRENT is lost (opened as a new store, it would start without them and delete them)",
				d.dirname, name)
		}
	}
	return nil
}

// manifestRecordsTables reports whether MANIFEST name records a table, or
// is damaged (and might).
func (d *DB) manifestRecordsTables(name string) (bool, error) {
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return false, fmt.Errorf("kv: opening %s: %w", name, err)
	}
	defer f.Close()
	r := record.NewReader(f, name)
	for {
		rec, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			return false, nil
		case errors.Is(err, base.ErrCorruption):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("kv: reading %s: %w", name, err)
		}
		e := &manifest.VersionEdit{}
		if e.Decode(rec) != nil || len(e.NewFiles) > 0 {
			return true, nil
		}
	}
}

// checkTablesPresent reports a table of the current Version whose file is
// missing from the directory listing.
func (d *DB) checkTablesPresent(names []string) error {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	for level, files := range d.mu.versions.current.Levels {
		for _, f := range files {
			if name := base.MakeFilename(base.FileTypeTable, f.FileNum); !present[name] {
				return base.CorruptionErrorf("kv: table %s of L%d, named by the MANIFEST, is missing", name, level)
			}
		}
	}
	return nil
}

// replayWALs applies the batches of the given WALs, in order, to one
// memtable, writing it out as L0 tables whenever it fills up.
func (d *DB) replayWALs(nums []base.FileNum) (*recovered, error) {
	rec := &recovered{
		mem:     newMemTable(d.cmp, 0),
		edit:    &manifest.VersionEdit{ComparerName: d.cmp.Name},
		lastSeq: d.mu.versions.lastSeq,
	}
	// unwritten is the WAL whose replay stopped at pages never written,
	// with records after them, if one did (see below); unsealed is a WAL
	// replayed that holds records and does not end in a seal, if one
	// does, and unsealedNum its number.
	var unwritten, unsealed *recordPos
	var unsealedNum base.FileNum
	var prev *replayedWAL // the WAL replayed before, if any
	for _, num := range nums {
		rec.sealed = false
		recyclable := d.mu.versions.walFormat(num) == record.RecyclableFormat
		cur := &replayedWAL{num: num, recyclable: recyclable}
		// Listed before its replay, so that a flush the replay makes
		// (see replayBatch) names it.
		rec.mem.logs = append(rec.mem.logs, memLog{num: num})
		tail, err := d.replayWAL(num, func(batch []byte, where recordPos) error {
			if unwritten != nil {
				return base.CorruptionErrorf("kv: %s: a record after %s, where pages were never written: that WAL was synced before this one was written, so its damage is not a crash's",
					where, *unwritten)
			}
			if unsealed != nil {
				return base.CorruptionErrorf("kv: %s: a record after the end of %s, which lacks its seal: a WAL is sealed and synced before the next one is written, so that one was cut short or damaged",
					where, *unsealed)
			}
			first := !cur.records
			cur.records = true
			rec.sealed = isSeal(batch)
			if rec.sealed {
				cur.sealSeq = sealSeqNum(batch)
			}
			if first && rec.sealed && recyclable {
				// The mark of a switch (see markSwitch): it adds
				// nothing, and the batch after it follows the seal of
				// the WAL before, if that one is replayed.
				return checkSwitchMark(cur.sealSeq, where, prev)
			}
			return d.replayBatch(rec, batch, where, recyclable)
		})
		if err != nil {
			return nil, err
		}
		prev = cur
		if err := d.checkClosedLogLength(num, tail); err != nil {
			return nil, err
		}
		if logs := rec.mem.logs; len(logs) > 0 && logs[len(logs)-1].num == num {
			// Its records' length, for Close to record while the WAL
			// stays live (startFresh clears it for the WAL it continues).
			logs[len(logs)-1].size = tail.end
		}
		rec.tail = tail
		// A WAL this version wrote (recyclable, see walFormat) that holds
		// records is sealed before the next WAL takes any, unless it was
		// the last at a crash; then Open either continues it, or makes it
		// obsolete (see below).
		if cur.records && !rec.sealed && recyclable {
			unsealed = walPos(num, tail.end)
			unsealedNum = num
		}
		if tail.unwritten {
			// The WAL being written when the machine crashed: its pages
			// not yet synced reached the disk in any order, and some
			// never did. The records after such a page were never synced,
			// so never acknowledged as durable: the store goes on without
			// them, as from a torn tail. The WALs replayed then become
			// obsolete (see flushRecovered), so that no later recovery
			// reads this one before a WAL written after it.
			unwritten = walPos(num, tail.end)
			rec.flushed = true
			d.logf("kv: %s: pages never written by the file system (a crash of the machine); the records after them, from offset %d on, were never synced and are dropped",
				*unwritten, tail.resume)
		}
	}
	if unsealed != nil && (unsealedNum != nums[len(nums)-1] || !rec.tail.clean) {
		// The unsealed WAL (followed by empty ones only, or none) is not
		// the one new writes continue (see openLogForRecovered): the
		// last, when it ends cleanly. A crash left it so: in mid-append,
		// or in a switch to a new WAL before its seal was synced. Its
		// writes go to tables, so that no WAL written after it finds it
		// live, and unsealed, before it.
		rec.flushed = true
	}
	if rec.flushed && !d.opts.ReadOnly {
		if err := d.flushRecovered(rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// replayedWAL is what the replay found of one WAL: whether it holds
// records, and the sequence number of its last seal; recyclable says
// whether it is one this version wrote (see walFormat).
type replayedWAL struct {
	num        base.FileNum
	recyclable bool
	records    bool
	sealSeq    base.SeqNum
}

// checkSwitchMark checks the mark of a WAL switch at where, the first
// record of its WAL, holding seq, against prev, the WAL replayed before
// it, if any: the mark was written once a WAL ending in a seal that holds
// seq was synced (see markSwitch). So prev without records was cut
// short or damaged, and prev ending in another seal is followed by a
// missing WAL, the one sealed there. (prev holding records, but not
// ending in a seal, is reported as the mark is read, as any record after
// it is: see replayWALs.) With no WAL replayed before, the
// sealed one is in tables, or missing where the MANIFEST's log number
// names it (see checkLogNumWAL). A prev that this version did not write,
// as the MANIFEST tells, vouches for nothing: the WAL after it was not
// known to be this version's either when the store last opened, and
// then read without its mark's promise.
func checkSwitchMark(seq base.SeqNum, where recordPos, prev *replayedWAL) error {
	switch {
	case prev == nil || !prev.recyclable:
		return nil
	case !prev.records:
		return base.CorruptionErrorf("kv: %s: a WAL started once the one before it was sealed and synced, but %s holds no record: it was cut short or damaged",
			where, base.MakeFilename(base.FileTypeLog, prev.num))
	case prev.sealSeq != seq:
		return base.CorruptionErrorf("kv: %s: a WAL started once the one before it was sealed and synced with seqnum %d the last, but %s was sealed at seqnum %d: the WAL between them is missing",
			where, seq, base.MakeFilename(base.FileTypeLog, prev.num), prev.sealSeq)
	}
	return nil
}

// replayBatch applies one batch read from a WAL at where (file and offset)
// to rec.mem, after checking it comes after everything recovered so far,
// and, after a seal, right after it. recyclable says whether the WAL is
// one this version wrote.
//
// A seal holds the last sequence number assigned when it was written,
// and the batch after it, in the same WAL or the next one that holds
// any, takes the one after: nothing assigns a sequence number between a
// WAL's seal and its next record, or the first of the next WAL, but a
// write whose record goes there. (An ingestion does, but only once every
// memtable is flushed, so its WALs are not replayed; a reopen restarts
// the numbers after the last one replayed.) So a batch that skips
// numbers after a seal follows a WAL that went missing between the two,
// or a WAL that came from elsewhere: corruption, where the replay would
// otherwise drop those writes without a word.
func (d *DB) replayBatch(rec *recovered, batch []byte, where recordPos, recyclable bool) error {
	r, err := newBatchReader(batch)
	if err != nil {
		return base.CorruptionErrorf("kv: %s: %w", where, err)
	}
	if r.Count() > 0 && r.SeqNum() <= rec.lastSeq {
		return base.CorruptionErrorf("kv: %s: batch seqnum %d is not above %d, the last already recovered (a repeated or overlapping WAL)",
			where, r.SeqNum(), rec.lastSeq)
	}
	if s := rec.seal; s != nil && r.Count() > 0 && r.SeqNum() != s.seq+1 {
		return base.CorruptionErrorf("kv: %s: batch seqnum %d follows the seal at %s, written when seqnum %d was the last: the writes between them are missing (a WAL deleted, or one from elsewhere)",
			where, r.SeqNum(), s.at, s.seq)
	}
	rec.seal = nil
	if r.Count() == 0 && recyclable {
		rec.seal = &sealMark{at: where, seq: r.SeqNum()}
	}
	if err := rec.mem.apply(batch); err != nil {
		return base.CorruptionErrorf("kv: %s: %w", where, err)
	}
	if r.Count() > 0 {
		rec.lastSeq = rec.mem.lastSeq
	}
	if rec.mem.Size() >= d.opts.MemTableSize {
		if d.opts.ReadOnly {
			// Nothing is written: the replay goes on into a new
			// memtable, the full one kept in memory.
			rec.imm = append(rec.imm, rec.mem)
			rec.mem = newMemTable(d.cmp, 0)
			return nil
		}
		rec.flushed = true
		return d.flushRecovered(rec)
	}
	return nil
}

// flushRecovered writes rec.mem out as L0 tables added to rec.edit and
// starts an empty memtable. It is a flush like any other to the
// listener (FlushBegin, FlushEnd) and to Metrics, which count the tables
// it wrote: they are bytes this DB put on the disk.
func (d *DB) flushRecovered(rec *recovered) (err error) {
	if !rec.mem.empty() {
		inputBytes := rec.mem.batchBytes
		job, start := d.flushBegin(inputBytes), time.Now()
		var files []*manifest.FileMetadata
		defer func() { d.flushEnd(job, inputBytes, files, start, err) }()
		files, err = d.writeL0([]*memTable{rec.mem}, nil, job, nil)
		if err != nil {
			return err
		}
		for _, f := range files {
			rec.edit.NewFiles = append(rec.edit.NewFiles, manifest.NewFileEntry{Level: 0, Meta: f})
		}
		d.countFlush(inputBytes, files)
	}
	rec.mem = newMemTable(d.cmp, 0)
	rec.edit.LastSeqNum = rec.lastSeq
	return nil
}

// startReadOnly installs the replayed memtables in a read-only DB, which
// keeps them until Close: it opens no WAL and writes no MANIFEST.
func (d *DB) startReadOnly(rec *recovered) {
	d.commit.logSeq = rec.lastSeq
	d.visibleSeq.Store(uint64(rec.lastSeq))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.mem, d.mu.imm = rec.mem, rec.imm
}

// startFresh opens the WAL for new writes, installs the recovered memtable
// as the mutable one, and records the recovered state in a new MANIFEST,
// which CURRENT then names. The MANIFEST's log number is the oldest WAL
// the memtable still needs.
func (d *DB) startFresh(rec *recovered) error {
	mem := rec.mem
	// Memtables start small again (see takeMemSizeLocked); one that holds
	// replayed writes, up to Options.MemTableSize, keeps that limit.
	d.mu.Lock()
	d.mu.nextMemSize = min(max(initialMemTableSize, d.opts.MemTableSize/16), d.opts.MemTableSize)
	if d.opts.private.fullSizeMemTables {
		d.mu.nextMemSize = d.opts.MemTableSize
	}
	if mem.limit = d.opts.MemTableSize; mem.empty() {
		mem.limit = d.takeMemSizeLocked(nil)
	}
	d.mu.Unlock()
	log, err := d.openLogForRecovered(rec)
	if err != nil {
		return err
	}
	if n := len(mem.logs); n > 0 && mem.logs[n-1].num == log.num {
		mem.logs[n-1].size = 0 // continued: it takes writes again
	} else {
		mem.logs = append(mem.logs, memLog{num: log.num})
	}
	d.commit.log = log
	d.commit.logSeq = rec.lastSeq
	d.commit.sealedAt = -1
	if log.w.Size() == 0 || rec.sealed {
		d.commit.sealedAt = log.w.Size()
	}
	d.visibleSeq.Store(uint64(rec.lastSeq))
	rec.edit.LogNum = mem.logNum()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.mem = mem
	return d.mu.versions.logAndApply(rec.edit)
}

// openLogForRecovered returns the WAL new writes go to: the last replayed
// one, continued, when the recovered memtable keeps it and it ends
// cleanly; a new one otherwise. WALs from the one it returns on may be
// recycled once flushed; older ones were perhaps written in the legacy
// format, and are deleted. rec.edit records the first WAL known to be
// recyclable, which the MANIFEST keeps from then on (a MANIFEST that
// says so already wins: see versionSet.walFormat).
func (d *DB) openLogForRecovered(rec *recovered) (*walWriter, error) {
	if logs := rec.mem.logs; len(logs) > 0 && rec.tail.clean {
		num := logs[len(logs)-1].num
		d.commit.recycler.start(num+1, d.opts.MemTableStopWritesThreshold)
		if rec.tail.recyclable || rec.tail.end == 0 {
			rec.edit.RecyclableLogNum = num
		} else {
			rec.edit.RecyclableLogNum = num + 1
		}
		return d.reopenWAL(num, rec.tail, rec.mem.limit)
	}
	d.mu.Lock()
	num := d.mu.versions.nextFileNum()
	d.mu.Unlock()
	d.commit.recycler.start(num, d.opts.MemTableStopWritesThreshold)
	rec.edit.RecyclableLogNum = num
	return d.createWAL(num, rec.mem.limit)
}
