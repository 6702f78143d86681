//go:build linux

package kv

import (
	"fmt"
	"syscall"
	"unsafe"
)

// File systems whose allocated blocks a write through a mapping
// overwrites in place (statfs f_type), so that it needs no new block.
const (
	ext4Magic  = 0xEF53 // ext2, ext3 and ext4
	xfsMagic   = 0x58465342
	tmpfsMagic = 0x01021994
)

// checkFileSystem returns an error unless the file is on a file system
// where the mapping cannot fault for want of space once allocated.
func (w *walMmapWriter) checkFileSystem() error {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(w.fd), &st); err != nil {
		return err
	}
	switch st.Type {
	case ext4Magic, xfsMagic, tmpfsMagic:
		return nil
	}
	return fmt.Errorf("kv: no mapped WAL on file system type %#x", st.Type)
}

// fallocate allocates the file's space from off to off+n, extending the
// file to off+n if it is shorter; it fails with ENOSPC on a full disk.
func fallocate(fd uintptr, off, n int64) error {
	for {
		err := syscall.Fallocate(int(fd), 0, off, n)
		if err != syscall.EINTR {
			return err
		}
	}
}

// mmapFile maps n bytes of the file from off on, shared and writable.
func mmapFile(fd uintptr, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(fd), off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

// munmap removes a mapping mmapFile made.
func munmap(m []byte) error {
	return syscall.Munmap(m)
}

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14 on).
const madvPopulateWrite = 23

// populateWrite faults the pages of b, part of a shared file mapping, in
// writable, as a store to each would, but returns an error (EFAULT) where
// a store would raise SIGBUS; EINVAL where the kernel lacks the advice.
func populateWrite(b []byte) error {
	for {
		_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), madvPopulateWrite)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return e
	}
}

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE.
const syncFileRangeWrite = 2

// startWriteBack starts the writeback of the file's dirty pages from off
// to off+n, without waiting for it. It is advice: its error is dropped.
func startWriteBack(fd uintptr, off, n int64) {
	syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
}
