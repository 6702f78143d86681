package main

import (
	"fmt"
	"math"
	"time"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/bloompolicy/pebbleadapter"
	"github.com/bloomkv/bloomkv/internal/bench"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/spf13/cobra"
)

type filterOptions struct {
	fpr     float64
	keys    int
	queries int
	seed    uint64
}

func (a *app) filterCommand() *cobra.Command {
	o := filterOptions{}
	cmd := &cobra.Command{
		Use:   "filter",
		Short: "Build one standalone filter and measure it against Pebble's bloom",
		Long: "filter builds one filter over --keys keys with bloompolicy.New(--fpr), " +
			"the same policy at the nearest whole number of bits per key, and Pebble's " +
			"bloom at that number, then measures each: bits per key, probes, false-positive " +
			"rate over --queries absent keys, and build and query time per key.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runFilter(o) },
	}
	f := cmd.Flags()
	f.Float64Var(&o.fpr, "fpr", 0.01, "target false-positive rate, in (0,1)")
	f.IntVar(&o.keys, "keys", 1_000_000, "keys added to the filter")
	f.IntVar(&o.queries, "queries", 1_000_000, "absent keys queried to measure the false-positive rate")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the key generator")
	return cmd
}

// filterResult is one policy measured as a standalone filter.
type filterResult struct {
	Policy            string    `json:"policy"`
	Name              string    `json:"name"` // the encoding's name, as stored in tables
	BitsPerKey        jsonFloat `json:"bits_per_key"`
	Probes            int       `json:"probes"`
	FilterBytes       int       `json:"filter_bytes"`
	Keys              int       `json:"keys"`
	Queries           int       `json:"queries"`
	FalsePositives    int       `json:"false_positives"`
	FPR               jsonFloat `json:"fpr"`
	TargetFPR         jsonFloat `json:"target_fpr"`
	BuildNsPerKey     jsonFloat `json:"build_ns_per_key"`
	QueryNsPerKey     jsonFloat `json:"query_ns_per_key"`
	NominalBitsPerKey jsonFloat `json:"nominal_bits_per_key"`
}

func (a *app) runFilter(o filterOptions) error {
	if err := checkFPR(o.fpr); err != nil {
		return err
	}
	if o.keys <= 0 || o.queries <= 0 {
		return usagef("--keys and --queries must be positive")
	}
	candidates, err := filterCandidates(o.fpr)
	if err != nil {
		return err
	}
	kg := bench.NewKeyGen(o.seed)
	var results []filterResult
	for _, c := range candidates {
		r, err := measureFilter(c.policy, kg, o.keys, o.queries)
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		r.Policy, r.TargetFPR, r.NominalBitsPerKey = c.label, jsonFloat(o.fpr), jsonFloat(c.nominal)
		results = append(results, r)
	}
	if a.json {
		return writeJSON(a.stdout, results)
	}
	fmt.Fprintf(a.stdout, "one filter over %d keys, %d absent keys queried, target FPR %s\n\n",
		o.keys, o.queries, fmtPercent(o.fpr, 2))
	t := newTable("policy", ">bits/key (nominal)", ">bits/key (measured)", ">probes",
		">filter bytes", ">FPR", ">build ns/key", ">query ns/key")
	for _, r := range results {
		t.add(r.Policy, fmtFloat(float64(r.NominalBitsPerKey), 2), fmtFloat(float64(r.BitsPerKey), 2),
			fmt.Sprint(r.Probes), fmt.Sprint(r.FilterBytes), fmtPercent(float64(r.FPR), 3),
			fmtFloat(float64(r.BuildNsPerKey), 1), fmtFloat(float64(r.QueryNsPerKey), 1))
	}
	return t.write(a.stdout)
}

// filterCandidate is one policy the filter command measures.
type filterCandidate struct {
	label   string
	policy  bloompolicy.FilterPolicy
	nominal float64 // bits per key it builds with
}

// filterCandidates returns bloompolicy.New(fpr), and bloompolicy and
// Pebble's bloom at the whole number of bits per key nearest to it.
func filterCandidates(fpr float64) ([]filterCandidate, error) {
	ours, err := bloompolicy.New(fpr)
	if err != nil {
		return nil, usageError{err}
	}
	bits := ours.BitsPerKey()
	whole := pebbleBits(bits)
	oursWhole, err := bloompolicy.NewBitsPerKey(float64(whole))
	if err != nil {
		return nil, err
	}
	return []filterCandidate{
		{fmt.Sprintf("bloompolicy.New(%g)", fpr), ours, bits},
		{fmt.Sprintf("bloompolicy.NewBitsPerKey(%d)", whole), oursWhole, float64(whole)},
		{fmt.Sprintf("pebble bloom.FilterPolicy(%d)", whole),
			pebbleadapter.FromPebble(bloom.FilterPolicy(whole)), float64(whole)},
	}, nil
}

// checkFPR rejects a target false-positive rate outside (0,1).
func checkFPR(p float64) error {
	if !(p > 0 && p < 1) {
		return usagef("--fpr %g: want a rate strictly between 0 and 1", p)
	}
	return nil
}

// pebbleBits returns the whole number of bits per key nearest to bits, the
// resolution of Pebble's bloom.FilterPolicy, at least 1.
func pebbleBits(bits float64) int {
	return max(1, int(math.Round(bits)))
}

// measureFilter builds one filter of p over the first n present keys of kg
// (twice: the second build is timed), checks that each of them is reported present, and counts the false
// positives among q absent keys. Times are per key.
func measureFilter(p bloompolicy.FilterPolicy, kg bench.KeyGen, n, q int) (filterResult, error) {
	var key [bench.KeySize]byte
	build := func() []byte {
		w := p.NewWriter()
		for i := range n {
			w.AddKey(kg.Present(key[:0], i))
		}
		return w.Finish(nil)
	}
	// The first build pays for one-time work (sizing arithmetic a policy
	// caches, memory growth); the second is the one timed.
	build()
	start := time.Now()
	filter := build()
	buildTime := time.Since(start)
	for i := range n {
		if k := kg.Present(key[:0], i); !p.MayContain(filter, k) {
			return filterResult{}, fmt.Errorf("filter misses key %q it was built from", k)
		}
	}
	fp := 0
	start = time.Now()
	for i := range q {
		if p.MayContain(filter, kg.Absent(key[:0], i)) {
			fp++
		}
	}
	query := time.Since(start)
	st, _ := inspectFilter(p.Name(), filter) // 0 probes for bytes that do not decode
	return filterResult{
		Name:           p.Name(),
		BitsPerKey:     jsonFloat(8 * float64(len(filter)) / float64(n)),
		Probes:         st.Probes,
		FilterBytes:    len(filter),
		Keys:           n,
		Queries:        q,
		FalsePositives: fp,
		FPR:            jsonFloat(float64(fp) / float64(q)),
		BuildNsPerKey:  jsonFloat(float64(buildTime.Nanoseconds()) / float64(n)),
		QueryNsPerKey:  jsonFloat(float64(query.Nanoseconds()) / float64(q)),
	}, nil
}

// fprCurve measures standalone filters of ours and of Pebble's bloom at
// every whole number of bits per key from lo to hi, for the plot.
func fprCurve(kg bench.KeyGen, lo, hi, n, q int) (ours, pebble []fprPoint, err error) {
	for b := lo; b <= hi; b++ {
		p, err := bloompolicy.NewBitsPerKey(float64(b))
		if err != nil {
			return nil, nil, err
		}
		for _, c := range []struct {
			policy bloompolicy.FilterPolicy
			dst    *[]fprPoint
		}{{p, &ours}, {pebbleadapter.FromPebble(bloom.FilterPolicy(b)), &pebble}} {
			r, err := measureFilter(c.policy, kg, n, q)
			if err != nil {
				return nil, nil, err
			}
			*c.dst = append(*c.dst, fprPoint{Label: fmt.Sprintf("%d bits", b), BitsPerKey: r.BitsPerKey, FPR: r.FPR})
		}
	}
	return ours, pebble, nil
}
