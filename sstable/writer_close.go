package sstable

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Metaindex names.
const (
	metaFilterPrefix = "filter."
	metaProperties   = "properties"
	metaRangeDel     = "rangedel"
)

// Close finishes the table (last data block, filter block, properties,
// range-deletion block, metaindex, index, footer), syncs and closes the
// file. The file is closed even when finishing fails. Metadata is
// available after a nil return.
func (w *Writer) Close() error {
	if w.closed {
		return errWriterClosed
	}
	w.closed = true
	err := w.finish()
	w.releaseBuffers()
	if err == nil {
		if err = w.f.Sync(); err != nil {
			err = fmt.Errorf("sstable: sync: %w", err)
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("sstable: close: %w", cerr)
	}
	w.f = nil
	return err
}

// finish writes everything after the last entry.
func (w *Writer) finish() error {
	if w.err != nil {
		return w.err
	}
	if !w.data.empty() {
		if err := w.flushDataBlock(); err != nil {
			return err
		}
	}
	if w.pending {
		w.addIndexEntry(nil, nil)
	}
	var meta blockWriter
	meta.restartInterval = 1
	if w.filter != nil {
		h, err := w.writeBlock(w.filter.finish())
		if err != nil {
			return err
		}
		w.props.FilterSize = h.Length + blockTrailerLen
		meta.add([]byte(metaFilterPrefix+w.props.FilterPolicyName), appendHandle(nil, h))
	}
	// The index is written last but its size belongs in the properties.
	index, indexType := w.compress(&w.indexOut, w.index.finish())
	w.props.IndexSize = uint64(len(index)) + blockTrailerLen
	w.props.LargestKey = w.prevKey.AppendEncoded(nil)
	if w.props.NumEntries == 0 {
		w.props.LargestKey = nil
	}
	var pb blockWriter
	pb.restartInterval = DefaultBlockRestartInterval
	w.props.encode(&pb)
	h, err := w.writeBlock(pb.finish())
	if err != nil {
		return err
	}
	meta.add([]byte(metaProperties), appendHandle(nil, h))
	if err := w.writeRangeDels(&meta); err != nil {
		return err
	}
	var ft footer
	if ft.metaindex, err = w.writeBlock(meta.finish()); err != nil {
		return err
	}
	if ft.index, err = w.writeStored(index, indexType); err != nil {
		return err
	}
	ft.version = FormatVersion
	if err := w.write(ft.encode()); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		w.err = fmt.Errorf("sstable: write: %w", err)
		return w.err
	}
	w.setMetadata()
	return nil
}

// setMetadata fills in what Metadata returns.
func (w *Writer) setMetadata() {
	m := &w.meta
	m.Size = w.offset
	m.Properties = w.props
	m.SmallestSeqNum, m.LargestSeqNum = w.props.SmallestSeqNum, w.props.LargestSeqNum
	if w.props.NumEntries > 0 || len(w.rangeDels) > 0 {
		smallest, largest := tableBounds(w.cmp.Compare, &w.props, w.rangeDels)
		m.Smallest, m.Largest = smallest.Clone(), largest.Clone()
	}
}

// releaseBuffers hands the Writer's buffers to the next Writer; nothing
// of the closed Writer may point into them.
func (w *Writer) releaseBuffers() {
	if w.filter != nil {
		w.filters, w.lengths = w.filter.release()
	}
	w.prevKey = base.InternalKey{}
	putWriterBuffers(w.writerBuffers)
	w.writerBuffers = nil
}

// Metadata describes the table written. It is meaningful only after Close
// returned nil.
func (w *Writer) Metadata() WriterMetadata { return w.meta }
