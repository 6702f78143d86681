package pebbleadapter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cockroachdb/pebble/bloom"
)

func TestInspectPebbleFilter(t *testing.T) {
	w := FromPebble(bloom.FilterPolicy(10)).NewWriter()
	const keys = 5000
	for i := range keys {
		w.AddKey(fmt.Appendf(nil, "key-%d", i))
	}
	filter := w.Finish(nil)
	info, err := InspectPebbleFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	n := len(filter) - bloomTrailerLen
	if info.Size != len(filter) || info.Bits != 8*n || info.Probes != int(filter[n]) ||
		info.Lines != int(binary.LittleEndian.Uint32(filter[n+1:])) || info.Probes == 0 {
		t.Fatalf("info %+v does not match the %d-byte filter's trailer", info, len(filter))
	}
	if info.BitsSet == 0 || info.BitsSet >= info.Bits {
		t.Fatalf("%d of %d bits set", info.BitsSet, info.Bits)
	}
	if math.Abs(info.EstimatedKeys-keys) > 0.05*keys {
		t.Errorf("estimated %.0f keys, added %d", info.EstimatedKeys, keys)
	}

	zeroProbes := append([]byte(nil), filter...)
	zeroProbes[n] = 0
	for name, f := range map[string][]byte{
		"empty":       nil,
		"trailer":     filter[n:],
		"zero lines":  append(make([]byte, 64), 6, 0, 0, 0, 0),
		"ragged":      append(make([]byte, 65), 6, 2, 0, 0, 0),
		"zero probes": zeroProbes,
	} {
		if _, err := InspectPebbleFilter(f); !errors.Is(err, ErrInvalidPebbleFilter) {
			t.Errorf("%s: error %v, want ErrInvalidPebbleFilter", name, err)
		}
	}
}
