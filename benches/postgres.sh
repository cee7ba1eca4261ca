#!/usr/bin/env bash
# The PostgreSQL rows of `cargo bench`, on three servers in turn (about 1.5 min):
#
#   1. the test cluster of `.ci/pg` (fsync=off, synchronous_commit=off): the server's
#      CPU and the client's code are all there is to measure;
#   2. a durable cluster, PostgreSQL's defaults (fsync=on, synchronous_commit=on,
#      full_page_writes=on): what a deployment pays per commit;
#   3. (as root) the durable cluster with 100 us added to each direction of loopback
#      traffic (tc netem), like a database on the next machine (0.2 ms round trips).
#      This delays every loopback packet on the machine while it runs; the delay is
#      removed on exit.
#
#   bash benches/postgres.sh        # prints each run's PostgreSQL rows
set -euo pipefail
cd "$(dirname "$0")/.."

cargo bench --no-run >/dev/null 2>&1 || cargo bench --no-run
dirs=()
netem=""
cleanup() {
    if [[ -n "$netem" ]]; then tc qdisc del dev lo root 2>/dev/null || true; fi
    for dir in "${dirs[@]}"; do bash .ci/pg stop "$dir" 2>/dev/null || true; done
}
trap cleanup EXIT

run() {
    local title=$1 options=$2 dir url
    dir=$(mktemp -d /tmp/idem-bench-pg.XXXXXX)
    dirs+=("$dir")
    url=$(IDEM_PG_OPTIONS="$options" bash .ci/pg start "$dir" 2>/dev/null)
    if [[ -n "${3:-}" ]]; then
        tc qdisc add dev lo root netem delay 100us
        netem=1
    fi
    echo "### $title"
    echo
    IDEM_TEST_DATABASE_URL=$url IDEM_BENCH_ONLY=postgres cargo bench 2>/dev/null \
        | awk '/^## Calls/ { on = 1 } /^## Throughput/ { on = 0 } on && /^(\| store |\|-|\| PostgreSQL |PostgreSQL server)/'
    echo
    if [[ -n "$netem" ]]; then
        tc qdisc del dev lo root
        netem=""
    fi
}

durable="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
run "Test cluster (fsync off), loopback" ""
run "Durable cluster (PostgreSQL's defaults), loopback" "$durable"
if [[ $(id -u) -eq 0 ]] && command -v tc >/dev/null; then
    run "Durable cluster, 0.2 ms round trips (tc netem on loopback)" "$durable" netem
else
    echo "(the run with network latency needs root and tc: skipped)"
fi
