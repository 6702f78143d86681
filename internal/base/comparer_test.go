package base

import (
	"bytes"
	"testing"
)

func TestComparer_Bytewise(t *testing.T) {
	reverse := func(a, b []byte) int { return bytes.Compare(b, a) }
	wrapped := func(a, b []byte) int { return bytes.Compare(a, b) }
	for _, tc := range []struct {
		name string
		c    *Comparer
		want bool
	}{
		{"default", DefaultComparer, true},
		{"a copy of the default", &Comparer{Compare: bytes.Compare, Name: "mine"}, true},
		{"bytewise name, other order", &Comparer{Compare: reverse, Name: DefaultComparer.Name}, false},
		{"bytes.Compare wrapped", &Comparer{Compare: wrapped, Name: DefaultComparer.Name}, false},
	} {
		if got := tc.c.Bytewise(); got != tc.want {
			t.Errorf("%s: Bytewise() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
