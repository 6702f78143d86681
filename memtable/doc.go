// Package memtable holds recent writes in memory, sorted, until they are
// flushed to a table: a skiplist of internal keys (user key ascending under
// the store's comparer, then newest version first). Range tombstones
// (kind RANGEDEL, start key, end as value) go to a second skiplist of
// their own; Get consults both, and RangeDels returns them fragmented,
// cached until the next one is added, so a memtable without range
// tombstones costs readers one atomic load.
//
// # Concurrency
//
// Any number of goroutines may Add at once, and any number may read (Get,
// iterators, Size, Len) at the same time, all without locks. A node is
// fully built (key, value and its own links) before a compare-and-swap of
// its predecessor's link makes it reachable, level 0 first, and readers
// follow links with atomic loads, so a reader sees each node either not at
// all or complete. Inserters that race for the same gap retry: the one
// whose swap failed searches that level again from its predecessor (the
// scheme of Pebble's arenaskl). The arena hands out memory with atomic
// adds. A reader that runs during an Add may or may not see the new entry;
// readers in bloomkv filter by sequence number, and an entry still being
// added is above every sequence number they read at.
//
// # Layout
//
//	head ─▶ [a#9 SET] ───────────────────────────▶ [k#4 SET] ─▶ nil   level 2
//	head ─▶ [a#9 SET] ──────────────▶ [c#5 DEL] ─▶ [k#4 SET] ─▶ nil   level 1
//	head ─▶ [a#9 SET] ─▶ [a#2 SET] ─▶ [c#5 DEL] ─▶ [k#4 SET] ─▶ nil   level 0
//	head ◀─ [a#9 SET] ◀─ [a#2 SET] ◀─ [c#5 DEL] ◀─ [k#4 SET]          prev links
//
// Each node has a tower of forward links, one per level it reaches (a node
// reaches level i+1 with probability 1/4, so searches take O(log n) steps),
// and a backward link at level 0, which makes Prev O(1).
//
// A node's tower sits right before it in memory, so a search step reads
// the link and the key prefix it compares in one cache line. Where the
// prefixes tie, as they do between keys that share their first 8 bytes
// ("user1234...", "/table/7/..."), the step must compare whole keys; so a
// key of up to 64 bytes whose neighbours share its prefix when it is
// added sits right after its node, at an address known before the node
// is read, rather than behind a second pointer. Other keys, such as those
// that begin with random bytes, whose searches the prefixes decide, stay
// out of the nodes that searches walk. Nodes, their towers and their keys
// are carved from slabs of 15 classes (heights 1, up to 4 and up to 16, by
// room for a key of 0, 16, 32, 48 or 64 bytes); values, and the other
// keys, are copied into large chunks of memory (an arena). Few objects
// are allocated one by one, which keeps the number the garbage collector
// tracks small.
//
// Nothing is freed or moved until the whole MemTable is unreachable, so the
// slices Get and iterators return stay valid for as long as the caller holds
// them.
package memtable
