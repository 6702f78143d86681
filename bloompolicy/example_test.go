package bloompolicy_test

import (
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
)

func ExampleNew() {
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(policy.Name())
	fmt.Printf("large filters: %.2f bits/key, expected rate %.3f%%\n", policy.BitsPerKey(), 100*policy.ExpectedFPR())

	// A per-block filter of 60 keys is sized for exactly 60 keys.
	w := policy.NewWriter()
	for i := range 60 {
		w.AddKey(fmt.Appendf(nil, "user%03d", i))
	}
	filter := w.Finish(nil)
	info, err := bloompolicy.Inspect(filter)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("60 keys: %d bytes (%.2f bits/key), %d probes, blocked %v\n",
		len(filter), 8*float64(len(filter))/60, info.Probes, info.Blocked)

	_, err = bloompolicy.New(1)
	fmt.Println(err)
	// Output:
	// bloomkv.bloom.v1
	// large filters: 9.92 bits/key, expected rate 1.000%
	// 60 keys: 74 bytes (9.87 bits/key), 7 probes, blocked false
	// bloompolicy: target false-positive rate 1 is not strictly between 0 and 1
}

func ExampleNewBitsPerKey() {
	// Ten bits per key, the memory Pebble's default filter spends.
	policy, err := bloompolicy.NewBitsPerKey(10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(policy)

	w := policy.NewWriter()
	for i := range 100_000 {
		w.AddKey(fmt.Appendf(nil, "key%06d", i))
	}
	filter := w.Finish(nil)
	info, err := bloompolicy.Inspect(filter)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d keys: %d bytes, %d lines of 64 bytes, blocked %v\n", 100_000, len(filter), info.Lines, info.Blocked)

	_, err = bloompolicy.NewBitsPerKey(0)
	fmt.Println(err)
	// Output:
	// bloomkv.bloom.v1(10 bits/key, 6 probes, fpr≈0.00966)
	// 100000 keys: 125057 bytes, 1954 lines of 64 bytes, blocked true
	// bloompolicy: bits per key 0 is not positive
}

func ExampleBloom_MayContain() {
	policy, err := bloompolicy.New(0.01)
	if err != nil {
		log.Fatal(err)
	}
	w := policy.NewWriter()
	for _, k := range []string{"apple", "banana", "cherry"} {
		w.AddKey([]byte(k))
	}
	filter := w.Finish(nil)

	// Added keys are always found; most others are ruled out.
	for _, k := range []string{"apple", "cherry", "durian", "elderberry"} {
		fmt.Printf("%s: %v\n", k, policy.MayContain(filter, []byte(k)))
	}
	// Bytes that are not a filter rule nothing out.
	fmt.Println("garbage:", policy.MayContain([]byte{0xff, 0xff}, []byte("durian")))
	// Output:
	// apple: true
	// cherry: true
	// durian: false
	// elderberry: false
	// garbage: true
}
