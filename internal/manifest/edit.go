package manifest

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bloomkv/bloomkv/internal/base"
)

// The tags that open each field of an encoded VersionEdit. Their values are
// stored in MANIFEST files and must never change.
const (
	tagComparer    = 1
	tagLogNum      = 2
	tagNextFileNum = 3
	tagLastSeqNum  = 4
	tagDeletedFile = 5
	tagNewFile     = 6
	tagWALFormat   = 7
	// tagIngestedFile is tagNewFile's payload followed by the table's
	// global sequence number (FileMetadata.GlobalSeqNum).
	tagIngestedFile = 8
	tagClosedLog    = 9
)

// VersionEdit is the difference between two Versions, plus the counters the
// store must recover with them. A MANIFEST file is a log of encoded edits:
// replaying them in order over an empty Version rebuilds the current one.
//
// Zero scalar fields mean "unchanged" and are not encoded.
type VersionEdit struct {
	// ComparerName names the ordering of the store's keys (base.Comparer.Name).
	ComparerName string
	// LogNum is the oldest WAL still needed: WALs numbered below it are fully
	// flushed to tables.
	LogNum base.FileNum
	// NextFileNum is the next unused file number.
	NextFileNum base.FileNum
	// LastSeqNum is the last sequence number the store's tables may hold:
	// no table holds a write above it, and the WALs from LogNum on hold
	// only writes above it (recovery refuses a WAL batch at or below it).
	LastSeqNum base.SeqNum
	// DeletedFiles holds the tables the edit removes.
	DeletedFiles map[DeletedFileEntry]bool
	// NewFiles holds the tables the edit adds.
	NewFiles []NewFileEntry
	// RecyclableLogNum is the first WAL number from which every WAL of
	// the store is written in recyclable chunks (see internal/record), so
	// that recovery reads them as such and no damaged byte can make one
	// read as legacy. Zero means the MANIFEST does not say: a store
	// written before the field existed, whose WALs' format is detected.
	RecyclableLogNum base.FileNum
	// ClosedLogs are the WALs that the last Close left holding writes in
	// no table, each sealed and synced, with its length then, ascending
	// by number; an edit without any records none, and one with some
	// replaces those recorded before. Recovery refuses such a WAL
	// missing, or ending before its length: the store was closed, so the
	// WAL lost synced records, where a crash would have left a torn tail.
	ClosedLogs []ClosedLog
}

// ClosedLog is a WAL closed whole (see VersionEdit.ClosedLogs): Size bytes
// of records, its seal the last.
type ClosedLog struct {
	// Num is the WAL's file number; never zero in an encoded edit.
	Num base.FileNum
	// Size is the length of the WAL's records, its seal included.
	Size int64
}

// DeletedFileEntry names a table removed by a VersionEdit.
type DeletedFileEntry struct {
	Level   int
	FileNum base.FileNum
}

// NewFileEntry is a table added by a VersionEdit at Level.
type NewFileEntry struct {
	Level int
	Meta  *FileMetadata
}

// Encode returns the edit's encoding (see the package documentation).
// Deleted files are written in (level, file number) order, so equal edits
// encode to equal bytes.
func (e *VersionEdit) Encode() []byte {
	var buf []byte
	if e.ComparerName != "" {
		buf = binary.AppendUvarint(buf, tagComparer)
		buf = appendBytes(buf, []byte(e.ComparerName))
	}
	buf = appendTaggedUvarint(buf, tagLogNum, uint64(e.LogNum))
	buf = appendTaggedUvarint(buf, tagNextFileNum, uint64(e.NextFileNum))
	buf = appendTaggedUvarint(buf, tagLastSeqNum, uint64(e.LastSeqNum))
	buf = appendTaggedUvarint(buf, tagWALFormat, uint64(e.RecyclableLogNum))
	for _, c := range e.ClosedLogs {
		buf = binary.AppendUvarint(buf, tagClosedLog)
		buf = binary.AppendUvarint(buf, uint64(c.Num))
		buf = binary.AppendUvarint(buf, uint64(c.Size))
	}
	for _, d := range e.sortedDeletions() {
		buf = binary.AppendUvarint(buf, tagDeletedFile)
		buf = binary.AppendUvarint(buf, uint64(d.Level))
		buf = binary.AppendUvarint(buf, uint64(d.FileNum))
	}
	for _, nf := range e.NewFiles {
		buf = appendNewFile(buf, nf)
	}
	return buf
}

func (e *VersionEdit) sortedDeletions() []DeletedFileEntry {
	out := make([]DeletedFileEntry, 0, len(e.DeletedFiles))
	for d := range e.DeletedFiles {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DeletedFileEntry) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.FileNum, b.FileNum))
	})
	return out
}

func appendNewFile(buf []byte, nf NewFileEntry) []byte {
	m := nf.Meta
	tag := uint64(tagNewFile)
	if m.GlobalSeqNum != 0 {
		tag = tagIngestedFile
	}
	buf = binary.AppendUvarint(buf, tag)
	buf = binary.AppendUvarint(buf, uint64(nf.Level))
	buf = binary.AppendUvarint(buf, uint64(m.FileNum))
	buf = binary.AppendUvarint(buf, m.Size)
	buf = appendBytes(buf, m.Smallest.AppendEncoded(nil))
	buf = appendBytes(buf, m.Largest.AppendEncoded(nil))
	buf = binary.AppendUvarint(buf, uint64(m.SmallestSeqNum))
	buf = binary.AppendUvarint(buf, uint64(m.LargestSeqNum))
	buf = binary.AppendUvarint(buf, m.NumEntries)
	buf = binary.AppendUvarint(buf, m.FilterBytes)
	if m.GlobalSeqNum != 0 {
		buf = binary.AppendUvarint(buf, uint64(m.GlobalSeqNum))
	}
	return buf
}

func appendTaggedUvarint(buf []byte, tag, v uint64) []byte {
	if v == 0 {
		return buf
	}
	buf = binary.AppendUvarint(buf, tag)
	return binary.AppendUvarint(buf, v)
}

func appendBytes(buf, p []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	return append(buf, p...)
}

// Decode replaces the edit's contents with the edit encoded in buf. The edit
// shares no memory with buf. Damaged or unknown input gives an error wrapping
// base.ErrCorruption that names the byte offset within buf; the caller adds
// the file's name.
func (e *VersionEdit) Decode(buf []byte) error {
	*e = VersionEdit{}
	d := editDecoder{buf: buf}
	for d.err == nil && d.off < len(d.buf) {
		tagOff := d.off
		switch tag := d.uvarint("tag"); {
		case d.err != nil:
		case tag == tagComparer:
			e.ComparerName = string(d.bytes("comparer name"))
		case tag == tagLogNum:
			e.LogNum = base.FileNum(d.uvarint("log number"))
		case tag == tagNextFileNum:
			e.NextFileNum = base.FileNum(d.uvarint("next file number"))
		case tag == tagLastSeqNum:
			e.LastSeqNum = d.seqNum("last sequence number")
		case tag == tagDeletedFile:
			del := DeletedFileEntry{Level: d.level(), FileNum: base.FileNum(d.uvarint("file number"))}
			if e.DeletedFiles == nil {
				e.DeletedFiles = make(map[DeletedFileEntry]bool)
			}
			e.DeletedFiles[del] = true
		case tag == tagNewFile:
			e.NewFiles = append(e.NewFiles, d.newFile())
		case tag == tagWALFormat:
			e.RecyclableLogNum = base.FileNum(d.uvarint("recyclable log number"))
		case tag == tagClosedLog:
			e.ClosedLogs = append(e.ClosedLogs, d.closedLog())
		case tag == tagIngestedFile:
			nf := d.newFile()
			nf.Meta.GlobalSeqNum = d.seqNum("global sequence number")
			e.NewFiles = append(e.NewFiles, nf)
		default:
			d.fail(tagOff, fmt.Sprintf("unknown tag %d", tag))
		}
	}
	if d.err != nil {
		*e = VersionEdit{}
	}
	return d.err
}

// editDecoder reads the fields of an encoded edit, remembering the first
// error; once it has failed every read returns a zero value.
type editDecoder struct {
	buf []byte
	off int
	err error
}

func (d *editDecoder) fail(off int, what string) {
	if d.err == nil {
		d.err = base.CorruptionErrorf("manifest: version edit: %s at byte %d", what, off)
	}
}

func (d *editDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.fail(d.off, "bad or truncated "+what)
		return 0
	}
	d.off += n
	return v
}

func (d *editDecoder) bytes(what string) []byte {
	start := d.off
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.off) {
		d.fail(start, what+" longer than the edit")
		return nil
	}
	p := slices.Clone(d.buf[d.off : d.off+int(n)])
	d.off += int(n)
	return p
}

func (d *editDecoder) level() int {
	off := d.off
	l := d.uvarint("level")
	if d.err == nil && l >= NumLevels {
		d.fail(off, fmt.Sprintf("level %d out of range", l))
	}
	return int(l)
}

func (d *editDecoder) seqNum(what string) base.SeqNum {
	off := d.off
	s := d.uvarint(what)
	if d.err == nil && s > uint64(base.SeqNumMax) {
		d.fail(off, what+" out of range")
	}
	return base.SeqNum(s)
}

// int64 reads a uvarint that must fit an int64: a length.
func (d *editDecoder) int64(what string) int64 {
	off := d.off
	v := d.uvarint(what)
	if d.err == nil && v > math.MaxInt64 {
		d.fail(off, what+" out of range")
	}
	return int64(v)
}

// closedLog reads tag 9's payload; its log number is never zero.
func (d *editDecoder) closedLog() ClosedLog {
	off := d.off
	c := ClosedLog{Num: base.FileNum(d.uvarint("closed log number"))}
	if d.err == nil && c.Num == 0 {
		d.fail(off, "closed log number 0")
	}
	c.Size = d.int64("closed log size")
	return c
}

func (d *editDecoder) internalKey(what string) base.InternalKey {
	off := d.off
	p := d.bytes(what)
	if d.err != nil {
		return base.InternalKey{}
	}
	k, ok := base.DecodeInternalKey(p)
	if !ok {
		d.fail(off, "bad "+what)
	}
	return k
}

func (d *editDecoder) newFile() NewFileEntry {
	level := d.level()
	m := &FileMetadata{FileNum: base.FileNum(d.uvarint("file number"))}
	m.Size = d.uvarint("file size")
	m.Smallest = d.internalKey("smallest key")
	m.Largest = d.internalKey("largest key")
	m.SmallestSeqNum = d.seqNum("smallest sequence number")
	m.LargestSeqNum = d.seqNum("largest sequence number")
	m.NumEntries = d.uvarint("entry count")
	m.FilterBytes = d.uvarint("filter size")
	return NewFileEntry{Level: level, Meta: m}
}

// String formats the edit one field per line, for tests and tools:
//
//	comparer leveldb.BytewiseComparator
//	log-num 000004
//	del L1 000007
//	add L1 000012:[a#5,SET-k#3,DEL] size=812 seqs=3-5 entries=4 filter=20
//	add L6 000013:[m#9,SET-p#9,SET] size=512 seqs=9-9 entries=3 filter=0 global=9
func (e *VersionEdit) String() string {
	var sb strings.Builder
	if e.ComparerName != "" {
		fmt.Fprintf(&sb, "comparer %s\n", e.ComparerName)
	}
	if e.LogNum != 0 {
		fmt.Fprintf(&sb, "log-num %s\n", e.LogNum)
	}
	if e.NextFileNum != 0 {
		fmt.Fprintf(&sb, "next-file-num %s\n", e.NextFileNum)
	}
	if e.LastSeqNum != 0 {
		fmt.Fprintf(&sb, "last-seq-num %d\n", e.LastSeqNum)
	}
	if e.RecyclableLogNum != 0 {
		fmt.Fprintf(&sb, "recyclable-log-num %s\n", e.RecyclableLogNum)
	}
	for _, c := range e.ClosedLogs {
		fmt.Fprintf(&sb, "closed-log %s size=%d\n", c.Num, c.Size)
	}
	for _, d := range e.sortedDeletions() {
		fmt.Fprintf(&sb, "del L%d %s\n", d.Level, d.FileNum)
	}
	for _, nf := range e.NewFiles {
		m := nf.Meta
		fmt.Fprintf(&sb, "add L%d %s size=%d seqs=%d-%d entries=%d filter=%d",
			nf.Level, m, m.Size, m.SmallestSeqNum, m.LargestSeqNum, m.NumEntries, m.FilterBytes)
		if m.GlobalSeqNum != 0 {
			fmt.Fprintf(&sb, " global=%d", m.GlobalSeqNum)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
