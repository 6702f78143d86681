package manifest

import (
	"fmt"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Apply returns a new Version: v with the edits applied in order, as a
// Builder applies them. v itself is left untouched.
//
// Every table of the new version is Ref'd once on its behalf (release them
// with Release); the new version's own reference count starts at zero. L0
// comes out oldest first (by LargestSeqNum, then FileNum) and deeper levels
// sorted by smallest key.
//
// Apply fails, and Refs nothing, if an edit contradicts the tables before
// it or itself (see Builder.Accumulate), or if the result breaks
// CheckOrdering or the edits' counters (see Builder.Build).
func (v *Version) Apply(cmp base.Compare, edits ...*VersionEdit) (*Version, error) {
	b := NewBuilder(v, cmp)
	for _, e := range edits {
		if err := b.Accumulate(e); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// Builder applies edits to a Version one at a time, checking each against
// what came before it, so that a reader of a MANIFEST can name the edit
// that contradicts the others. It leaves its base Version untouched.
type Builder struct {
	base    *Version
	cmp     base.Compare
	files   map[base.FileNum]NewFileEntry
	touched [NumLevels]bool
	// nextFileNum and lastSeqNum are the largest NextFileNum and
	// LastSeqNum the accumulated edits carry (0: none yet).
	nextFileNum base.FileNum
	lastSeqNum  base.SeqNum
	// whole says the edits describe a whole store (RequireCounters).
	whole bool
}

// NewBuilder returns a Builder that starts from v.
func NewBuilder(v *Version, cmp base.Compare) *Builder {
	b := &Builder{base: v, cmp: cmp, files: make(map[base.FileNum]NewFileEntry)}
	for level, fs := range v.Levels {
		for _, f := range fs {
			b.files[f.FileNum] = NewFileEntry{Level: level, Meta: f}
		}
	}
	return b
}

// RequireCounters has Build take the edits for a whole store's, as a
// MANIFEST's replay reads them: a next file number or last sequence
// number that no edit set is 0 (an edit leaves a counter of 0 out of its
// encoding), which every table must then respect too. Without it, Build
// checks the tables only against counters some edit set, as Apply does
// for edits of a part of a store's history.
func (b *Builder) RequireCounters() { b.whole = true }

// Accumulate applies one edit: its deletions, then its additions, so an
// edit may move a table from one level to another. It fails, leaving the
// Builder unusable, when the edit
//
//   - deletes a table that is not at the named level, or adds one whose
//     number is already present;
//   - adds a table without metadata, outside the levels, whose smallest key
//     sorts after its largest, or whose smallest seqnum exceeds its largest,
//     or whose seqnums are not its global seqnum when it has one;
//   - adds a table numbered at or above the next file number, or names a
//     log number at or above it (once an edit has set one);
//   - adds a table holding seqnums above the last sequence number (once an
//     edit has set one).
//
// The edit's own NextFileNum and LastSeqNum count: they describe the state
// after the edit, its tables included.
func (b *Builder) Accumulate(e *VersionEdit) error {
	b.nextFileNum = max(b.nextFileNum, e.NextFileNum)
	b.lastSeqNum = max(b.lastSeqNum, e.LastSeqNum)
	if b.nextFileNum != 0 && e.LogNum >= b.nextFileNum {
		return fmt.Errorf("manifest: edit sets log number %s, not below the next file number %s", e.LogNum, b.nextFileNum)
	}
	for d := range e.DeletedFiles {
		if f, ok := b.files[d.FileNum]; !ok || f.Level != d.Level {
			return fmt.Errorf("manifest: edit deletes table %s from L%d, which does not hold it", d.FileNum, d.Level)
		}
		delete(b.files, d.FileNum)
		b.touched[d.Level] = true
	}
	for _, nf := range e.NewFiles {
		if err := b.checkNewFile(nf); err != nil {
			return err
		}
		b.files[nf.Meta.FileNum] = nf
		b.touched[nf.Level] = true
	}
	return nil
}

// checkNewFile reports why the table nf may not be added, if it may not.
func (b *Builder) checkNewFile(nf NewFileEntry) error {
	if nf.Meta == nil || nf.Level < 0 || nf.Level >= NumLevels {
		return fmt.Errorf("manifest: edit adds a table at L%d without metadata or outside the levels", nf.Level)
	}
	m := nf.Meta
	if f, ok := b.files[m.FileNum]; ok {
		return fmt.Errorf("manifest: edit adds table %s at L%d, already present at L%d", m.FileNum, nf.Level, f.Level)
	}
	switch {
	case base.InternalCompare(b.cmp, m.Smallest, m.Largest) > 0:
		return fmt.Errorf("manifest: edit adds table %s at L%d whose smallest key sorts after its largest", m, nf.Level)
	case m.SmallestSeqNum > m.LargestSeqNum:
		return fmt.Errorf("manifest: edit adds table %s with seqnums %d-%d, smallest above largest", m, m.SmallestSeqNum, m.LargestSeqNum)
	case m.GlobalSeqNum != 0 && (m.SmallestSeqNum != m.GlobalSeqNum || m.LargestSeqNum != m.GlobalSeqNum):
		return fmt.Errorf("manifest: edit adds table %s with global seqnum %d and seqnums %d-%d", m, m.GlobalSeqNum, m.SmallestSeqNum, m.LargestSeqNum)
	}
	return b.checkAgainstCounters(nf)
}

// Build returns the Version the accumulated edits describe, with its tables
// Ref'd as Apply says. It fails, and Refs nothing, if the result breaks
// CheckOrdering, or holds a table that the largest next file number or
// last sequence number of the edits contradicts (as Accumulate refuses
// one added after them).
func (b *Builder) Build() (*Version, error) {
	nv := &Version{}
	for level := range nv.Levels {
		if !b.touched[level] {
			nv.Levels[level] = slices.Clone(b.base.Levels[level])
		}
	}
	for _, nf := range b.files {
		if b.touched[nf.Level] {
			nv.Levels[nf.Level] = append(nv.Levels[nf.Level], nf.Meta)
		}
	}
	nv.sortLevels(b.cmp, b.touched)
	if err := nv.CheckOrdering(b.cmp); err != nil {
		return nil, err
	}
	if err := b.checkCounters(); err != nil {
		return nil, err
	}
	for _, fs := range nv.Levels {
		for _, f := range fs {
			f.Ref()
		}
	}
	return nv, nil
}

// checkCounters reports a table that the last counters of the accumulated
// edits contradict: Accumulate checks each table against the counters set
// by then, so a table added before an edit first set one escapes it. For
// a whole store's edits (RequireCounters), a counter none set is 0.
func (b *Builder) checkCounters() error {
	for _, nf := range b.files {
		if err := b.checkAgainstCounters(nf); err != nil {
			return err
		}
		m := nf.Meta
		switch {
		case !b.whole:
		case b.nextFileNum == 0:
			return fmt.Errorf("manifest: no edit sets the next file number, and table %s is named", m)
		case b.lastSeqNum == 0 && m.LargestSeqNum > 0:
			return fmt.Errorf("manifest: no edit sets the last seqnum, and table %s holds seqnum %d", m, m.LargestSeqNum)
		}
	}
	return nil
}

// checkAgainstCounters reports why the table nf contradicts the counters
// accumulated so far, if it does: numbered at or above the next file
// number, or holding a seqnum above the last one.
func (b *Builder) checkAgainstCounters(nf NewFileEntry) error {
	m := nf.Meta
	switch {
	case b.nextFileNum != 0 && m.FileNum >= b.nextFileNum:
		return fmt.Errorf("manifest: edit adds table %s, not below the next file number %s", m, b.nextFileNum)
	case b.lastSeqNum != 0 && m.LargestSeqNum > b.lastSeqNum:
		return fmt.Errorf("manifest: edit adds table %s holding seqnum %d, above the last seqnum %d", m, m.LargestSeqNum, b.lastSeqNum)
	}
	return nil
}

// sortLevels restores the order of the touched levels: L0 oldest first,
// deeper levels by smallest key.
func (v *Version) sortLevels(cmp base.Compare, touched [NumLevels]bool) {
	if touched[0] {
		slices.SortFunc(v.Levels[0], l0Compare)
	}
	for level := 1; level < NumLevels; level++ {
		if touched[level] {
			slices.SortFunc(v.Levels[level], func(a, b *FileMetadata) int {
				return base.InternalCompare(cmp, a.Smallest, b.Smallest)
			})
		}
	}
}
