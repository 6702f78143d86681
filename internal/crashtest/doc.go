// Package crashtest checks kv's promises after a crash of the process,
// on a real disk: it is the engine of cmd/bloomkv's crash command, which
// anyone can run on their own machine and file system.
//
// # A campaign
//
// [Run] runs rounds one after the other. A round opens a new store and
// starts a child process (the same program, [Config.Child], with
// [ChildEnv] set, calling [RunChild]) that writes to it from several
// goroutines and reports each op on its stdout once the op is
// acknowledged. The parent kills the child with SIGKILL at a random moment:
// in Open, while the child checks the store, while it writes, in Close or
// after Close returned. The next child opens the same store, checks what the
// kill left against what its parent read, and writes on; a round has one to
// four kills. Now and then between kills, and always last, the parent opens
// the store itself, read-only first (kv.Options.ReadOnly), then for writes,
// which must find the same; checks it, writes more, closes it, and opens it
// again to find exactly what it wrote. Every choice of a round (its [Round])
// and every kill's timing derive from its seed, so [Config.Seed] replays a
// round; where a kill lands in the child's life still depends on the
// machine.
//
// # The workload
//
// Writer w owns its keys, "wWW/kKKKKKK", and issues ops 0, 1, 2, ...,
// each one DB call: a Set, Delete or DeleteRange, a Batch of 1 to 200
// edits, a big op of 1 to 9 MiB, a Flush, or an Ingest of a table that
// leaves the keys as a Batch of 1 to 200 edits would; some acknowledged
// with kv.Sync. An acknowledged Ingest, which flushes the memtables
// first, is never lost, as a Sync write or a Flush is not. Op n of writer w is a function of the seed, w and n alone,
// and every value names the Set that wrote it ("WW:NNNNNNNNN:JJJ|") and
// goes on with filler bytes drawn from those numbers. So the parent
// needs no copy of what was written: the numbers of the ops acknowledged
// are enough to rebuild any state of the store.
//
// # The check
//
// Reading the store (an iterator over all of it, then a Get of every
// key), every key must be a writer's and every value byte for byte the
// one a Set of that key wrote. Then, for each writer, the check replays
// its ops in a model and finds the states m (its keys as ops 0 to m
// leave them) that the store holds, between the last state checked and
// one past the last op acknowledged (the op in flight at the kill). None
// means the keys are as no prefix of the writer's ops leaves them: a torn
// batch, or a write lost that an earlier check found. Last, the states
// found are judged against the WAL mode's promise:
//
//   - by default, and after a clean Close in either mode, every
//     acknowledged op survives;
//   - with kv.Options.BackgroundWALWrites, what survives is a prefix of
//     the order in which the ops committed. That order is unknown, but an
//     op acknowledged before another began committed first, so some
//     moment must part the ops kept (begun by then) from the
//     acknowledged ops lost (acknowledged after it); no acknowledged Sync
//     op or Flush may be lost, and the lost ops' Batch.Len may add up to
//     [LossBound] at most.
//
// A failure keeps the round's store for inspection, and the stderr of a
// child that failed beside it.
package crashtest
