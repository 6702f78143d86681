package compaction

import (
	"bytes"
	"sort"

	"github.com/bloomkv/bloomkv/internal/base"
)

// modelEntry is one entry of a sorted model of a compaction's input or
// output.
type modelEntry struct {
	key   base.InternalKey
	value []byte
}

// sortModel sorts m in internal-key order.
func sortModel(m []modelEntry) {
	sort.SliceStable(m, func(i, j int) bool {
		return base.InternalCompare(bytes.Compare, m[i].key, m[j].key) < 0
	})
}
