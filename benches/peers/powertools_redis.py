"""Powertools for AWS Lambda (Python): its idempotency utility on Redis, timed per call.

The peer figures beside idem's Redis rows (benches/calls/redis.rs): the same bench tool,
"send the invoice for (customer, period, amount)", made idempotent with
`@idempotent_function` and `RedisCachePersistenceLayer`, against the same kind of server.

    python benches/peers/powertools_redis.py redis://127.0.0.1:6379/0
    (or IDEM_TEST_REDIS_URL=...; run-powertools.sh makes the venv with pinned versions)

Measured, in rounds (one warm-up round first, thrown away), each round's sample being the
mean time per call over its batch, and reported as the median over rounds (min-max):

- first call: a batch of customers never seen before, each called once (the body runs);
- replay: a pool of 256 completed keys called in a cycle (the body must not run);
- the same redis-py commands without Powertools, on the same client and connection pool:
  the plain GET of a stored record, and the commands Powertools sends for a replay
  (SET NX + GET) and for a first call (SET NX EX + SET EX).

Configurations of Powertools (both with the local in-memory cache off, so that every call
goes to Redis, as idem's store does):

- "key only": the key is [customer, period] (event_key_jmespath); no payload validation,
  so a changed amount replays the old answer instead of a conflict;
- "key + amount": payload_validation_jmespath="amount", idem's compare = [amount]. The
  installed Redis layer writes the validation hash with the in-progress record but drops it
  when it completes the record, so an identical replay of a completed call fails with
  IdempotencyValidationError (the same bug as powertools-lambda-typescript#5705, fixed
  there). The script checks whether that is still so; if it is, this configuration runs on
  a subclass whose completion keeps the hash (the TypeScript fix, one JSON field more).

Keys are "powertools-bench-<pid>-..." and are deleted at the end.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import warnings

import redis

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyValidationError
    from aws_lambda_powertools.utilities.idempotency.persistence.redis import RedisCachePersistenceLayer

PERIOD = "2026-10"
AMOUNT = 120.0
OTHER_AMOUNT = 150.0
POOL = 256
PREFIX = f"powertools-bench-{os.getpid()}"


class FakeLambdaContext:
    """What `idempotent_function` reads of a Lambda context outside Lambda: the remaining
    time, from which it sets the in-progress record's expiry (its lease). A 15-minute
    invocation (Lambda's longest) that started when the bench did."""

    function_name = "powertools-bench"
    memory_limit_in_mb = 1024
    aws_request_id = "bench"

    def __init__(self, seconds: float = 900.0):
        self._deadline = time.time() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.time()) * 1000)


class Effects:
    def __init__(self):
        self.total = 0
        self.per_customer: dict[str, int] = {}


def keep_validation_on_completion(base):
    """The Redis layer with the validation hash kept in the completed record (the fix of
    powertools-lambda-typescript#5706, applied to the Python layer's `_update_record`)."""

    class Patched(base):
        def _update_record(self, data_record):
            mapping = {
                self.data_attr: data_record.response_data,
                self.status_attr: data_record.status,
                self.expiry_attr: data_record.expiry_timestamp,
            }
            if self.payload_validation_enabled:
                mapping[self.validation_key_attr] = data_record.payload_hash
            ttl = self._get_expiry_second(data_record.expiry_timestamp)
            self.client.set(name=data_record.idempotency_key, value=self._json_serializer(mapping), ex=ttl)

    Patched.__name__ = f"{base.__name__}+validation kept"
    return Patched


def mark_replayed(response, data_record):
    """Powertools' response hook runs on every answer taken from the store: it sets the
    flag that idem's Invoice has, so a replay is seen to be one."""
    response["replayed"] = True
    return response


def make_tool(client, label: str, validate: bool, layer_class, context):
    """The bench tool with Powertools: returns (send_invoice, effects, store)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "use CachePersistenceLayer", the same class
        store = layer_class(client=client)
    config = IdempotencyConfig(
        event_key_jmespath="[customer, period]",
        payload_validation_jmespath="amount" if validate else "",
        use_local_cache=False,
        expires_after_seconds=3600,  # the default; also the key's EX
        hash_function="md5",  # the default
        response_hook=mark_replayed,
    )
    config.register_lambda_context(context)
    effects = Effects()

    @idempotent_function(
        data_keyword_argument="invoice",
        persistence_store=store,
        config=config,
        key_prefix=f"{PREFIX}-{label}",
    )
    def send_invoice(*, invoice: dict) -> dict:
        """Create and send the invoice for one customer and billing period."""
        n = effects.total
        effects.total += 1
        customer = invoice["customer"]
        effects.per_customer[customer] = effects.per_customer.get(customer, 0) + 1
        return {"id": f"inv-{n}", "amount": invoice["amount"], "replayed": False}

    return send_invoice, effects, store


def invoice(customer: str, amount: float = AMOUNT) -> dict:
    return {"customer": customer, "period": PERIOD, "amount": amount, "memo": ""}


class Side:
    """One configuration of Powertools, with its bookkeeping for the checks."""

    def __init__(self, client, label, validate, layer_class, context):
        self.label = label
        self.call, self.effects, self.store = make_tool(client, label, validate, layer_class, context)
        self.next_customer = 0
        self.first_ids: dict[str, str] = {}
        self.pool: list[str] = []
        self.cursor = 0

    @property
    def label_text(self) -> str:
        return {"key": "key only", "amount": "key + amount"}[self.label]

    def fresh(self, n: int) -> list[dict]:
        start = self.next_customer
        self.next_customer += n
        return [invoice(f"Acme {i}") for i in range(start, start + n)]

    def first_calls(self, n: int) -> float:
        args = self.fresh(n)
        before = self.effects.total
        call = self.call
        answers = []
        start = time.perf_counter_ns()
        for a in args:
            answers.append(call(invoice=a))
        elapsed = time.perf_counter_ns() - start
        assert self.effects.total == before + n, f"{self.label}: {n} first calls ran {self.effects.total - before} bodies"
        for a, answer in zip(args, answers):
            assert self.effects.per_customer[a["customer"]] == 1, a
            assert answer["replayed"] is False and answer["amount"] == AMOUNT, answer
            self.first_ids[a["customer"]] = answer["id"]
        return elapsed / n / 1000

    def seed_pool(self):
        args = self.fresh(POOL)
        for a in args:
            self.first_ids[a["customer"]] = self.call(invoice=a)["id"]
        self.pool = [a["customer"] for a in args]

    def replays(self, n: int) -> float:
        args = []
        for _ in range(n):
            self.cursor = (self.cursor + 1) % len(self.pool)
            args.append(invoice(self.pool[self.cursor]))
        before = self.effects.total
        call = self.call
        answers = []
        start = time.perf_counter_ns()
        for a in args:
            answers.append(call(invoice=a))
        elapsed = time.perf_counter_ns() - start
        assert self.effects.total == before, f"{self.label}: replays ran {self.effects.total - before} bodies"
        for a, answer in zip(args, answers):
            assert answer["replayed"] is True and answer["id"] == self.first_ids[a["customer"]], (a, answer)
        return elapsed / n / 1000

    def changed_amount(self) -> str:
        """What a call with a changed amount on a completed key answers."""
        customer = self.pool[0]
        before = self.effects.total
        try:
            answer = self.call(invoice=invoice(customer, OTHER_AMOUNT))
            outcome = f"the old answer (amount {answer['amount']}, replayed={answer['replayed']})"
        except IdempotencyValidationError:
            outcome = "IdempotencyValidationError (a conflict)"
        assert self.effects.total == before, "a changed amount ran the body"
        return outcome


def stock_validation_replays(client, context) -> bool:
    """Whether the installed layer, with payload validation, replays an identical call."""
    call, effects, _ = make_tool(client, "probe", True, RedisCachePersistenceLayer, context)
    args = invoice("Probe")
    call(invoice=args)
    try:
        call(invoice=args)
    except IdempotencyValidationError:
        return False
    assert effects.total == 1
    return True


class Reference:
    """The redis-py commands alone, on the same client."""

    def __init__(self, client, pool_keys: list[str], record: str):
        self.client = client
        self.pool_keys = pool_keys
        self.record = record
        self.cursor = 0
        self.next_key = 0

    def cycle(self, n):
        keys = []
        for _ in range(n):
            self.cursor = (self.cursor + 1) % len(self.pool_keys)
            keys.append(self.pool_keys[self.cursor])
        return keys

    def get(self, n: int) -> float:
        keys = self.cycle(n)
        get = self.client.get
        start = time.perf_counter_ns()
        for k in keys:
            value = get(k)
        elapsed = time.perf_counter_ns() - start
        assert value
        return elapsed / n / 1000

    def setnx_get(self, n: int) -> float:
        keys = self.cycle(n)
        c = self.client
        start = time.perf_counter_ns()
        for k in keys:
            if not c.set(name=k, value=self.record, ex=3600, nx=True):
                value = c.get(k)
        elapsed = time.perf_counter_ns() - start
        assert value
        return elapsed / n / 1000

    def setnx_set(self, n: int) -> float:
        start_key = self.next_key
        self.next_key += n
        keys = [f"{PREFIX}-ref:{i}" for i in range(start_key, start_key + n)]
        c = self.client
        start = time.perf_counter_ns()
        for k in keys:
            assert c.set(name=k, value=self.record, ex=3600, nx=True)
            c.set(name=k, value=self.record, ex=3600)
        elapsed = time.perf_counter_ns() - start
        return elapsed / n / 1000


def summary(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), min(samples), max(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default=os.environ.get("IDEM_TEST_REDIS_URL", ""))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--first", type=int, default=200, help="first calls per round")
    parser.add_argument("--replays", type=int, default=1000, help="replays per round")
    opts = parser.parse_args()
    if not opts.url:
        print("usage: powertools_redis.py redis://HOST:PORT/DB (or set IDEM_TEST_REDIS_URL)", file=sys.stderr)
        return 2

    # decode_responses=True as in Powertools' own example of a client passed in.
    client = redis.Redis.from_url(opts.url, decode_responses=True)
    server = client.info("server")
    persistence = client.config_get("append*")
    context = FakeLambdaContext()

    try:
        stock_ok = stock_validation_replays(client, context)
        validating_layer = RedisCachePersistenceLayer if stock_ok else keep_validation_on_completion(
            RedisCachePersistenceLayer
        )
        sides = [
            Side(client, "key", False, RedisCachePersistenceLayer, context),
            Side(client, "amount", True, validating_layer, context),
        ]
        for side in sides:
            side.seed_pool()
        pool_keys = sorted(client.scan_iter(match=f"{PREFIX}-key#*", count=1000))
        assert len(pool_keys) == POOL, len(pool_keys)
        record = client.get(pool_keys[0])
        reference = Reference(client, pool_keys, record)

        rows = {}  # name -> (what, list of samples)
        measures = []
        for side in sides:
            measures.append((f"Powertools, {side.label_text} | first call", side.first_calls, opts.first))
            measures.append((f"Powertools, {side.label_text} | replay", side.replays, opts.replays))
        measures += [
            ("redis-py GET of a stored record | replay's read alone", reference.get, opts.replays),
            ("redis-py SET NX + GET (a replay's commands) | replay", reference.setnx_get, opts.replays),
            ("redis-py SET NX EX + SET EX (a first call's commands) | first call", reference.setnx_set, opts.first),
        ]
        for round_ in range(opts.rounds + 1):
            # Rotate the order each round so that drifts hit every row alike.
            order = measures[round_ % len(measures):] + measures[: round_ % len(measures)]
            for name, run, n in order:
                sample = run(n)
                if round_ > 0:  # round 0 is the warm-up
                    rows.setdefault(name, []).append(sample)

        conflicts = {side.label_text: side.changed_amount() for side in sides}
        totals = {side.label_text: side.effects.total for side in sides}
        expected = POOL + (opts.rounds + 1) * opts.first
        for label, total in totals.items():
            assert total == expected, f"{label}: {total} bodies ran, {expected} expected"
    finally:
        doomed = list(client.scan_iter(match=f"{PREFIX}-*", count=1000))
        for i in range(0, len(doomed), 500):
            client.delete(*doomed[i : i + 500])

    print(f"## Powertools for AWS Lambda (Python) idempotency on Redis, {opts.rounds} rounds")
    print()
    print(f"per call, median of {opts.rounds} rounds (min-max); a round is {opts.first} first calls "
          f"or {opts.replays} replays over {POOL} keys; one warm-up round not counted")
    print()
    print("| what | call | median µs | min-max µs |")
    print("|---|---|---:|---:|")
    for name, _, _ in measures:
        what, call = name.split(" | ")
        median, low, high = summary(rows[name])
        print(f"| {what} | {call} | {median:.1f} | {low:.1f}-{high:.1f} |")
    print()
    print("checks: every first call ran its body once, no replay ran it "
          f"({', '.join(f'{k}: {v} bodies' for k, v in totals.items())}); "
          "every replay returned the first call's invoice id")
    for label, outcome in conflicts.items():
        print(f"changed amount on a completed key, {label}: {outcome}")
    if stock_ok:
        print("stock layer with payload validation replays identical calls: measured as shipped")
    else:
        print("stock layer with payload validation: an identical replay of a completed call raises "
              "IdempotencyValidationError (the completed record drops the validation hash); "
              "'key + amount' runs on a subclass that keeps it")
    print()
    print(f"python {platform.python_version()} ({platform.python_implementation()}), "
          f"aws-lambda-powertools {importlib.metadata.version('aws-lambda-powertools')}, "
          f"redis-py {redis.__version__} (hiredis: {'yes' if redis.utils.HIREDIS_AVAILABLE else 'no'}), "
          f"jmespath {importlib.metadata.version('jmespath')}")
    print(f"Redis server {server.get('redis_version')} ({server.get('os')}), "
          + ", ".join(f"{k}={v}" for k, v in sorted(persistence.items())))
    print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + f" on {os.cpu_count()} CPUs")
    print(f"record stored per key (Powertools, key only): {len(record)} bytes: {record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
