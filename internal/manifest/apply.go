package manifest

import (
	"fmt"
	"slices"

	"github.com/bloomkv/bloomkv/internal/base"
)

// Apply returns a new Version: v with the edits applied in order. Within one
// edit the deletions come before the additions, so an edit may move a table
// from one level to another. v itself is left untouched.
//
// Every table of the new version is Ref'd once on its behalf (release them
// with Release); the new version's own reference count starts at zero. L0
// comes out oldest first (by LargestSeqNum, then FileNum) and deeper levels
// sorted by smallest key.
//
// Apply fails, and Refs nothing, if an edit deletes a table that is not at
// the named level, adds a table whose number is already present, or if the
// result breaks CheckOrdering.
func (v *Version) Apply(cmp base.Compare, edits ...*VersionEdit) (*Version, error) {
	files := make(map[base.FileNum]NewFileEntry)
	for level, fs := range v.Levels {
		for _, f := range fs {
			files[f.FileNum] = NewFileEntry{Level: level, Meta: f}
		}
	}
	var touched [NumLevels]bool
	for _, e := range edits {
		if err := applyEdit(files, &touched, e); err != nil {
			return nil, err
		}
	}

	nv := &Version{}
	for level := range nv.Levels {
		if !touched[level] {
			nv.Levels[level] = slices.Clone(v.Levels[level])
		}
	}
	for _, nf := range files {
		if touched[nf.Level] {
			nv.Levels[nf.Level] = append(nv.Levels[nf.Level], nf.Meta)
		}
	}
	nv.sortLevels(cmp, touched)
	if err := nv.CheckOrdering(cmp); err != nil {
		return nil, err
	}
	for _, fs := range nv.Levels {
		for _, f := range fs {
			f.Ref()
		}
	}
	return nv, nil
}

// applyEdit applies one edit's deletions, then its additions, to files (the
// tables by number) and marks the levels it changes.
func applyEdit(files map[base.FileNum]NewFileEntry, touched *[NumLevels]bool, e *VersionEdit) error {
	for d := range e.DeletedFiles {
		if f, ok := files[d.FileNum]; !ok || f.Level != d.Level {
			return fmt.Errorf("manifest: edit deletes table %s from L%d, which does not hold it", d.FileNum, d.Level)
		}
		delete(files, d.FileNum)
		touched[d.Level] = true
	}
	for _, nf := range e.NewFiles {
		if nf.Meta == nil || nf.Level < 0 || nf.Level >= NumLevels {
			return fmt.Errorf("manifest: edit adds a table at L%d without metadata or outside the levels", nf.Level)
		}
		if f, ok := files[nf.Meta.FileNum]; ok {
			return fmt.Errorf("manifest: edit adds table %s at L%d, already present at L%d", nf.Meta.FileNum, nf.Level, f.Level)
		}
		files[nf.Meta.FileNum] = nf
		touched[nf.Level] = true
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
