#!/usr/bin/env bash
# run.sh: YCSB A-F on bloomkv and on Pebble v1.1.5, through Pebble's own
# `pebble bench ycsb` driver, and a table of the results.
#
# It copies cmd/pebble from the Go module cache into a temporary module,
# adds bloomkv_db.go (the bloomkv binding and the --engine flag), makes
# runTest open the store through the binding, builds, loads one store per
# engine, and runs every workload on a fresh copy of it, alternating the
# engines. See docs/ycsb-method.md.
#
# Usage: cmd/bloomkv/ycsb/run.sh [--keys N] [--values BYTES] [--duration D]
#        [--threads "1 2"] [--workloads "A B C D E F"] [--rounds R]
#        [--bloomkv-comparer mvcc|bytewise] [--point-reads seek|get]
#        [--memtable-size BYTES] [--dir DIR] [--tsv FILE] [--keep] [--markdown FILE]
#        [--driver FILE]
#        cmd/bloomkv/ycsb/run.sh --report-only --dir DIR [same options]
#        cmd/bloomkv/ycsb/run.sh --test-binding [--dir DIR]
#        cmd/bloomkv/ycsb/run.sh --build FILE
#
# --report-only prints the tables again from the results a run with --keep
# left in DIR (the rounds it finished, if it was stopped).
# --markdown also writes the tables as a Markdown page to FILE, with the
# command line, the machine, the Go version and the date (docs/ycsb.md is
# one): a page that is regenerated, never edited.
# --test-binding builds the driver and runs, in its module, the binding's
# tests and benchmarks (bloomkv_db_test.go) instead of YCSB.
# --build only builds the driver, as FILE; --driver runs a driver built so
# instead of building one, which lets a machine without Go (or without the
# module cache) run the comparison: build it where Go is
# (CGO_ENABLED=0 gives a static binary), copy it there with this script.
#
# Exit status: 0 done, 1 failure, 2 bad arguments, 3 the modules could not
# be fetched (no module cache entry and no proxy).
set -euo pipefail

pebble_version=v1.1.5
keys=1000000
values=256
duration=10s
threads="1 2"
workloads="A B C D E F"
rounds=3
comparer=mvcc
point_reads=seek
memtable_size=$((64 << 20))
dir=""
tsv=""
keep=0
report_only=0
test_binding=0
markdown=""
build_to=""
driver=""
command_line="cmd/bloomkv/ycsb/run.sh$(printf ' %q' "$@")"

usage() {
	sed -n '/^# Usage/,/^# --report-only prints/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--keys) keys=$2; shift 2 ;;
	--values) values=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--workloads) workloads=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--bloomkv-comparer) comparer=$2; shift 2 ;;
	--point-reads) point_reads=$2; shift 2 ;;
	--memtable-size) memtable_size=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--tsv) tsv=$2; shift 2 ;;
	--markdown) markdown=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--report-only) report_only=1; keep=1; shift ;;
	--test-binding) test_binding=1; shift ;;
	--build) build_to=$2; shift 2 ;;
	--driver) driver=$2; shift 2 ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
done
for n in "$keys" "$values" "$rounds" "$memtable_size"; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: $n is not a positive number" >&2; exit 2; }
done
[[ "$comparer" =~ ^(mvcc|bytewise)$ ]] || { echo "run.sh: --bloomkv-comparer is mvcc or bytewise" >&2; exit 2; }
[[ "$point_reads" =~ ^(seek|get)$ ]] || { echo "run.sh: --point-reads is seek or get" >&2; exit 2; }
for w in $workloads; do
	[[ "$w" =~ ^[A-F]$ ]] || { echo "run.sh: workload $w is not one of A-F" >&2; exit 2; }
done

if [ -n "$driver" ] && [ ! -x "$driver" ]; then
	echo "run.sh: --driver $driver is not an executable file" >&2
	exit 2
fi
if [ "$report_only" = 1 ] && [ ! -s "$dir/results.tsv" ]; then
	echo "run.sh: --report-only needs --dir with the results.tsv of a run" >&2
	exit 2
fi

abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
if [ -n "$driver" ]; then driver=$(abspath "$driver"); fi
if [ -n "$build_to" ]; then build_to=$(abspath "$build_to"); fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
if [ -z "$dir" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bloomkv-ycsb.XXXXXX")
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cleanup() {
	if [ "$keep" = 0 ]; then
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

# gofail runs a go command whose failure, when it comes from fetching
# modules, exits 3; any other failure exits 1.
gofail() {
	local log=$dir/go.log
	if "$@" >"$log" 2>&1; then
		return 0
	fi
	cat "$log" >&2
	if grep -Eq 'dial tcp|no such host|connection refused|i/o timeout|TLS handshake|GOPROXY=off|GOFLAGS=-mod=mod|module lookup disabled|403 Forbidden|404 Not Found|proxy\.golang' "$log"; then
		echo "run.sh: could not fetch the modules" >&2
		exit 3
	fi
	exit 1
}

# build makes $dir/pebble-ycsb: cmd/pebble with the binding.
build() {
	local src mod
	src=$(cd "$repo" && go env GOMODCACHE)/github.com/cockroachdb/pebble@$pebble_version
	if [ ! -d "$src/cmd/pebble" ]; then
		(cd "$repo" && gofail go mod download "github.com/cockroachdb/pebble@$pebble_version")
	fi
	mod=$dir/src
	rm -rf "$mod"
	mkdir -p "$mod"
	find "$src/cmd/pebble" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$mod" \;
	chmod u+w "$mod"/*.go
	cp "$here/bloomkv_db.go" "$here/bloomkv_db_test.go" "$mod/"
	patch_once "$mod/test.go" 'db := newPebbleDB(dir)' 's/db := newPebbleDB(dir)/db := newEngineDB(dir)/'
	patch_once "$mod/db.go" 'MemTableSize:                64 << 20,' \
		's/MemTableSize:                64 << 20,/MemTableSize: uint64(memTableSize),/'
	# The final summary prints latencies in ms with one decimal; three
	# keep the microseconds.
	patch_once "$mod/ycsb.go" '%8.1f %8.1f %8.1f %8.1f %8.1f\n' \
		's/%8\.1f %8\.1f %8\.1f %8\.1f %8\.1f\\n/%8.3f %8.3f %8.3f %8.3f %8.3f\\n/'
	# cmd/pebble imports Pebble's internal packages, which only code under
	# github.com/cockroachdb/pebble/ may do: hence the module's name.
	cat >"$mod/go.mod" <<-EOF
		module github.com/cockroachdb/pebble/cmd/bloomkvycsb

		$(grep -m1 '^go ' "$repo/go.mod")

		require (
			github.com/bloomkv/bloomkv v0.0.0
			github.com/cockroachdb/pebble $pebble_version
		)

		replace github.com/bloomkv/bloomkv => $repo
	EOF
	cp "$repo/go.sum" "$mod/"
	(cd "$mod" && gofail go mod tidy)
	(cd "$mod" && gofail go build -tags bloomkvycsb -o "$dir/pebble-ycsb" .)
}

# patch_once applies the sed expression to the file, which must hold the
# fixed string exactly once.
patch_once() {
	local n
	n=$(grep -cF -- "$2" "$1" || true)
	if [ "$n" != 1 ]; then
		echo "run.sh: expected one '$2' in $(basename "$1"), found $n: cmd/pebble changed" >&2
		exit 1
	fi
	sed -i -e "$3" "$1"
}

# ycsb runs the driver on the store in $1 with engine $2, from $dir/cwd,
# where it leaves its CPU profiles.
ycsb() {
	local db=$1 e=$2
	shift 2
	if [ "$e" = bloomkv ]; then
		set -- --bloomkv-comparer "$comparer" "$@"
	fi
	mkdir -p "$dir/cwd"
	(cd "$dir/cwd" && "$dir/pebble-ycsb" bench ycsb "$db" --engine "$e" --point-reads "$point_reads" \
		--memtable-size "$memtable_size" "$@")
}

# load writes $keys records into $dir/<engine>.loaded, then opens it again
# with --settle-at-open: flushed (Pebble flushes what it replays from the
# WAL in Open, bloomkv keeps it as its memtable) and no compaction due, so
# that every run of either engine starts from all data in tables.
load() {
	local e=$1 start
	start=$(date +%s.%N)
	ycsb "$dir/$e.loaded" "$e" --wipe --initial-keys "$keys" --values "$values" \
		--workload read=1 --num-ops 1 --duration 0 --wait-compactions >"$dir/logs/load-$e.log" 2>&1 ||
		{ cat "$dir/logs/load-$e.log" >&2; exit 1; }
	ycsb "$dir/$e.loaded" "$e" --settle-at-open --initial-keys 0 --prepopulated-keys "$keys" --values "$values" \
		--workload read=1 --num-ops 1 --duration 0 >"$dir/logs/settle-$e.log" 2>&1 ||
		{ cat "$dir/logs/settle-$e.log" >&2; exit 1; }
	printf 'load\t%s\t%s\t%s\n' "$e" "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" \
		"$(du -sk "$dir/$e.loaded" | cut -f1)" >>"$dir/loads.tsv"
}

# run runs one workload on a copy of the loaded store and appends its
# figures to $dir/results.tsv: round, threads, workload, engine, op, ops/s,
# p50, p99 and max (ms); op "all" is the workload's whole throughput.
run() {
	local round=$1 c=$2 w=$3 e=$4 log
	log=$dir/logs/$round-$c-$w-$e.log
	rm -rf "$dir/db"
	cp -r "$dir/$e.loaded" "$dir/db"
	ycsb "$dir/db" "$e" --workload "$w" --initial-keys 0 --prepopulated-keys "$keys" \
		--values "$values" --duration "$duration" --concurrency "$c" >"$log" 2>&1 ||
		{ cat "$log" >&2; exit 1; }
	awk -v pre="$round\t$c\t$w\t$e" -v logf="$log" '
		/^____optype__elapsed_____ops\(total\)/ { summary = 1; next }
		summary && NF == 0 { summary = 0 }
		summary && NF == 9 { printf "%s\t%s\t%s\t%s\t%s\t%s\n", pre, $1, $4, $6, $8, $9; ops++ }
		/^Benchmarkycsb\// { printf "%s\tall\t%s\t-\t-\t-\n", pre, $3; total++ }
		END { if (!ops || total != 1) { print "run.sh: no YCSB summary in " logf > "/dev/stderr"; exit 1 } }
	' "$log" >>"$dir/results.tsv"
}

# median reads "key<TAB>value" lines and prints "key<TAB>median" per key.
median() {
	sort -t "$(printf '\t')" -k1,1 -k2,2g | awk -F '\t' '
		function flush() { if (n) printf "%s\t%s\n", key, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
		$1 != key { flush(); key = $1; n = 0 }
		{ v[++n] = $2 }
		END { flush() }'
}

# report prints the throughput and latency tables from results.tsv.
report() {
	local med
	med=$(awk -F '\t' -v OFS='\t' '{
		k = $2 SUBSEP $3 SUBSEP $5 SUBSEP $4
		print k SUBSEP "ops", $6
		if ($5 != "all") { print k SUBSEP "p50", $7; print k SUBSEP "p99", $8; print k SUBSEP "max", $9 }
	}' "$dir/results.tsv" | median)
	rounds=$(cut -f1 "$dir/results.tsv" | sort -u | wc -l)
	echo "YCSB through Pebble $pebble_version's cmd/pebble: $keys records of $values B, $duration per run," \
		"medians of $rounds alternated round(s), bloomkv's comparer $comparer, point reads by $point_reads," \
		"memtables of $memtable_size B;" \
		"ratio = bloomkv / Pebble (above 1: bloomkv ahead)"
	echo
	echo "Throughput (ops/s):"
	echo
	printf '| workload |'
	for c in $threads; do printf ' bloomkv, %s thr | Pebble, %s thr | ratio |' "$c" "$c"; done
	printf '\n|---|'
	for c in $threads; do printf -- '---:|---:|---:|'; done
	echo
	for w in $workloads; do
		printf '| %s |' "$w"
		for c in $threads; do
			printf '%s\n' "$med" | awk -F '\t' -v want="$c$(printf '\034')$w" '
				{ split($1, k, SUBSEP) }
				k[1] SUBSEP k[2] == want && k[3] == "all" && k[5] == "ops" { v[k[4]] = $2 }
				END { printf " %.0f | %.0f | %.2f |", v["bloomkv"], v["pebble"], (v["pebble"] ? v["bloomkv"] / v["pebble"] : 0) }'
		done
		echo
	done
	echo
	# The lowest and the highest throughput ratio, for the README's headline.
	printf '%s\n' "$med" | awk -F '\t' '
		{ split($1, k, SUBSEP) }
		k[3] == "all" && k[5] == "ops" { v[k[1] " thr, " k[2], k[4]] = $2; ids[k[1] " thr, " k[2]] = 1 }
		END {
			for (id in ids) {
				if (!v[id, "pebble"]) continue
				r = v[id, "bloomkv"] / v[id, "pebble"]
				if (!n++ || r < lo) { lo = r; loid = id }
				if (n == 1 || r > hi) { hi = r; hiid = id }
			}
			if (n) printf "Throughput ratio, bloomkv / Pebble: from %.2f (%s) to %.2f (%s).\n\n", lo, loid, hi, hiid
		}'
	echo "Latency (ms), bloomkv / Pebble:"
	echo
	echo "| threads | workload | op | p50 | p99 | max |"
	echo "|---:|---|---|---|---|---|"
	printf '%s\n' "$med" | awk -F '\t' '
		{ split($1, k, SUBSEP) }
		k[3] != "all" && k[5] != "ops" { id = k[1] SUBSEP k[2] SUBSEP k[3]; if (!(id in seen)) { seen[id] = 1; ids[++n] = id }; v[id, k[5], k[4]] = $2 }
		END {
			for (i = 1; i <= n; i++) {
				split(ids[i], k, SUBSEP)
				printf "| %s | %s | %s |", k[1], k[2], k[3]
				split("p50 p99 max", q, " ")
				for (j = 1; j <= 3; j++) printf " %.3f / %.3f |", v[ids[i], q[j], "bloomkv"], v[ids[i], q[j], "pebble"]
				printf "\n"
			}
		}' | sort -t '|' -k2,2n -k3,3 -k4,4
	echo
	echo "Loads ($keys records, flushed, until compactions settle; seconds, KiB on disk):"
	awk -F '\t' '{ printf "  %-8s %8s s %10s KiB\n", $2, $3, $4 }' "$dir/loads.tsv"
}

# go_version prints the Go version the driver was built with: go's own
# answer where Go is installed, else the version string every Go binary
# carries.
go_version() {
	if [ ! -f "$dir/pebble-ycsb" ]; then
		(cd "$repo" && go env GOVERSION)
	elif command -v go >/dev/null; then
		go version "$dir/pebble-ycsb" | awk '{ print $2 }'
	else
		grep -a -o -m1 'go1\.[0-9][0-9]*\(\.[0-9][0-9]*\)\{0,1\}' "$dir/pebble-ycsb" | head -n1
	fi
}

# write_markdown writes the report as a Markdown page to $markdown.
write_markdown() {
	{
		echo "# YCSB against Pebble"
		echo
		echo "Generated by \`$command_line\` on $(date -u +%Y-%m-%d)" \
			"($(uname -s | tr '[:upper:]' '[:lower:]')/$(uname -m), $(nproc) CPUs, $(go_version))." \
			"Do not edit: run the command again to refresh it. How the runs are made: [ycsb-method.md](ycsb-method.md)."
		echo
		report | sed 's/^  \([a-z]\)/- \1/'
	} >"$markdown"
}

if [ "$report_only" = 1 ]; then
	report
	if [ -n "$markdown" ]; then write_markdown; fi
	exit 0
fi
mkdir -p "$dir/logs"
: >"$dir/results.tsv"
: >"$dir/loads.tsv"
if [ -n "$driver" ]; then
	cp "$driver" "$dir/pebble-ycsb"
else
	echo "building cmd/pebble $pebble_version with the bloomkv binding in $dir" >&2
	build
fi
if [ -n "$build_to" ]; then
	cp "$dir/pebble-ycsb" "$build_to"
	exit
fi
if [ "$test_binding" = 1 ]; then
	(cd "$dir/src" && go test -tags bloomkvycsb -count=1 -v -run 'TestBloomkvBinding' \
		-bench 'BenchmarkBloomkvBinding' -benchmem -benchtime 2000x .)
	exit
fi
for e in bloomkv pebble; do
	echo "loading $keys records into $e" >&2
	load "$e"
done
for round in $(seq 1 "$rounds"); do
	if [ $((round % 2)) = 1 ]; then engines="bloomkv pebble"; else engines="pebble bloomkv"; fi
	for c in $threads; do
		for w in $workloads; do
			for e in $engines; do
				echo "round $round/$rounds: workload $w, $c thread(s), $e ($(uptime | sed 's/.*load/load/'))" >&2
				run "$round" "$c" "$w" "$e"
			done
		done
	done
done
report
if [ -n "$markdown" ]; then
	write_markdown
fi
if [ -n "$tsv" ]; then
	cp "$dir/results.tsv" "$tsv"
fi
