//! The operator's operations on a Redis store. Listing walks the store's indexes (sorted
//! sets of running and settled records' names, a set of budget windows) and reads the
//! records by the batch, so it never scans the server's other keys.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::RedisStore;
use super::fields;
use super::io::block_on;
use super::scripts::SCRIPTS;
use crate::store::admin::selects;
use crate::store::budget::{Adjustment, BudgetQuery, BudgetWindow};
use crate::store::{Admin, Completion, ListQuery, ListedRecord, RecordId, StateCount, StoreError};

impl RedisStore {
    /// The hashes of the records of `namespace` (every one without it), running ones
    /// first, and the server's time they were read at.
    async fn hashes(&self, namespace: Option<&str>) -> Result<(i64, Vec<HashMap<String, String>>), StoreError> {
        const BATCH: usize = 1000;
        let (mut found, mut now) = (Vec::new(), None);
        for shard in 0..self.keys.shards() {
            let wanted = namespace.map(|namespace| self.keys.namespace_prefix(shard, namespace));
            for index in [self.keys.running(shard), self.keys.settled(shard)] {
                let mut offset = 0;
                loop {
                    let names = self.index_range(shard, &index, offset, BATCH).await?;
                    offset += names.len();
                    let batch = names.len();
                    let names: Vec<String> = names
                        .into_iter()
                        .filter(|name| wanted.as_ref().is_none_or(|wanted| name.starts_with(wanted)))
                        .collect();
                    let (read_at, hashes) = self.read_keys("list", shard, names).await?;
                    now.get_or_insert(read_at);
                    found.extend(hashes.into_iter().filter(|hash| hash.contains_key("state")));
                    if batch < BATCH {
                        break;
                    }
                }
            }
        }
        Ok((now.unwrap_or_default(), found))
    }

    async fn records(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError> {
        let (now, hashes) = self.hashes(query.namespace).await?;
        let mut listed = Vec::new();
        for found in hashes {
            let (Some(namespace), Some(key)) = (found.get("ns"), found.get("key")) else { continue };
            let Some(record) = fields::record(&found, now, &format!("{namespace}/{key}"))? else { continue };
            if selects(query, key, &record, now) {
                listed.push(ListedRecord::new(namespace.clone(), key.clone(), record));
            }
        }
        listed.sort_by_key(|listed| (listed.record.created_at_ms, listed.record.token));
        Ok(listed)
    }

    /// Plants a record in `state` for the conformance suite's unknown-state check.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn plant_record(&self, id: RecordId<'_>, state: &str) -> Result<(), StoreError> {
        let (shard, record) = self.keys.record(id);
        let mut command = redis::cmd("HSET");
        command.arg(&record).arg("state").arg(state).arg("token").arg(1).arg("request").arg("{}");
        command.arg("created").arg(0).arg("updated").arg(0).arg("ns").arg(id.namespace).arg("key").arg(id.key);
        let mut index = redis::cmd("ZADD");
        index.arg(self.keys.running(shard)).arg(0).arg(&record);
        block_on(async {
            self.command::<()>("plant", shard, command).await?;
            self.command("plant", shard, index).await
        })
    }
}

impl Admin for RedisStore {
    fn describe(&self) -> String {
        self.link.described.clone()
    }

    fn list(&self, query: &ListQuery<'_>) -> Result<Vec<ListedRecord>, StoreError> {
        let mut listed = block_on(self.records(query))?;
        listed.truncate(query.limit);
        Ok(listed)
    }

    fn count_matching(&self, query: &ListQuery<'_>) -> Result<u64, StoreError> {
        Ok(block_on(self.records(query))?.len() as u64)
    }

    fn count(&self) -> Result<Vec<StateCount>, StoreError> {
        let (now, hashes) = block_on(self.hashes(None))?;
        let mut counts: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
        for found in hashes {
            let (Some(namespace), Some(state)) = (found.get("ns"), found.get("state")) else { continue };
            let lease = fields::number(&found, "lease")?;
            let state = match state.as_str() {
                "in_progress" if lease.is_some_and(|until| until <= now) => "abandoned",
                other => other,
            };
            let created = fields::number(&found, "created")?.unwrap_or(0);
            let count = counts.entry((namespace.clone(), state.to_owned())).or_insert((0, i64::MAX));
            *count = (count.0 + 1, count.1.min(created));
        }
        Ok(counts
            .into_iter()
            .map(|((namespace, state), (n, oldest))| StateCount::new(namespace, state, n, oldest))
            .collect())
    }

    fn resolve_done(&self, id: RecordId<'_>, result: &str, retain: Duration) -> Result<(), StoreError> {
        block_on(self.settle(id, None, Completion::Success(result), retain))
    }

    fn resolve_release(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        block_on(self.delete(id, None))
    }

    fn reopen(&self, id: RecordId<'_>) -> Result<(), StoreError> {
        let (shard, record) = self.keys.record(id);
        let mut invocation = SCRIPTS.reopen.key(record);
        invocation.key(self.keys.running(shard)).key(self.keys.settled(shard));
        block_on(self.fenced_unless_done("reopen", shard, invocation))
    }

    fn budgets(&self, query: &BudgetQuery<'_>) -> Result<Vec<BudgetWindow>, StoreError> {
        block_on(self.list_budgets(query))
    }

    fn adjust_budget(&self, adjustment: &Adjustment<'_>) -> Result<BudgetWindow, StoreError> {
        block_on(self.adjust(adjustment))
    }
}
