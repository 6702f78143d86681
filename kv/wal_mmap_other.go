//go:build !linux

package kv

// checkFileSystem returns errWALMmapUnavailable: the mapped WAL is built
// for Linux only, where a sync of the file is known to cover the pages
// written through a mapping.
func (w *walMmapWriter) checkFileSystem() error { return errWALMmapUnavailable }

// fallocate is never called off Linux.
func fallocate(fd uintptr, off, n int64) error { return errWALMmapUnavailable }

// mmapFile is never called off Linux.
func mmapFile(fd uintptr, off int64, n int) ([]byte, error) { return nil, errWALMmapUnavailable }

// munmap is never called off Linux.
func munmap(m []byte) error { return errWALMmapUnavailable }

// populateWrite is never called off Linux.
func populateWrite(b []byte) error { return errWALMmapUnavailable }

// startWriteBack is never called off Linux.
func startWriteBack(fd uintptr, off, n int64) {}
