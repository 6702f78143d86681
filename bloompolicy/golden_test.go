package bloompolicy_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/datadriven"
)

// TestGolden pins the encoding: testdata/golden builds filters from fixed
// keys and records their bytes, what Inspect says of them and what
// MayContain answers. Regenerate with -rewrite only when the encoding
// changes on purpose, and then change EncodingName too.
//
// Commands:
//
//	build fpr=<target> | bits=<bits per key> [gen=<n>]
//	<one key per line>          (or gen=n: the keys key0000 ... key<n-1>)
//	----
//	the filter in hex (or, for gen, its size and xxhash64) and Inspect's fields
//
//	may-contain
//	<one key per line>
//	----
//	each key and MayContain's answer for the last filter built
//
//	inspect
//	<hex bytes>
//	----
//	Inspect's fields, or its error, and MayContain's answer for "key"
func TestGolden(t *testing.T) {
	var policy *bloompolicy.Bloom
	var filter []byte
	datadriven.RunTest(t, "testdata/golden", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "build":
			policy = goldenPolicy(t, d)
			w := policy.NewWriter()
			for _, k := range goldenKeys(t, d) {
				w.AddKey([]byte(k))
			}
			filter = w.Finish(nil)
			if d.HasArg("gen") {
				return fmt.Sprintf("size %d xxhash64 %016x\n%s", len(filter), xxhash.Sum64(filter), describe(filter))
			}
			return hexLines(filter) + describe(filter)
		case "may-contain":
			var b strings.Builder
			for _, k := range goldenKeys(t, d) {
				fmt.Fprintf(&b, "%q: %v\n", k, policy.MayContain(filter, []byte(k)))
			}
			return b.String()
		case "inspect":
			raw, err := hex.DecodeString(strings.Join(strings.Fields(d.Input), ""))
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			p := policyOrDefault(policy)
			return describe(raw) + fmt.Sprintf("may-contain %q: %v\n", "key", p.MayContain(raw, []byte("key")))
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

func goldenPolicy(t *testing.T, d *datadriven.TestData) *bloompolicy.Bloom {
	var v float64
	switch {
	case d.MaybeScanArgs(t, "fpr", &v):
		return mustNew(t, v)
	case d.MaybeScanArgs(t, "bits", &v):
		return mustBits(t, v)
	}
	t.Fatalf("%s: build needs fpr= or bits=", d.Pos)
	return nil
}

func goldenKeys(t *testing.T, d *datadriven.TestData) []string {
	var n int
	if d.MaybeScanArgs(t, "gen", &n) {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key%04d", i)
		}
		return keys
	}
	if d.Input == "" {
		return nil
	}
	keys := strings.Split(d.Input, "\n")
	for i, k := range keys {
		if u, err := strconv.Unquote(k); err == nil {
			keys[i] = u // "" spells the empty key
		}
	}
	return keys
}

func policyOrDefault(p *bloompolicy.Bloom) *bloompolicy.Bloom {
	if p != nil {
		return p
	}
	p, _ = bloompolicy.New(0.01)
	return p
}

// hexLines formats b as hex, 32 bytes a line.
func hexLines(b []byte) string {
	var s strings.Builder
	for len(b) > 0 {
		n := min(len(b), 32)
		s.WriteString(hex.EncodeToString(b[:n]) + "\n")
		b = b[n:]
	}
	return s.String()
}

// describe formats what Inspect says of filter.
func describe(filter []byte) string {
	info, err := bloompolicy.Inspect(filter)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	if info.Empty {
		return fmt.Sprintf("empty size=%d\n", info.Size)
	}
	layout := "plain"
	if info.Blocked {
		layout = fmt.Sprintf("blocked lines=%d", info.Lines)
	}
	return fmt.Sprintf("%s size=%d bits=%d probes=%d set=%d est-keys=%.1f est-fpr=%.4g\n",
		layout, info.Size, info.Bits, info.Probes, info.BitsSet, info.EstimatedKeys, info.EstimatedFPR)
}
