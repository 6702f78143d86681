package kv

import (
	"fmt"

	"github.com/bloomkv/bloomkv/internal/base"
)

// checkSplit refuses a batch holding a point key that the Comparer's Split
// cuts outside the key (a length below 0 or past its end): such a key
// would fail the flush that meets it and stop every write after, so the
// write that brings it fails instead, and nothing of the batch is
// applied. Range deletions are not split: filters never hold their keys.
func (d *DB) checkSplit(b *Batch) error {
	if d.cmp.Split == nil {
		return nil
	}
	r, err := newBatchReader(b.data)
	if err != nil {
		return err
	}
	for {
		rec, _, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		if rec.Kind == base.KindRangeDelete {
			continue
		}
		if _, err := d.cmp.Prefix(rec.Key); err != nil {
			return fmt.Errorf("kv: writing %q: %w", rec.Key, err)
		}
	}
}
