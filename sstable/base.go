package sstable

import "github.com/bloomkv/bloomkv/internal/base"

// Comparer orders user keys and names the ordering, which every table
// stores. It is the same type as the comparer of every bloomkv package.
type Comparer = base.Comparer

// DefaultComparer orders keys bytewise; a nil Comparer in the options means
// it. It is the same comparer as the engine's default.
var DefaultComparer = base.DefaultComparer
