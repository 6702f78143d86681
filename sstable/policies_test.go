package sstable

import (
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

// testPolicies are the filter policies the corruption and golden tests
// run under.
func testPolicies(t testing.TB) []bloompolicy.FilterPolicy {
	return []bloompolicy.FilterPolicy{nil, hashSetPolicy{}}
}
