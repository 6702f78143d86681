package sstable

import (
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// testPolicies are the filter policies the corruption tests run under: no
// filter, the exact test filter, and the real Bloom policy at 1%.
func testPolicies(t testing.TB) []bloompolicy.FilterPolicy {
	return []bloompolicy.FilterPolicy{nil, hashSetPolicy{}, newBloom(t, 0.01)}
}

// newBloom returns bloompolicy.New(fpr).
func newBloom(t testing.TB, fpr float64) *bloompolicy.Bloom {
	b, err := bloompolicy.New(fpr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
