package kv_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bloomkv/bloomkv/bloompolicy"
	"github.com/bloomkv/bloomkv/kv"
	"github.com/cockroachdb/pebble/vfs"
)

// A web crawler must not fetch a page twice, so before each fetch it asks
// "seen this URL before?". Most links it finds are new, and for a new URL
// the store's filters answer "no" without reading a data block; only the
// false positives, about one in ten thousand here, cost a read. The store
// is the exact record, so a false positive never turns into a skipped page.
//
// The memory of the filters is what to plan for. A Bloom filter at a
// false-positive rate p needs -ln(p)/(ln 2)^2 bits per key in the textbook
// (bloompolicy.TextbookBitsPerKey): at 0.01%, 19.2 bits, so a billion URLs
// take 2.4 GB of filter, not the 18 MB sometimes quoted (that would be 0.14
// bits per URL, a rate near 90%). Real layouts need more than the
// textbook: the example prints what bloompolicy.New spends on one large
// filter (cache-line blocked, 22.0 bits) and what this store's filters
// spend as DB.Metrics counts them, lengths and trailers included (one
// small filter per data block, each a plain bit array sized for its keys:
// 19.3 bits). Either way a billion URLs at 0.01% want gigabytes.
func Example_urlDeduplication() {
	const fpr = 0.0001 // 0.01%
	policy, err := bloompolicy.New(fpr)
	if err != nil {
		log.Fatal(err)
	}
	db, err := kv.Open("crawl", &kv.Options{FS: vfs.NewMem(), FilterPolicy: policy})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// seen reports whether url was recorded; record records it.
	seen := func(url string) bool {
		_, err := db.Get([]byte(url))
		switch {
		case err == nil:
			return true
		case !errors.Is(err, kv.ErrNotFound):
			log.Fatal(err)
		}
		return false
	}
	record := func(url string) {
		if err := db.Set([]byte(url), nil, kv.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	url := func(i int) string { return fmt.Sprintf("https://site%d.example/articles/%d", i%97, i) }

	// A first crawl of 30,000 pages, each recorded once fetched. The
	// store flushes its memtables to tables as they fill; compacting it
	// leaves tables that do not overlap, as it settles on its own once
	// the crawl pauses, so a lookup asks one table.
	for i := 0; i < 30000; i++ {
		if seen(url(i)) {
			log.Fatalf("%s seen", url(i))
		}
		record(url(i))
	}
	if err := db.Compact(nil, nil); err != nil {
		log.Fatal(err)
	}
	// Then 20,000 links: 10,000 to pages already crawled, 10,000 new.
	for i := 20000; i < 30000; i++ {
		if !seen(url(i)) {
			log.Fatalf("%s not seen", url(i))
		}
	}
	before := db.Metrics().Lookups
	for i := 30000; i < 40000; i++ {
		if seen(url(i)) {
			log.Fatalf("%s seen", url(i))
		}
	}
	m := db.Metrics()
	l := m.Lookups
	fmt.Printf("new links: 10000, tables asked: %d\n", l.TablesConsidered-before.TablesConsidered)
	fmt.Printf("filters said absent: %d, false positives: %d, data blocks read: %d\n",
		l.FilterNegatives-before.FilterNegatives, l.FilterFalsePositives-before.FilterFalsePositives,
		l.BlockReads-before.BlockReads)

	var keys, filterBytes int64
	for _, level := range m.Levels {
		keys, filterBytes = keys+level.Keys, filterBytes+level.FilterBytes
	}
	const urls = 1e9
	for _, row := range []struct {
		what string
		bits float64
	}{
		{"textbook", bloompolicy.TextbookBitsPerKey(fpr)},
		{"bloompolicy.New, one large filter", policy.BitsPerKey()},
		{"this store, a filter per block", 8 * float64(filterBytes) / float64(keys)},
	} {
		fmt.Printf("1e9 URLs at 0.01%%, %s: %.1f bits each, %.2f GB\n", row.what, row.bits, row.bits*urls/8/1e9)
	}
	// Output:
	// new links: 10000, tables asked: 10000
	// filters said absent: 10000, false positives: 0, data blocks read: 0
	// 1e9 URLs at 0.01%, textbook: 19.2 bits each, 2.40 GB
	// 1e9 URLs at 0.01%, bloompolicy.New, one large filter: 22.0 bits each, 2.75 GB
	// 1e9 URLs at 0.01%, this store, a filter per block: 19.3 bits each, 2.41 GB
}
