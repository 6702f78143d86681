package base

import (
	"errors"
	"io/fs"
	"testing"
)

// pathError stands for a typed cause a caller may look for with errors.As.
type pathError struct{ path string }

func (e *pathError) Error() string { return "bad path " + e.path }

func TestCorruptionErrorf_WrapsCauses(t *testing.T) {
	cause := &pathError{path: "000004.log"}
	tests := []struct {
		name   string
		err    error
		marks  error
		wraps  []error
		asPath bool
		msg    string
	}{
		{"plain", CorruptionErrorf("kv: %s: offset %d", "MANIFEST-000001", 7), ErrCorruption, nil, false,
			"bloomkv: corruption: kv: MANIFEST-000001: offset 7"},
		{"one cause", CorruptionErrorf("kv: replaying: %w", fs.ErrNotExist), ErrCorruption,
			[]error{fs.ErrNotExist}, false, "bloomkv: corruption: kv: replaying: file does not exist"},
		{"two causes", CorruptionErrorf("a: %w, b: %w", fs.ErrClosed, cause), ErrCorruption,
			[]error{fs.ErrClosed}, true, "bloomkv: corruption: a: file already closed, b: bad path 000004.log"},
		{"newer format", NewerFormatErrorf("sstable: t: version %d: %w", 9, cause), ErrNewerFormat, nil, true,
			"bloomkv: written by a newer bloomkv (unknown format version): sstable: t: version 9: bad path 000004.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.marks) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.marks)
			}
			for _, w := range tt.wraps {
				if !errors.Is(tt.err, w) {
					t.Errorf("errors.Is(%v, %v) = false", tt.err, w)
				}
			}
			var pe *pathError
			if got := errors.As(tt.err, &pe); got != tt.asPath || (got && pe != cause) {
				t.Errorf("errors.As(*pathError) = %v (%v), want %v", got, pe, tt.asPath)
			}
			if got := tt.err.Error(); got != tt.msg {
				t.Errorf("message %q, want %q", got, tt.msg)
			}
		})
	}
	if errors.Is(NewerFormatErrorf("x"), ErrCorruption) || errors.Is(CorruptionErrorf("x"), ErrNewerFormat) {
		t.Error("ErrNewerFormat and ErrCorruption must be distinct marks")
	}
}
