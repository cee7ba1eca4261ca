//! The store protocol on the map: every operation holds the map's one lock for its whole
//! duration, which is what makes it atomic, and never awaits.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Entry, MemoryStore, NEXT_TOKEN, State};
use crate::store::{
    Completion, Record, RecordId, Renew, Reservation, Reserve, Store, StoreError, Token, duration_ms, now_ms,
};

impl Store for MemoryStore {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let RecordId { namespace, key } = request.id;
        let keys = match records.keys.get_mut(namespace) {
            Some(keys) => match keys.get(key) {
                Some(existing) => return existing.to_record(request.id, now).map(Reservation::Existing),
                None => keys,
            },
            None => records.keys.entry(namespace.to_owned()).or_default(),
        };
        let entry = Entry::reserved(&request, now, None);
        let token = entry.token;
        keys.insert(key.to_owned(), entry);
        Ok(Reservation::Acquired { token })
    }

    async fn take_over(&self, id: RecordId<'_>, expired: Token, lease: Duration) -> Result<Token, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let entry = records
            .get_mut(id)
            .filter(|entry| entry.held_by(expired))
            .filter(|entry| matches!(entry.state, State::InProgress { lease_until_ms } if lease_until_ms <= now))
            .ok_or(StoreError::Fenced)?;
        entry.token = Token(NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
        entry.state = State::InProgress { lease_until_ms: now + duration_ms(lease) };
        entry.updated_at_ms = now;
        entry.progress = None;
        Ok(entry.token)
    }

    async fn renew(&self, renewal: Renew<'_>) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry =
            records.get_mut(renewal.id).filter(|entry| entry.held_by(renewal.token)).ok_or(StoreError::Fenced)?;
        let now = now_ms();
        entry.state = State::InProgress { lease_until_ms: now + duration_ms(renewal.lease) };
        entry.updated_at_ms = now;
        if let Some(progress) = renewal.progress {
            entry.progress = Some(progress.to_owned());
        }
        Ok(())
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        completion: Completion<'_>,
        retain: Duration,
    ) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry = records.get_mut(id).filter(|entry| entry.held_by(token)).ok_or(StoreError::Fenced)?;
        entry.state = match completion {
            Completion::Success(result) => State::Completed(result.to_owned()),
            Completion::KeptError(error) => State::Failed(error.to_owned()),
        };
        entry.progress = None;
        let now = now_ms();
        entry.updated_at_ms = now;
        entry.retain_until_ms = Some(now + duration_ms(retain));
        Ok(())
    }

    async fn abandon(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let mut records = self.lock();
        let entry = records.get_mut(id).filter(|entry| entry.held_by(token)).ok_or(StoreError::Fenced)?;
        let now = now_ms();
        entry.state = State::InProgress { lease_until_ms: now };
        entry.updated_at_ms = now;
        Ok(())
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<(), StoreError> {
        let mut records = self.lock();
        if !records.get(id).is_some_and(|entry| entry.held_by(token)) {
            return Err(StoreError::Fenced);
        }
        records.remove_refunding(id);
        Ok(())
    }

    async fn read(&self, id: RecordId<'_>) -> Result<Option<Record>, StoreError> {
        let records = self.lock();
        let now = now_ms();
        records.get(id).map(|entry| entry.to_record(id, now)).transpose()
    }

    async fn purge(&self, limit: usize) -> Result<usize, StoreError> {
        let mut records = self.lock();
        let now = now_ms();
        let doomed: Vec<(String, String)> = records
            .keys
            .iter()
            .flat_map(|(namespace, keys)| keys.iter().map(move |(key, entry)| (namespace, key, entry)))
            .filter(|(_, _, entry)| entry.retain_until_ms.is_some_and(|until| until <= now))
            .map(|(namespace, key, _)| (namespace.clone(), key.clone()))
            .take(limit)
            .collect();
        for (namespace, key) in &doomed {
            records.remove(RecordId { namespace, key });
        }
        records.budgets.purge(now);
        Ok(doomed.len())
    }
}
