#!/usr/bin/env bash
# Peer figures for idem's Redis rows: Powertools for AWS Lambda (Python)'s idempotency
# utility (@idempotent_function on RedisCachePersistenceLayer, local cache off) timing the
# same bench tool, "send the invoice for (customer, period, amount)": first calls on new
# keys and replays of 256 completed keys, 7 rounds each, median µs per call and the
# min-max over rounds, with plain redis-py commands on the same client for reference.
# See powertools_redis.py beside this file for what is measured and how it is configured.
#
#   bash benches/peers/run-powertools.sh redis://127.0.0.1:6379/0
#   IDEM_TEST_REDIS_URL=redis://127.0.0.1:6379/0 bash benches/peers/run-powertools.sh
#
# Needs python3 (with venv) and network access to PyPI: it makes a venv in a temporary
# directory, installs the pinned versions below into it, runs the bench and removes it.
# Use the server idem's Redis benches use, so both sides meet the same persistence
# settings (reported at the end, e.g. appendonly yes, appendfsync always). Extra
# arguments go to the script (--rounds, --first, --replays).
set -euo pipefail

url=${1:-${IDEM_TEST_REDIS_URL:-}}
if [ -z "$url" ]; then
    echo "usage: $0 redis://HOST:PORT/DB  (or set IDEM_TEST_REDIS_URL)" >&2
    exit 2
fi
shift || true

# The newest of each that installs here (Python 3.11), pinned exactly with what they pull
# in. boto3 is there because the idempotency package imports it on import (it ships in the
# Lambda runtime); it is not used by the Redis layer.
packages=(
    aws-lambda-powertools==3.37.0
    redis==8.1.0
    jmespath==1.1.0
    typing_extensions==4.16.0
    boto3==1.44.8
    botocore==1.44.8
    s3transfer==0.19.3
    python-dateutil==2.9.0.post0
    six==1.17.0
    urllib3==2.8.0
)

here=$(cd "$(dirname "$0")" && pwd)
venv=$(mktemp -d "${TMPDIR:-/tmp}/powertools-bench.XXXXXX")
trap 'rm -rf "$venv"' EXIT

"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
"$venv/bin/python" "$here/powertools_redis.py" "$url" "$@"
