package kv

import "github.com/bloomkv/bloomkv/bloompolicy"

// defaultFilterPolicy is used when Options.FilterPolicy is nil.
func defaultFilterPolicy() (bloompolicy.FilterPolicy, error) {
	return nil, nil
}
