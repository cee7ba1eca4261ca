#!/usr/bin/env bash
# The PostgreSQL rows of `cargo bench`, on two servers in turn (about 1 min):
#
#   1. the test cluster of `.ci/pg` (fsync=off, synchronous_commit=off): the server's
#      CPU and the client's code are all there is to measure;
#   2. a durable cluster, PostgreSQL's defaults (fsync=on, synchronous_commit=on,
#      full_page_writes=on): what a deployment pays per commit.
#
#   bash benches/postgres.sh        # prints each run's PostgreSQL rows
set -euo pipefail
cd "$(dirname "$0")/.."

cargo bench --no-run >/dev/null 2>&1 || cargo bench --no-run
dirs=()
cleanup() {
    for dir in "${dirs[@]}"; do bash .ci/pg stop "$dir" 2>/dev/null || true; done
}
trap cleanup EXIT

run() {
    local title=$1 options=$2 dir url
    dir=$(mktemp -d /tmp/idem-bench-pg.XXXXXX)
    dirs+=("$dir")
    url=$(IDEM_PG_OPTIONS="$options" bash .ci/pg start "$dir" 2>/dev/null)
    echo "### $title"
    echo
    IDEM_TEST_DATABASE_URL=$url IDEM_BENCH_ONLY=postgres cargo bench 2>/dev/null \
        | awk '/^## Calls/ { on = 1 } /^## Throughput/ { on = 0 } on && /^(\| store |\|-|\| PostgreSQL |PostgreSQL server)/'
    echo
}

durable="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
run "Test cluster (fsync off), loopback" ""
run "Durable cluster (PostgreSQL's defaults), loopback" "$durable"
