//! Key names, and records and budget windows read back from their hashes.

use std::borrow::Cow;
use std::collections::HashMap;

use redis::Value;

use crate::store::budget::{Adjusted, BudgetChange, BudgetWindow, change_text};
use crate::store::{Record, RecordId, RecordState, StoreError, Token};

/// How many shards a store on a Redis Cluster spreads its records and budget windows over.
/// Every key of shard `n` carries the hash tag `{n}`, so a shard is one hash slot and a
/// script that touches one shard's keys runs on one node. 64 spreads the store over up
/// to 64 primaries (about 21 shards each on three), keeps any one slot to 1/64 of the
/// records, and keeps what the operator's listing reads per index to 64 small sorted sets.
/// It is part of the key layout: changing it would strand the records already written.
pub(super) const CLUSTER_SHARDS: usize = 64;

/// FNV-1a over what is written into it.
struct Fnv1a(u64);

impl std::fmt::Write for Fnv1a {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for byte in text.bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(())
    }
}

/// The names of a store's keys: on one server, every key starts with the prefix (the
/// layout of every earlier version); on a cluster, with `<prefix>:{<shard>}`.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub(super) prefix: String,
    pub(super) cluster: bool,
}

impl Keys {
    /// How many shards the store has: 1 on one server.
    pub(super) fn shards(&self) -> usize {
        if self.cluster { CLUSTER_SHARDS } else { 1 }
    }

    /// What every key of `shard` starts with.
    fn base(&self, shard: usize) -> Cow<'_, str> {
        match self.cluster {
            true => Cow::Owned(format!("{}:{{{shard}}}", self.prefix)),
            false => Cow::Borrowed(&self.prefix),
        }
    }

    /// The shard of a name written by `name` (a record's, a budget's and scope's): FNV-1a,
    /// a hash that never changes between versions, as the names it places must not. On one
    /// server nothing is hashed, and nothing is written out on a cluster either.
    fn shard_of(&self, name: std::fmt::Arguments<'_>) -> usize {
        if !self.cluster {
            return 0;
        }
        let mut hash = Fnv1a(0xcbf2_9ce4_8422_2325);
        // Writing into the hash cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut hash, name);
        (hash.0 % CLUSTER_SHARDS as u64) as usize
    }

    /// A record's shard, and the name of its hash:
    /// `<prefix>:r:<namespace length>:<namespace>:<key>` (on a cluster `<prefix>:{<shard>}:r:...`).
    /// The length keeps names unambiguous whatever the namespace holds.
    pub(super) fn record(&self, id: RecordId<'_>) -> (usize, String) {
        let RecordId { namespace, key } = id;
        let shard = self.shard_of(format_args!("{}:{namespace}:{key}", namespace.len()));
        (shard, format!("{}:r:{}:{namespace}:{key}", self.base(shard), namespace.len()))
    }

    /// What every record key of `namespace` in `shard` starts with.
    pub(super) fn namespace_prefix(&self, shard: usize, namespace: &str) -> String {
        format!("{}:r:{}:{namespace}:", self.base(shard), namespace.len())
    }

    /// The store's marker, which a tool's first connection writes and the `idem` command
    /// looks for; in shard 0.
    pub(super) fn marker(&self) -> String {
        format!("{}:store", self.base(0))
    }

    /// The index of a shard's in-progress records: a sorted set of their names, by
    /// reservation time.
    pub(super) fn running(&self, shard: usize) -> String {
        format!("{}:running", self.base(shard))
    }

    /// The index of a shard's settled records: a sorted set of their names, by the end of
    /// their retention. The settling script takes off what Redis expired, so it does not
    /// grow without a purge.
    pub(super) fn settled(&self, shard: usize) -> String {
        format!("{}:settled", self.base(shard))
    }

    /// The operator's index of a shard's budget windows: a set of their names.
    pub(super) fn windows(&self, shard: usize) -> String {
        format!("{}:budgets", self.base(shard))
    }

    /// On a cluster, a shard's charges of released records still to refund to their
    /// windows (see `charges.rs`).
    pub(super) fn refunds(&self, shard: usize) -> String {
        format!("{}:refunds", self.base(shard))
    }

    /// On a cluster, the fate of a shard's charges (see `charges.rs`): `h\n<window>\n<id>`
    /// for one a reservation holds, `v\n<window>\n<id>` for one a repair voided (no
    /// reservation can carry it any more), each scored by when its window expires.
    pub(super) fn charges(&self, shard: usize) -> String {
        format!("{}:charges", self.base(shard))
    }

    /// The shard a key of this store's names: the number in its hash tag (0 on one server).
    pub(super) fn shard_in(&self, name: &str) -> Option<usize> {
        if !self.cluster {
            return Some(0);
        }
        let tag = name.strip_prefix(self.prefix.as_str())?.strip_prefix(":{")?;
        tag.split_once('}')?.0.parse().ok().filter(|shard| *shard < CLUSTER_SHARDS)
    }

    /// The shard of a budget's windows for one scope: every window of theirs is there.
    pub(super) fn window_shard(&self, budget: &str, scope: &str) -> usize {
        self.shard_of(format_args!("{}:{budget}:{}:{scope}", budget.len(), scope.len()))
    }

    /// A budget window's hash: `<prefix>:b:<budget length>:<budget>:<scope length>:<scope>:<start>`
    /// (`idem:b:7:refunds:0::1767225600000`; on a cluster `<prefix>:{<shard>}:b:...`), text an
    /// operator can read and type; the lengths keep names unambiguous whatever a budget or
    /// scope holds, as in records' names.
    pub(super) fn window(&self, budget: &str, scope: &str, start_ms: i64) -> (usize, String) {
        let shard = self.window_shard(budget, scope);
        (shard, format!("{}{start_ms}", self.window_prefix(shard, budget, Some(scope))))
    }

    /// What the names of `budget`'s windows (of `scope`, if given) in `shard` start with.
    pub(super) fn window_prefix(&self, shard: usize, budget: &str, scope: Option<&str>) -> String {
        let base = self.base(shard);
        match scope {
            Some(scope) => format!("{base}:b:{}:{budget}:{}:{scope}:", budget.len(), scope.len()),
            None => format!("{base}:b:{}:{budget}:", budget.len()),
        }
    }

    /// [`Keys::window_prefix`] as this store wrote it on one server before its names were
    /// readable, with NUL bytes (`<prefix>:b:<budget>\0<scope>\0<start>`): a window an older
    /// version created keeps that name until it expires, so the scripts charge, refund and
    /// adjust it under it. A cluster store never had such names.
    pub(super) fn legacy_window_prefix(&self, budget: &str, scope: Option<&str>) -> String {
        let prefix = &self.prefix;
        match scope {
            Some(scope) => format!("{prefix}:b:{budget}\0{scope}\0"),
            None => format!("{prefix}:b:{budget}\0"),
        }
    }
}

/// A reply's text items (bulk strings, simple strings, integers), in order.
pub(super) fn texts(value: Value) -> Result<Vec<String>, StoreError> {
    let Value::Array(items) = value else {
        return Err(StoreError::Corrupt(format!("unexpected reply {value:?}")));
    };
    items.into_iter().map(text).collect()
}

/// One text item of a reply.
pub(super) fn text(value: Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => {
            String::from_utf8(bytes).map_err(|e| StoreError::Corrupt(format!("a value that is not UTF-8 text: {e}")))
        }
        Value::SimpleString(text) => Ok(text),
        Value::Int(n) => Ok(n.to_string()),
        other => Err(StoreError::Corrupt(format!("unexpected reply item {other:?}"))),
    }
}

/// A flat `field, value, ...` list as a map.
pub(super) fn hash(flat: impl IntoIterator<Item = String>) -> HashMap<String, String> {
    let mut flat = flat.into_iter();
    let mut fields = HashMap::new();
    while let (Some(field), Some(value)) = (flat.next(), flat.next()) {
        fields.insert(field, value);
    }
    fields
}

/// The fields a [`Record`] is read from, in the order [`Listed`] holds their values: what a
/// plain read asks `HMGET` for, so that the server sends no names and the client builds no
/// map.
pub(super) const RECORD_FIELDS: [&str; 9] =
    ["state", "lease", "result", "progress", "token", "request", "created", "updated", "retain"];

/// The fields of a hash or reply, by name.
pub(super) trait Fields {
    fn field(&self, name: &str) -> Option<&str>;
}

impl Fields for HashMap<String, String> {
    fn field(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// `HMGET`'s values of [`RECORD_FIELDS`], in that order (`None`: no such field).
pub(super) struct Listed(pub(super) Vec<Option<String>>);

impl Fields for Listed {
    fn field(&self, name: &str) -> Option<&str> {
        let at = RECORD_FIELDS.iter().position(|field| *field == name)?;
        self.0.get(at)?.as_deref()
    }
}

/// A decimal number of a hash or reply.
pub(super) fn number(fields: &impl Fields, field: &str) -> Result<Option<i64>, StoreError> {
    fields
        .field(field)
        .map(|value| value.parse().map_err(|_| StoreError::Corrupt(format!("{field} is not a number: {value:?}"))))
        .transpose()
}

fn required(fields: &impl Fields, field: &str) -> Result<i64, StoreError> {
    number(fields, field)?.ok_or_else(|| StoreError::Corrupt(format!("no {field}")))
}

/// The record a hash holds, read at `now_ms` by the server's clock; `None` for no hash or a
/// tombstone (a `token` without a `state`).
pub(super) fn record(fields: &impl Fields, now_ms: i64, id: &str) -> Result<Option<Record>, StoreError> {
    let Some(state) = fields.field("state") else { return Ok(None) };
    let corrupt = |what: String| StoreError::Corrupt(format!("{id}: {what}"));
    let text = |name: &str| fields.field(name).map(str::to_owned);
    let read = || -> Result<Record, StoreError> {
        let lease = number(fields, "lease")?;
        let lease = (lease, lease.map(|until| until <= now_ms));
        let state =
            RecordState::from_columns(state, text("result"), lease, text("progress")).map_err(StoreError::Corrupt)?;
        let token = required(fields, "token")?;
        Ok(Record {
            request: text("request").ok_or_else(|| StoreError::Corrupt("no request".to_owned()))?,
            token: Token(u64::try_from(token).map_err(|_| StoreError::Corrupt(format!("token {token}")))?),
            created_at_ms: required(fields, "created")?,
            updated_at_ms: required(fields, "updated")?,
            retain_until_ms: number(fields, "retain")?,
            state,
        })
    };
    read().map(Some).map_err(|error| match error {
        StoreError::Corrupt(what) => corrupt(what),
        other => other,
    })
}

/// The window a hash holds; `start_ms` and `limit` stand in for a window never charged.
pub(super) fn window(
    fields: &HashMap<String, String>,
    (budget, scope): (&str, &str),
    start_ms: i64,
    window_ms: i64,
    limit: i64,
) -> Result<BudgetWindow, StoreError> {
    let adjusted = match (fields.get("adj_by"), fields.get("adj_kind"), fields.get("adj_note")) {
        (Some(by), Some(kind), Some(note)) => {
            let amount = required(fields, "adj_amount")?;
            let change = if kind == "raise" { BudgetChange::Raise(amount) } else { BudgetChange::Reset };
            let change = change_text(change, amount);
            Some(Adjusted { by: by.clone(), at_ms: required(fields, "adj_at")?, change, note: note.clone() })
        }
        _ => None,
    };
    Ok(BudgetWindow::new(
        fields.get("budget").cloned().unwrap_or_else(|| budget.to_owned()),
        fields.get("scope").cloned().unwrap_or_else(|| scope.to_owned()),
        (number(fields, "start")?.unwrap_or(start_ms), number(fields, "window")?.unwrap_or(window_ms)),
        number(fields, "used")?.unwrap_or(0),
        number(fields, "limit")?.unwrap_or(limit),
        number(fields, "raised")?.unwrap_or(0),
        adjusted,
    ))
}
