package bench

import (
	"testing"

	"github.com/bloomkv/bloomkv/internal/splits"
)

// TestUserComparer_Builtin checks that the prefix workload's comparers
// split as the built-in Split "user" does, under its name, so that the
// command-line tool's --split user reads a bench store with its filters.
func TestUserComparer_Builtin(t *testing.T) {
	b, ok := splits.BySplitName(KVUserComparer.SplitName)
	if !ok || b.Name != "user" {
		t.Fatalf("KVUserComparer.SplitName %q is not the built-in Split user's (%+v)", KVUserComparer.SplitName, b)
	}
	checked := 0
	for _, key := range []string{"user/00000002/email", "user/00000002/", "user/7", "plain", ""} {
		k := []byte(key)
		want := splits.User(k)
		if got := KVUserComparer.Split(k); got != want {
			t.Errorf("KVUserComparer.Split(%q) = %d, want %d", key, got, want)
		}
		if got := PebbleUserComparer.Split(k); got != want {
			t.Errorf("PebbleUserComparer.Split(%q) = %d, want %d", key, got, want)
		}
		checked++
	}
	if checked != 5 {
		t.Fatalf("%d of 5 keys checked", checked)
	}
}
