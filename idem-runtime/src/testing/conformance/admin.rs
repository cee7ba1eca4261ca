//! The operator's operations ([`Admin`]), the same on every store.

use std::time::Duration;

use super::waited::Waited;
use super::{LONG, NS};
use crate::store::{
    Admin, Completion, ListQuery, RecordId, RecordState, Reservation, Reserve, StateFilter, Store, StoreError, Token,
};

const OTHER_NS: &str = "idem-conformance-other";

/// Runs every check of [`Admin`] against stores made by `make_store` (each without
/// records, as for [`check_store`](super::check_store)).
pub fn check_admin<S: Store + Admin>(make_store: impl Fn() -> S) {
    let make_store = || Waited(make_store());
    lists_by_state_namespace_prefix_age_and_limit(&make_store());
    counts_what_a_listing_selects_whatever_its_limit(&make_store());
    counts_per_namespace_and_state(&make_store());
    resolves_only_keys_in_progress(&make_store());
    reopens_only_settled_records_as_abandoned(&make_store());
    purges_only_settled_records_past_retention(&make_store());
}

fn id<'a>(namespace: &'a str, key: &'a str) -> RecordId<'a> {
    RecordId { namespace, key }
}

fn reserve(store: &Waited<impl Store>, id: RecordId<'_>, lease: Duration) -> Token {
    match store.reserve(Reserve { id, request: r#"{"amount":1}"#, lease }) {
        Ok(Reservation::Acquired { token }) => token,
        other => panic!("reserving a new key {}/{} must acquire it, got {other:?}", id.namespace, id.key),
    }
}

/// Four records in reservation order: a completed, a running and an abandoned one in
/// `NS`, a failed one in `OTHER_NS`.
fn four_records(store: &Waited<impl Store>) {
    let done = reserve(store, id(NS, "k1"), LONG);
    store.complete(id(NS, "k1"), done, Completion::Success("\"one\""), LONG).unwrap();
    reserve(store, id(NS, "k2"), LONG);
    reserve(store, id(NS, "k3"), Duration::ZERO);
    let failed = reserve(store, id(OTHER_NS, "k1"), LONG);
    store.complete(id(OTHER_NS, "k1"), failed, Completion::KeptError("{\"code\":\"DECLINED\"}"), LONG).unwrap();
}

fn keys(store: &Waited<impl Admin>, query: ListQuery<'_>) -> Vec<String> {
    let listed = store.list(&query).unwrap_or_else(|e| panic!("list {query:?} failed: {e}"));
    listed.into_iter().map(|entry| format!("{}/{}", entry.namespace, entry.key)).collect()
}

fn lists_by_state_namespace_prefix_age_and_limit<S: Store + Admin>(store: &Waited<S>) {
    four_records(store);
    let (k1, k2, k3, other) = (format!("{NS}/k1"), format!("{NS}/k2"), format!("{NS}/k3"), format!("{OTHER_NS}/k1"));
    let (k1, k2, k3, other) = (k1.as_str(), k2.as_str(), k3.as_str(), other.as_str());
    let all = ListQuery::default();
    assert_eq!(keys(store, all), [k1, k2, k3, other], "every record, oldest first");
    let by = |state| ListQuery { state, ..all };
    assert_eq!(keys(store, by(StateFilter::InProgress)), [k2, k3], "in progress: running and abandoned");
    assert_eq!(keys(store, by(StateFilter::Running)), [k2], "running: lease live");
    assert_eq!(keys(store, by(StateFilter::Abandoned)), [k3], "abandoned: lease ended");
    assert_eq!(keys(store, by(StateFilter::Completed)), [k1]);
    assert_eq!(keys(store, by(StateFilter::Failed)), [other]);
    assert_eq!(keys(store, ListQuery { namespace: Some(OTHER_NS), ..all }), [other], "one namespace");
    assert_eq!(keys(store, ListQuery { key_prefix: Some("k2"), ..all }), [k2], "a key prefix");
    assert_eq!(
        keys(store, ListQuery { key_prefix: Some("%"), ..all }),
        Vec::<String>::new(),
        "a prefix is text, not a pattern"
    );
    assert_eq!(keys(store, ListQuery { older_than: Some(LONG), ..all }), Vec::<String>::new(), "none is an hour old");
    assert_eq!(keys(store, ListQuery { older_than: Some(Duration::ZERO), ..all }).len(), 4);
    assert_eq!(keys(store, ListQuery { limit: 2, ..all }), [k1, k2], "the oldest `limit`");
    let listed = store.list(&ListQuery { key_prefix: Some("k1"), namespace: Some(NS), ..all }).unwrap();
    assert_eq!(Some(&listed[0].record), store.read(id(NS, "k1")).unwrap().as_ref(), "a listed record is the record");
}

fn counts_what_a_listing_selects_whatever_its_limit<S: Store + Admin>(store: &Waited<S>) {
    four_records(store);
    let all = ListQuery { limit: 1, ..ListQuery::default() };
    for query in [
        all,
        ListQuery { state: StateFilter::InProgress, ..all },
        ListQuery { state: StateFilter::Running, ..all },
        ListQuery { state: StateFilter::Abandoned, ..all },
        ListQuery { state: StateFilter::Failed, ..all },
        ListQuery { namespace: Some(NS), ..all },
        ListQuery { key_prefix: Some("k1"), ..all },
        ListQuery { key_prefix: Some("%"), ..all },
        ListQuery { older_than: Some(LONG), ..all },
        ListQuery { older_than: Some(Duration::ZERO), namespace: Some(NS), ..all },
    ] {
        let listed = keys(store, ListQuery { limit: 100, ..query }).len() as u64;
        let counted = store.count_matching(&query).unwrap_or_else(|e| panic!("count_matching {query:?} failed: {e}"));
        assert_eq!(counted, listed, "count_matching counts what list selects, whatever the limit: {query:?}");
    }
}

fn counts_per_namespace_and_state<S: Store + Admin>(store: &Waited<S>) {
    four_records(store);
    let counted: Vec<(String, String, u64)> =
        store.count().unwrap().into_iter().map(|c| (c.namespace, c.state, c.records)).collect();
    let expected = [(NS, "abandoned"), (NS, "completed"), (NS, "in_progress"), (OTHER_NS, "failed")]
        .map(|(namespace, state)| (namespace.to_owned(), state.to_owned(), 1));
    assert_eq!(counted, expected, "records per namespace and state, in that order");
    let oldest = store.count().unwrap()[1].oldest_ms;
    assert_eq!(
        Some(oldest),
        store.read(id(NS, "k1")).unwrap().map(|r| r.created_at_ms),
        "oldest: its reservation time"
    );
}

fn resolves_only_keys_in_progress<S: Store + Admin>(store: &Waited<S>) {
    four_records(store);
    store.resolve_done(id(NS, "k3"), "\"by hand\"", LONG).unwrap();
    let resolved = store.read(id(NS, "k3")).unwrap().unwrap();
    assert_eq!(resolved.state, RecordState::Completed { result: "\"by hand\"".into() });
    assert!(resolved.retain_until_ms.is_some(), "a resolved record is kept for its retention");
    store.resolve_release(id(NS, "k2")).unwrap();
    assert_eq!(store.read(id(NS, "k2")).unwrap(), None, "a released key is free");
    reserve(store, id(NS, "k2"), LONG); // a call acquires it again
    for settled in [id(NS, "k1"), id(OTHER_NS, "k1")] {
        let before = store.read(settled).unwrap();
        assert!(matches!(store.resolve_done(settled, "1", LONG), Err(StoreError::Fenced)), "settled: not resolved");
        assert!(matches!(store.resolve_release(settled), Err(StoreError::Fenced)), "settled: not released");
        assert_eq!(store.read(settled).unwrap(), before, "a refused resolve changes nothing");
    }
    assert!(matches!(store.resolve_release(id(NS, "never")), Err(StoreError::Fenced)), "no record: nothing to release");
}

fn reopens_only_settled_records_as_abandoned<S: Store + Admin>(store: &Waited<S>) {
    four_records(store);
    let before = store.read(id(NS, "k1")).unwrap().unwrap();
    store.reopen(id(NS, "k1")).unwrap();
    let reopened = store.read(id(NS, "k1")).unwrap().unwrap();
    assert!(
        matches!(reopened.state, RecordState::InProgress { lease_expired: true, .. }),
        "a reopened record reads as abandoned: {reopened:?}"
    );
    assert!(reopened.token > before.token, "with a new, larger token");
    assert_eq!((reopened.request, reopened.retain_until_ms), (before.request, None), "its request kept, no retention");
    // A call then takes it over, as it takes over any abandoned call.
    assert!(store.take_over(id(NS, "k1"), reopened.token, LONG).is_ok(), "a reopened record can be taken over");
    store.reopen(id(OTHER_NS, "k1")).unwrap();
    let running = store.read(id(NS, "k2")).unwrap();
    assert!(matches!(store.reopen(id(NS, "k2")), Err(StoreError::Fenced)), "in progress: nothing to reopen");
    assert_eq!(store.read(id(NS, "k2")).unwrap(), running);
    assert!(matches!(store.reopen(id(NS, "never")), Err(StoreError::Fenced)), "no record: nothing to reopen");
}

fn purges_only_settled_records_past_retention<S: Store + Admin>(store: &Waited<S>) {
    let token = reserve(store, id(NS, "old"), LONG);
    store.complete(id(NS, "old"), token, Completion::Success("1"), Duration::ZERO).unwrap();
    reserve(store, id(NS, "running"), Duration::ZERO);
    assert_eq!(store.purge(10).unwrap(), 1, "the settled record past its retention only");
    assert_eq!(store.read(id(NS, "old")).unwrap(), None);
    assert!(store.read(id(NS, "running")).unwrap().is_some(), "never an in-progress record");
}
