//! The Lua scripts, one per transition. Each runs atomically on the server, reads the
//! server's clock (`TIME`) and touches one record's hash (and, for a charged reservation
//! or its refund, one budget window's; the transitions also keep the operator's indexes
//! of running and settled records): a record is never read in one command and written in
//! another, so no stale read can overwrite a newer state.
//!
//! A record is a hash with `state`, `token`, `request`, `created`, `updated` and then
//! `lease` and `progress` (in progress) or `result` and `retain` (settled), and for a
//! charged reservation `cw` and `ca` (the budget window's name, the amount charged). A
//! hash with a `token` and no `state` is a tombstone: what a deleted record leaves so that
//! the next reservation's token is larger (it expires; tokens also start from the server's
//! clock in microseconds, so they keep growing after it is gone). Numbers are kept as
//! decimal text; Lua's numbers are doubles, exact below 2^53 (server microseconds are
//! about 2^51). Budget amounts are not: a window counts up to `i64::MAX` millionths, so the
//! scripts add them with Redis's own 64-bit integers (`HINCRBY`) and compare them in two
//! parts, each below 2^53 (`sum_exceeds`).

use std::sync::LazyLock;

use redis::Script;

/// What every script may call: the server's clock, numbers as text, the next token.
macro_rules! with_prelude {
    ($body:expr) => {
        concat!(
            r#"
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2])
end
local function now_ms()
  local s, us = clock()
  return s * 1000 + math.floor(us / 1000)
end
local function num(n)
  return string.format('%.0f', n)
end
local function next_token(key)
  local s, us = clock()
  local previous = tonumber(redis.call('HGET', key, 'token') or '0') or 0
  return math.max(previous + 1, s * 1000000 + us)
end
-- An integer in decimal text as two numbers, high * 1e9 + low, each exact in a double.
local function parts(text)
  local negative = string.sub(text, 1, 1) == '-'
  if negative then text = string.sub(text, 2) end
  local high, low = tonumber(string.sub(text, 1, -10)) or 0, tonumber(string.sub(text, -9))
  if negative then return -high, -low end
  return high, low
end
-- Whether a + b > c + d, for integers in decimal text, exactly (their doubles may not be).
local function sum_exceeds(a, b, c, d)
  local ah, al = parts(a)
  local bh, bl = parts(b)
  local ch, cl = parts(c)
  local dh, dl = parts(d)
  local high, low = ah + bh - ch - dh, al + bl - cl - dl
  while low < 0 do high, low = high - 1, low + 1e9 end
  while low >= 1e9 do high, low = high + 1, low - 1e9 end
  return high > 0 or (high == 0 and low > 0)
end
-- The most a budget window counts, in millionths: i64::MAX, as HINCRBY counts.
local COUNTS_UP_TO = '9223372036854775807'
local function expire_at(key, at)
  if at < 4503599627370496 then redis.call('PEXPIREAT', key, num(at)) end
end
local function refund(key)
  local c = redis.call('HMGET', key, 'cw', 'ca')
  if c[1] and redis.call('EXISTS', c[1]) == 1 then
    if redis.call('HINCRBY', c[1], 'used', '-' .. c[2]) < 0 then redis.call('HSET', c[1], 'used', '0') end
  end
end
local function bury(key, token, tombstone_ms)
  redis.call('DEL', key)
  redis.call('HSET', key, 'token', token)
  redis.call('PEXPIRE', key, tombstone_ms)
end
-- A reservation's answer for the record that exists: {'existing', now, field, value, ...}.
local function existing(key, now)
  local found = redis.call('HGETALL', key)
  table.insert(found, 1, num(now))
  table.insert(found, 1, 'existing')
  return found
end
-- A new in-progress record from ARGV (request, lease ms, namespace, key), indexed as
-- running; a tombstone's expiry goes with it. Returns its token.
local function create(key, index, now)
  local token = num(next_token(key))
  redis.call('DEL', key)
  redis.call('HSET', key, 'state', 'in_progress', 'token', token, 'request', ARGV[1], 'created', num(now),
    'updated', num(now), 'lease', num(now + tonumber(ARGV[2])), 'ns', ARGV[3], 'key', ARGV[4])
  redis.call('ZADD', index, num(now), key)
  return token
end
-- Charges `amount` to the window of the budget whose names start with `prefix` that holds
-- now, unless that would take it past its limit (or past what it counts) and `past` is not
-- '1'; a new window goes in `index`. `legacy` (or '') is what an older version named the
-- window. Returns the window's name and start, or nil and the `over` answer.
local function charge_window(index, prefix, legacy, budget, scope, window_ms, limit, amount, past, kept_ms, now)
  local start = num(now - (now % tonumber(window_ms)))
  local window = prefix .. start
  if legacy ~= '' and redis.call('EXISTS', window) == 0 and redis.call('EXISTS', legacy .. start) == 1 then
    window = legacy .. start
  end
  local w = redis.call('HMGET', window, 'used', 'raised')
  local used, raised = w[1] or '0', w[2] or '0'
  if sum_exceeds(used, amount, COUNTS_UP_TO, '0') or (past ~= '1' and sum_exceeds(used, amount, limit, raised)) then
    local found = redis.call('HGETALL', window)
    table.insert(found, 1, start)
    table.insert(found, 1, 'over')
    return nil, found
  end
  if not w[1] then redis.call('SADD', index, window) end
  redis.call('HSET', window, 'budget', budget, 'scope', scope, 'start', start, 'window', window_ms, 'limit', limit)
  redis.call('HSETNX', window, 'raised', '0')
  redis.call('HINCRBY', window, 'used', amount)
  expire_at(window, tonumber(start) + tonumber(window_ms) + tonumber(kept_ms))
  return window, start
end
local function held(key, token)
  local r = redis.call('HMGET', key, 'state', 'token')
  return r[1] == 'in_progress' and (token == '' or r[2] == token), r[2]
end
"#,
            $body
        )
    };
}

/// Reserve, without a budget or (on a cluster, see `charges.rs`) carrying a charge already
/// made. KEYS: record, the running index, and with a charge the shard's charges. ARGV:
/// request, lease ms, namespace, key, and with a charge: the window, the charge id, the
/// amount, when the charges' entry may go (ms). Returns `{'existing', now, field, value,
/// ...}`, `{'acquired', token}`, or `{'voided'}` when a repair voided the charge.
const RESERVE: &str = with_prelude!(
    r#"
local now = now_ms()
if redis.call('HEXISTS', KEYS[1], 'state') == 1 then return existing(KEYS[1], now) end
if ARGV[5] then
  local charge = ARGV[5] .. '\n' .. ARGV[6]
  if redis.call('ZSCORE', KEYS[3], 'v\n' .. charge) then return {'voided'} end
  redis.call('ZADD', KEYS[3], ARGV[8], 'h\n' .. charge)
end
local token = create(KEYS[1], KEYS[2], now)
if ARGV[5] then redis.call('HSET', KEYS[1], 'cw', ARGV[5], 'ci', ARGV[6], 'ca', ARGV[7]) end
return {'acquired', token}
"#
);

/// Reserve and charge a budget window in one step, on one server. KEYS: record, the
/// running index, the windows' index. ARGV: request, lease ms, namespace, key, what the
/// window's name starts with (its start follows: `Keys::window`), budget, scope, window
/// ms, limit, amount, past limit (`1`/`0`), how long a window is kept after it ends (ms),
/// what the window's name started with before names were readable
/// (`Keys::legacy_window_prefix`: such a window, made by an older version, is charged
/// under its name until it expires). Returns as [`RESERVE`], or `{'over', start, field,
/// value, ...}` with the window's fields.
const RESERVE_CHARGED: &str = with_prelude!(
    r#"
local now = now_ms()
if redis.call('HEXISTS', KEYS[1], 'state') == 1 then return existing(KEYS[1], now) end
local window, over = charge_window(KEYS[3], ARGV[5], ARGV[13], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
  ARGV[11], ARGV[12], now)
if not window then return over end
local token = create(KEYS[1], KEYS[2], now)
redis.call('HSET', KEYS[1], 'cw', window, 'ca', ARGV[10])
return {'acquired', token}
"#
);

/// On a cluster, charge a budget window before the reservation (see `charges.rs`), as a
/// pending charge with an id. KEYS: the windows' index of the window's shard. ARGV: what
/// the window's name starts with, budget, scope, window ms, limit, amount, past limit,
/// how long a window is kept after it ends (ms), the record the charge is for. Returns
/// `{'charged', window, charge id}` or `{'over', start, field, value, ...}`.
const CHARGE: &str = with_prelude!(
    r#"
local now = now_ms()
local window, over = charge_window(KEYS[1], ARGV[1], '', ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7],
  ARGV[8], now)
if not window then return over end
local id = redis.call('HINCRBY', window, 'charges', 1)
redis.call('HSET', window, 'p:' .. id, num(now) .. ' ' .. ARGV[6] .. ' ' .. ARGV[9])
return {'charged', window, id}
"#
);

/// A pending charge is held by its record: it is no longer pending. KEYS: window. ARGV:
/// charge id.
const CONFIRM: &str = r#"
redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1])
return 1
"#;

/// Give a charge back to its window, once whoever asks: a refunded id is marked `r:<id>`.
/// KEYS: window. ARGV: charge id, amount. Returns 1, or 0 when already refunded or the
/// window is gone.
const REFUND: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'r:' .. ARGV[1], '1') == 0 then return 0 end
redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1])
if redis.call('HINCRBY', KEYS[1], 'used', '-' .. ARGV[2]) < 0 then redis.call('HSET', KEYS[1], 'used', '0') end
return 1
"#;

/// Whether a pending charge's record holds it, or else void it so that no reservation can
/// carry it any more. KEYS: the shard's charges. ARGV: window, charge id, when the entry
/// may go (ms). Returns `held` or `voided`.
const VOID: &str = r#"
local charge = ARGV[1] .. '\n' .. ARGV[2]
if redis.call('ZSCORE', KEYS[1], 'h\n' .. charge) then return 'held' end
redis.call('ZADD', KEYS[1], ARGV[3], 'v\n' .. charge)
return 'voided'
"#;

/// Take over an abandoned reservation: only while the record is exactly the one read (in
/// progress, held by the expired token) and its lease has ended by the server's clock.
/// KEYS: record. ARGV: expired token, lease ms. Returns the new token, or nil.
const TAKE_OVER: &str = with_prelude!(
    r#"
local now = now_ms()
local r = redis.call('HMGET', KEYS[1], 'state', 'token', 'lease')
if r[1] ~= 'in_progress' or r[2] ~= ARGV[1] or tonumber(r[3]) > now then return false end
local token = num(next_token(KEYS[1]))
redis.call('HSET', KEYS[1], 'token', token, 'lease', num(now + tonumber(ARGV[2])), 'updated', num(now))
redis.call('HDEL', KEYS[1], 'progress')
return token
"#
);

/// Renew the holder's lease. KEYS: record. ARGV: token, lease ms, `1` to keep the progress
/// that follows (else `0`), progress. Returns 1, or 0 when fenced.
const RENEW: &str = with_prelude!(
    r#"
if not held(KEYS[1], ARGV[1]) then return 0 end
local now = now_ms()
redis.call('HSET', KEYS[1], 'lease', num(now + tonumber(ARGV[2])), 'updated', num(now))
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'progress', ARGV[4]) end
return 1
"#
);

/// Settle an in-progress record: the holder's completion, or an operator's (token `''`).
/// It moves the record from the running index to the settled one (by retention end), and
/// takes off the settled index what Redis has expired since. KEYS: record, the running
/// index, the settled index. ARGV: token, `completed` or `failed`, result, retain ms, how
/// long Redis keeps it after its retention (ms). Returns 1, or 0 when fenced.
const SETTLE: &str = with_prelude!(
    r#"
if not held(KEYS[1], ARGV[1]) then return 0 end
local now = now_ms()
local until_ms = now + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'result', ARGV[3], 'updated', num(now), 'retain', num(until_ms))
redis.call('HDEL', KEYS[1], 'lease', 'progress')
expire_at(KEYS[1], until_ms + tonumber(ARGV[5]))
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('ZADD', KEYS[3], num(until_ms), KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. num(now - tonumber(ARGV[5])))
return 1
"#
);

/// Delete an in-progress record, refunding its charge: the holder's release, or an
/// operator's (token `''`). KEYS: record, the running index. ARGV: token, tombstone ms.
/// Returns 1, or 0 when fenced.
const RELEASE: &str = with_prelude!(
    r#"
local ok, token = held(KEYS[1], ARGV[1])
if not ok then return 0 end
refund(KEYS[1])
bury(KEYS[1], token, ARGV[2])
redis.call('ZREM', KEYS[2], KEYS[1])
return 1
"#
);

/// On a cluster, delete an in-progress record and queue its charge's refund (its window
/// is in another slot: the caller refunds it next, and a purge does what a caller could
/// not). KEYS: record, the running index, the shard's refunds. ARGV: token, tombstone ms.
/// Returns `{1, charge}` (`window\nid\namount`, or `''` for none), or 0 when fenced.
const RELEASE_QUEUED: &str = with_prelude!(
    r#"
local ok, token = held(KEYS[1], ARGV[1])
if not ok then return 0 end
local c = redis.call('HMGET', KEYS[1], 'cw', 'ci', 'ca')
bury(KEYS[1], token, ARGV[2])
redis.call('ZREM', KEYS[2], KEYS[1])
if not c[2] then return {1, ''} end
local charge = c[1] .. '\n' .. c[2] .. '\n' .. c[3]
redis.call('ZADD', KEYS[3], num(now_ms()), charge)
return {1, charge}
"#
);

/// End the holder's lease now. KEYS: record. ARGV: token. Returns 1, or 0 when fenced.
const ABANDON: &str = with_prelude!(
    r#"
if not held(KEYS[1], ARGV[1]) then return 0 end
local now = num(now_ms())
redis.call('HSET', KEYS[1], 'lease', now, 'updated', now)
return 1
"#
);

/// Put a settled record back in progress, its lease ended, with a new token. KEYS:
/// record, the running index, the settled index. Returns 1, or 0 when the record is not
/// settled.
const REOPEN: &str = with_prelude!(
    r#"
local r = redis.call('HMGET', KEYS[1], 'state', 'created')
if r[1] ~= 'completed' and r[1] ~= 'failed' then return 0 end
local now = num(now_ms())
local token = num(next_token(KEYS[1]))
redis.call('HSET', KEYS[1], 'state', 'in_progress', 'token', token, 'lease', now, 'updated', now)
redis.call('HDEL', KEYS[1], 'result', 'retain', 'progress')
redis.call('PERSIST', KEYS[1])
redis.call('ZREM', KEYS[3], KEYS[1])
redis.call('ZADD', KEYS[2], r[2] or now, KEYS[1])
return 1
"#
);

/// Read records (tombstones and missing keys read as empty). KEYS: records. Returns
/// `{now, {field, value, ...}, ...}`.
const READ: &str = with_prelude!(
    r#"
local found = {num(now_ms())}
for i, key in ipairs(KEYS) do
  found[i + 1] = redis.call('HGETALL', key)
end
return found
"#
);

/// Delete settled records whose retention has ended, at most ARGV[1], oldest retention
/// first, from the settled index (KEYS[1]), and take them off it, with the names whose
/// record Redis has expired. Returns `{deleted, taken off the index}`.
const PURGE: &str = with_prelude!(
    r#"
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'LIMIT', 0, tonumber(ARGV[1]))
local deleted = 0
for _, key in ipairs(due) do
  local r = redis.call('HMGET', key, 'state', 'retain')
  if (r[1] == 'completed' or r[1] == 'failed') and r[2] and tonumber(r[2]) <= now then
    redis.call('DEL', key)
    deleted = deleted + 1
  end
  redis.call('ZREM', KEYS[1], key)
end
return {deleted, #due}
"#
);

/// Take the windows that expired off the windows' index (KEYS[1]).
const PRUNE_WINDOWS: &str = r#"
for _, window in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', window) == 0 then redis.call('SREM', KEYS[1], window) end
end
return 1
"#;

/// Raise a window's limit or reset its use, recording who and why. KEYS: window, its name
/// before names were readable (an older version's window keeps it). ARGV: `raise` or
/// `reset`, the raise (millionths), by, note. Returns `{field, value, ...}` as it now
/// stands, `{}` when no such window was charged, or `uncountable` for a raise that would
/// take the window's raises past what it counts (nothing changed).
const ADJUST: &str = with_prelude!(
    r#"
local window = KEYS[1]
if redis.call('EXISTS', window) == 0 then window = KEYS[2] end
if redis.call('EXISTS', window) == 0 then return {} end
local now = num(now_ms())
local amount = ARGV[2]
if ARGV[1] == 'raise' then
  if sum_exceeds(redis.call('HGET', window, 'raised') or '0', amount, COUNTS_UP_TO, '0') then
    return 'uncountable'
  end
  redis.call('HINCRBY', window, 'raised', amount)
else
  amount = redis.call('HGET', window, 'used') or '0'
  redis.call('HSET', window, 'used', '0')
end
redis.call('HSET', window, 'adj_by', ARGV[3], 'adj_at', now, 'adj_kind', ARGV[1], 'adj_amount', amount,
  'adj_note', ARGV[4])
return redis.call('HGETALL', window)
"#
);

/// The scripts, loaded by their SHA1 (`EVALSHA`, falling back to `EVAL` when the server
/// has not seen one, after a restart for instance).
pub(super) struct Scripts {
    pub(super) reserve: Script,
    pub(super) reserve_charged: Script,
    pub(super) take_over: Script,
    pub(super) renew: Script,
    pub(super) settle: Script,
    pub(super) release: Script,
    pub(super) release_queued: Script,
    pub(super) charge: Script,
    pub(super) confirm: Script,
    pub(super) refund: Script,
    pub(super) void: Script,
    pub(super) abandon: Script,
    pub(super) reopen: Script,
    pub(super) read: Script,
    pub(super) purge: Script,
    pub(super) prune_windows: Script,
    pub(super) adjust: Script,
}

pub(super) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    reserve: Script::new(RESERVE),
    reserve_charged: Script::new(RESERVE_CHARGED),
    take_over: Script::new(TAKE_OVER),
    renew: Script::new(RENEW),
    settle: Script::new(SETTLE),
    release: Script::new(RELEASE),
    release_queued: Script::new(RELEASE_QUEUED),
    charge: Script::new(CHARGE),
    confirm: Script::new(CONFIRM),
    refund: Script::new(REFUND),
    void: Script::new(VOID),
    abandon: Script::new(ABANDON),
    reopen: Script::new(REOPEN),
    read: Script::new(READ),
    purge: Script::new(PURGE),
    prune_windows: Script::new(PRUNE_WINDOWS),
    adjust: Script::new(ADJUST),
});
