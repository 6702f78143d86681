package kv

// WALLossBound is walBufferLimit, for the external tests of the loss bound
// of Options.BackgroundWALWrites.
const WALLossBound = walBufferLimit
