package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/internal/base"
)

// TestWriter_AllocsPerBlock checks that a Writer reuses its block,
// compression and filter buffers: once warm, writing a data block (with
// its filter and index entry) allocates nothing but the amortized growth
// of the table's index and filter block, fewer allocations than blocks.
// Values that Snappy cannot shrink are the case where a fresh compression
// buffer per block went unnoticed.
func TestWriter_AllocsPerBlock(t *testing.T) {
	policy, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		t.Fatal(err)
	}
	const blocks = 400
	for _, compressible := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressible=%t", compressible), func(t *testing.T) {
			w, _ := newMemWriter(t, WriterOptions{FilterPolicy: policy, Compression: SnappyCompression})
			keys, values := blockEntries(2*(blocks+1)*DefaultBlockSize/100, compressible)
			i := 0
			addBlock := func() {
				for start := w.props.NumDataBlocks; w.props.NumDataBlocks == start; i++ {
					if err := w.Add(keys[i], values[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := testing.AllocsPerRun(blocks, addBlock); got >= 1 {
				t.Errorf("%.0f allocations per data block, want fewer than 1", got)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// blockEntries returns n ascending keys and their values of 100 bytes,
// random (incompressible) or repetitive (compressible).
func blockEntries(n int, compressible bool) ([]base.InternalKey, [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]base.InternalKey, n)
	values := make([][]byte, n)
	for i := range keys {
		keys[i] = base.MakeInternalKey(fmt.Appendf(nil, "key%08d", i), 1, base.KindSet)
		values[i] = bytes.Repeat([]byte{byte(i)}, 100)
		if !compressible {
			for j := range values[i] {
				values[i][j] = byte(rng.Uint32())
			}
		}
	}
	return keys, values
}

// TestWriter_ReusedBuffers checks that nothing of one table leaks into the
// next through the buffers Close hands on: a table written after larger
// ones (more blocks, a longer index and filter block, range tombstones,
// one abandoned after a rejected entry) has the same bytes as when written
// first.
func TestWriter_ReusedBuffers(t *testing.T) {
	opts := WriterOptions{FilterPolicy: hashSetPolicy{}, BlockSize: 256}
	small := []testEntry{
		{key: base.MakeInternalKey([]byte("a"), 5, base.KindSet), value: []byte("1")},
		{key: base.MakeInternalKey([]byte("b"), 4, base.KindDelete)},
		{key: base.MakeInternalKey([]byte("c"), 3, base.KindSet), value: []byte("3")},
	}
	first := buildBytes(t, small, opts)

	var large []testEntry
	keys, values := blockEntries(3000, false)
	for i := range keys {
		large = append(large, testEntry{key: keys[i], value: values[i]})
	}
	large = append(large, testEntry{key: base.MakeInternalKey([]byte("zz"), 9, base.KindRangeDelete), value: []byte("zzz")})
	for _, o := range []WriterOptions{opts, {BlockSize: 4096}, {FilterPolicy: hashSetPolicy{}, Compression: NoCompression}} {
		buildBytes(t, large, o)
	}
	rejected := append(large[:100:100], large[0])
	if _, err := writeBytes(rejected, opts); err == nil {
		t.Fatal("out-of-order entry accepted")
	}
	if again := buildBytes(t, small, opts); !bytes.Equal(first, again) {
		t.Fatalf("table written after others differs:\n%x\nwant\n%x", again, first)
	}
}
