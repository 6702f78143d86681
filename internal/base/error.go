package base

import (
	"errors"
	"fmt"
)

// ErrCorruption marks every error caused by damaged or truncated data on
// disk. Test for it with errors.Is; the message names the file and, where
// known, the offset.
var ErrCorruption = errors.New("bloomkv: corruption")

// CorruptionErrorf formats an error that wraps ErrCorruption.
func CorruptionErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruption, fmt.Sprintf(format, args...))
}
