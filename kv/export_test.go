package kv

// LookupDelta is lookupDelta (filters_test.go), for the external tests.
var LookupDelta = lookupDelta
