// Package bloompolicy defines how bloomkv builds and queries the filters that
// let a point lookup skip data blocks, and provides the Bloom filter policy
// used by default.
//
// A [FilterPolicy] turns a set of keys into a filter, an encoded summary that
// answers "definitely absent" or "maybe present". [Bloom] is the policy
// bloomkv ships: [New] sizes its filters for a target false-positive rate,
// [NewBitsPerKey] for a fixed memory budget. Filters are self-describing, so
// [Bloom.MayContain] reads any filter of this encoding whatever the
// parameters it was written with, and [Inspect] describes one for tools.
//
// # Hashing and probes
//
// Each key is hashed once, h = xxhash64(key) with seed 0, and every probe
// derives from h. Probe word i is
//
//	x_0 = h,    x_(i+1) = x_i * 0x9e3779b97f4a7c15  (mod 2^64)
//
// Multiplying by an odd constant (2^64 over the golden ratio) mixes all bits
// of x_i into the high bits of x_(i+1), which is where bit positions are
// taken from. The probes of a key therefore behave as independent uniform
// choices, even in a bit array of a few hundred bits (the false-positive
// tests hold the measured rates to the model at 20 keys). Classic double
// hashing, h1 + i*h2 mod m, does not: it admits only about m^2 probe
// patterns, so in a small array an absent key too often repeats much of a
// present key's pattern.
//
// # Encoding
//
// A filter is a body followed by a one-byte trailer. There are no multi-byte
// integers. Bit b of a bit array is bit b%8 of byte b/8, bit 0 being the
// least significant. The trailer says which layout the body has:
//
//	trailer byte:   bit 7 6      bit 5 4 3 2 1 0
//	               +----------+--------------------+
//	               |  layout  |  probes per key k  |
//	               +----------+--------------------+
//	                00 plain    1..63 (writers use at most 32)
//	                01 blocked
//	                10, 11 reserved
//
// Plain layout, for filters of few keys. The body is one bit array of
// m = 8*B bits; probe i sets or tests bit ((x_i >> 32) * m) >> 32, the high
// half of the probe word scaled onto [0, m) by a multiply and a shift:
//
//	+---------------------------------+---------+
//	| bit array                       | trailer |
//	| B bytes (1 <= B <= 2^28)        | 1 byte  |
//	+---------------------------------+---------+
//
// Blocked layout, for large filters. The body is L lines of 512 bits, one
// 64-byte cache line each. A key uses one line only, ((h & 0xffffffff) * L)
// >> 32, picked by the low half of h, and probe i is bit x_i >> 55 of that
// line, the top nine bits of the probe word. A query thus touches one cache
// line, whatever k is:
//
//	+-----------+-----------+-------+-------------+---------+
//	| line 0    | line 1    |  ...  | line L-1    | trailer |
//	| 64 bytes  | 64 bytes  |       | 64 bytes    | 1 byte  |
//	+-----------+-----------+-------+-------------+---------+
//
// The filter of zero keys is the single byte 0x00 (plain, k = 0, no body)
// and contains nothing. Any other bytes that do not fit these rules (no
// trailer, k = 0, a reserved layout, an empty body, a blocked body that is
// not whole lines) cannot be decoded, and MayContain answers true for them:
// a filter may only ever cost a read, never lose a key.
//
// The policy's name, [EncodingName] ("bloomkv.bloom.v1"), is stored with
// every table; it changes whenever these bytes would.
//
// # Sizing
//
// The textbook rule, -ln(p)/(ln 2)^2 bits per key and k = bits * ln 2, is an
// asymptote: it assumes an infinite array with every bit equally likely to
// be set. Neither layout is that, so Bloom sizes each from the exact model
// of the layout it writes.
//
// A filter whose plain body would take at most 4096 bytes (at the textbook
// bits per key of the target, or at the fixed bits per key) uses the plain
// layout, sized for its exact key count n: the whole filter is a few cache
// lines, hot while a table is in use, and needs the fewest bits. The false-positive rate of m bits holding
// n keys with k independent probes each is computed exactly, not as
// (1-e^(-kn/m))^k nor even as (1-(1-1/m)^(kn))^k, which both ignore that
// the number of bits set varies from filter to filter and that a key's own
// probes may coincide:
//
//	FPR(m, n, k) = sum_j  S(k,j) * m(m-1)...(m-j+1) / m^k       (k probes hit j distinct bits)
//	                    * sum_i (-1)^i C(j,i) (1 - i/m)^(kn)     (j given bits all set)
//
// with S the Stirling numbers of the second kind. (Where the alternating sum
// would lose its digits to cancellation, a Markov chain over the probes
// computes the second factor instead.) [New] takes the fewest
// whole bytes for which some k gives FPR <= target, and that k; at 20 keys
// the asymptotic figures would promise up to 5% less than is delivered.
// Results are cached, process-wide, per key count.
//
// Larger filters use the blocked layout, which needs more bits than the
// textbook for the same rate: keys do not spread evenly over lines, and the
// rate of a crowded line outweighs the gain of a sparse one. With lambda =
// 512/bits-per-key, the number of keys sharing a query's line is Poisson
// with mean lambda, and a line of c keys answers falsely with FPR(512, c, k),
// so
//
//	FPR_blocked(bits, k) = sum_c  e^(-lambda) lambda^c / c!  *  FPR(512, c, k)
//
// [New] finds, for each k, the fewest bits per key (to 1/1024 bit) that meet
// the target, and keeps the best k. For example:
//
//	target   textbook bits/key   blocked bits/key   k
//	10%       4.79                4.84              3
//	1%        9.59                9.92              6
//	0.1%     14.38               15.55              9
//	0.01%    19.17               22.03             12
//
// The penalty grows as the rate falls: 1e-6 takes 38.8 bits per key, 1.35
// times the textbook.
//
// [NewBitsPerKey] fixes the bits instead and picks the k that minimizes the
// same model: at 10 bits per key, k = 6 and 0.966% (a plain array of the
// same size would give 0.82%).
//
// A writer rounds up to whole bytes or lines, and the trailer adds one byte,
// so a filter of many keys spends a fraction of a bit per key more than the
// nominal bits, and one of a few keys far more: it takes at least two
// bytes, so at a 10% target a filter of 1 key spends 16 bits per key and
// one of 5 keys 8, against 4.8 nominal (a table of one-entry blocks pays
// that per block).
//
// # Budgets per level
//
// An LSM tree asks the filter of every sorted run a lookup reaches, so an
// absent key meets as many chances of a false positive as there are runs.
// [Allocate] divides a memory budget (average bits per key) or a budget of
// expected false positives per absent lookup among runs by Monkey's rule
// (Dayan, Athanassoulis and Idreos, SIGMOD 2017): each run's rate in
// proportion to its keys, so small runs get more bits per key and the
// largest, the bottom level, fewer. The bits each rate costs come from the
// blocked layout's model above. For four L0 tables of 1e5 keys and levels
// of 2e6, 2e7 and 2e8 keys, 10 bits per key on average give 0.014 expected
// false positives per absent lookup, against 0.068 at 10 bits everywhere.
//
// # Budgets from the lookups served
//
// Monkey assumes every lookup is of an absent key and reaches every run.
// A store whose lookups mostly find their key sees otherwise: a lookup
// stops at the run holding its key, and only the runs it reaches without
// finding the key can cost it a wasted data-block read. Let w_i be the
// expected number of lookups, per lookup served, that reach run i and do
// not find their key there (the run's Runs.Misses; a store measures it
// per level, decayed, from its lookup counters). The expected wasted reads
// per lookup are
//
//	W = sum_i  w_i * p_i
//
// and the memory is M = sum_i n_i * b(p_i) bits, with b(p) = -ln(p)/(ln 2)^2
// in the textbook. Minimising W for a fixed M (a Lagrange multiplier
// lambda) gives, for each run with a filter,
//
//	w_i = lambda * n_i * (-b'(p_i)) = lambda * n_i / (p_i * (ln 2)^2)
//	=>  p_i = c * n_i / w_i        (capped at 1; c set by the budget)
//
// a run's rate in proportion to its keys over the misses it serves. With
// w_i equal for all runs this is Monkey's rule; a run no lookup misses in
// (w_i = 0) gets no filter, which is RocksDB's optimize_filters_for_hits
// when the bottom level is that run. [Allocate] applies it when any run has
// Misses set, with the blocked layout's costs as above; a shift of 2% of
// any run's bits to another never gains more than 0.5% (the traffic tests).
//
// For example, take an L0 table of 2e5 keys and levels of 1e6, 1e7 and 1e8
// keys, and a mix of 90% lookups of stored keys, drawn alike from all keys,
// and 10% of absent ones. An absent lookup misses in every run; a present
// one in every run above the one holding its key, so
//
//	w_i = 0.1 + 0.9 * (keys below run i) / (all keys)
//	    = 0.998, 0.990, 0.909, 0.100     (L0, L1, L2, L3)
//
// At 10 bits per key on average the expected wasted reads per lookup are
// 0.0290 for uniform filters, 0.1 without bottom-level filters (every
// absent lookup reads a bottom-level block), 0.00257 by Monkey's rule and
// 0.00185 by this one (0.72 times Monkey's); at 5 bits, 0.279, 0.1, 0.0245
// and 0.0174. With all lookups absent, all w_i = 1 and the two rules agree.
//
// # A cap on filter memory
//
// Budget.Bytes is a cap rather than a rate: 8*Bytes bits shared over all
// the runs' keys, however many there are. A store under a cap allocates
// it with the rule above over the tree as it stands, each table a run of
// its own weighed by the lookups that reached it and missed there, less
// the filter blocks' bookkeeping (a few bytes per data block, which the
// store measures on the filters it builds). Filters are not all or
// nothing: a table holds in memory a filter of the bits per key its run
// gets now. That is the filter it was written with when the two are
// within a quarter bit per key of each other (about 12% in rate);
// otherwise the store builds the table a filter of exactly those bits
// from its keys, in memory (the encoding is self-describing, so the table
// on disk stays as written and any reader reads either). A quarter bit
// bounds the rebuilds of a growing store, whose allocation drifts: at a
// cap worth b bits per key on average, the average falls by a quarter
// bit each time the store grows by a fraction 0.25/b (2.5% at 10 bits,
// 6% at 4), and the tables written before then are built again, each a
// read of the table.
//
// # The rule per table
//
// A store applies the rule with each table a run of its own, since what a
// level's tables serve differs: a lookup reaches only the table of each
// level whose key range covers its key, so under a skewed workload (a
// Zipf law over keys) the tables holding the hot keys' ranges take most
// of their level's misses, and under any workload a table covering a
// wide key range with few keys takes more than its share of them. Let
// table t of level l hold n_t of the level's n_l keys, let the store have
// served G_t lookups since it first saw t, of which m_t reached t and
// missed there (its own count, sstable.Reader.Misses), and let w_l be the
// level's misses per lookup (its counters; for L0, per L0 table). The
// table's weight is its count drawn toward its share of the level's by a
// prior of E = 100 misses,
//
//	s_t = w_l * n_t / n_l
//	w_t = s_t * (m_t + E) / (s_t * G_t + E)
//
// then the level's weights are scaled together to the level's count,
// w_t *= w_l / sum_{t in l} w_t, and each table's rate is
//
//	p_t = c * n_t / w_t
//
// as above, with c set by the budget. A table the store has not seen
// serve lookups (one just written) keeps its share s_t; with no lookups
// served at all, every w is 1 and this is Monkey's rule. The counts decay
// with a half-life of 25,000 lookups, so that the weights follow a
// workload that changes, and a store replans after every change of its
// tree and every 16,384 lookups.
//
// On the filter-memory study's tree (an L0 table, 2 L4 tables, 16 L5 and
// 74 L6 ones) under the study's Zipf mix, the rule per table after
// 100,000 lookups comes within 0.2% of the optimum that knows every
// table's misses exactly, 0.63-0.79 of the best of uniform filters, no
// bottom-level filters and Monkey's rule at 5 and 10 bits per key
// (depending on which keys the ranking makes hot), where the rule per
// level reaches 0.95-0.99 (TestAllocate_Optimum prints these, with a
// seed that draws the ranking).
//
// Where every lookup is absent, every level weighs the same and the rule
// departs from Monkey's only where a table's key range draws more or
// fewer lookups than its share of the level's keys; a store under a cap
// of the bytes Monkey's budget spent spends them (a settled store holds
// its cap to within a fraction of a percent) about as Monkey's rule
// would on the tree as it stands. Where the
// lookups find their keys, the rule's optimum bounds what any allocation
// can reach: on a tree of an L0 table and levels of 1e6, 1e7 and 1e8
// keys, 90% lookups of stored keys drawn alike and 10% absent, the
// optimum at 5 or 10 bits per key is 0.71-0.72 times the best of uniform
// filters, no bottom-level filters and Monkey's rule (TestAllocate_Optimum
// prints it, with the same figures on the filter-memory study's shape),
// so no allocation halves the wasted reads of that mix. Under a Zipf
// law a single store's figure is a lottery besides: whether a key is a
// false positive of a filter is fixed once the filter is built, so the
// few hottest absent keys waste a read on every lookup or never, and the
// test prints a standard deviation over hash functions about twice the
// expected figure at 10 bits per key.
package bloompolicy
