package base

import (
	"fmt"
	"strconv"
	"strings"
)

// FileNum numbers the files of a store. Numbers are never reused, so a
// number names one table, log or manifest for the life of the store; the
// block cache keys blocks by it.
type FileNum uint64

// String formats the number as it appears in file names: six digits at
// least, zero-padded.
func (n FileNum) String() string { return fmt.Sprintf("%06d", uint64(n)) }

// FileType tells what a file in a store's directory holds.
type FileType int

// The kinds of files in a store's directory.
const (
	FileTypeLog FileType = iota
	FileTypeTable
	FileTypeManifest
	FileTypeCurrent
	FileTypeLock
	FileTypeTemp
)

// MakeFilename returns the name, within the store's directory, of the file
// of the given type and number. CURRENT and LOCK have no number.
//
//	000123.log  000124.sst  MANIFEST-000007  CURRENT  LOCK  000125.tmp
func MakeFilename(typ FileType, n FileNum) string {
	switch typ {
	case FileTypeLog:
		return n.String() + ".log"
	case FileTypeTable:
		return n.String() + ".sst"
	case FileTypeManifest:
		return "MANIFEST-" + n.String()
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeLock:
		return "LOCK"
	case FileTypeTemp:
		return n.String() + ".tmp"
	}
	panic(fmt.Sprintf("base: unknown file type %d", typ))
}

// ParseFilename is the inverse of MakeFilename. ok is false for names the
// store did not make.
func ParseFilename(name string) (typ FileType, n FileNum, ok bool) {
	switch {
	case name == "CURRENT":
		return FileTypeCurrent, 0, true
	case name == "LOCK":
		return FileTypeLock, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, ok = parseFileNum(name[len("MANIFEST-"):])
		return FileTypeManifest, n, ok
	}
	stem, ext, found := strings.Cut(name, ".")
	if !found {
		return 0, 0, false
	}
	n, ok = parseFileNum(stem)
	switch ext {
	case "log":
		return FileTypeLog, n, ok
	case "sst":
		return FileTypeTable, n, ok
	case "tmp":
		return FileTypeTemp, n, ok
	}
	return 0, 0, false
}

// parseFileNum parses a number as FileNum.String writes it: six digits at
// least, zero-padded, and no more zeros than that. Another spelling of
// the number ("3.log", "0000003.log") is not a name the store made, and
// would pass for a second file of the same number.
func parseFileNum(s string) (FileNum, bool) {
	u, err := strconv.ParseUint(s, 10, 64)
	return FileNum(u), err == nil && FileNum(u).String() == s
}
