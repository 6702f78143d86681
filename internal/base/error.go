package base

import (
	"errors"
	"fmt"
)

// ErrCorruption marks every error caused by damaged or truncated data on
// disk. Test for it with errors.Is; the message names the file and, where
// known, the offset.
var ErrCorruption = errors.New("bloomkv: corruption")

// ErrNewerFormat marks data written in a format version newer than this
// build of bloomkv knows (a table footer's version, say). The bytes may be
// perfectly sound, so it is not corruption: a newer bloomkv reads them.
var ErrNewerFormat = errors.New("bloomkv: written by a newer bloomkv (unknown format version)")

// CorruptionErrorf formats an error that wraps ErrCorruption. format may
// hold %w verbs, as in fmt.Errorf: the error then wraps those causes too, so
// errors.Is and errors.As see both ErrCorruption and each cause.
func CorruptionErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrCorruption, fmt.Errorf(format, args...))
}

// NewerFormatErrorf formats an error that wraps ErrNewerFormat, with the
// same %w support as CorruptionErrorf.
func NewerFormatErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrNewerFormat, fmt.Errorf(format, args...))
}
