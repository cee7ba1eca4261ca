//! Tools of one name never share records by accident. The default namespace holds the
//! module path, so `email::notify` and `sms::notify` are two tools; methods of one name
//! in two impl blocks of one module would still meet, and the second one called refuses
//! every call (NAMESPACE_CLASH) instead of replaying the other's results.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, LazyLock};

use idem::store::block_on;
use idem::{ErrorCode, MemoryStore, Status, idempotent};

static STORE: LazyLock<MemoryStore> = LazyLock::new(MemoryStore::new);

mod email {
    use super::*;
    pub static SENT: AtomicUsize = AtomicUsize::new(0);

    #[idempotent(key = "notify:<user>", store = *STORE)]
    pub fn notify(user: String) -> Result<String, idem::Error> {
        SENT.fetch_add(1, Ordering::SeqCst);
        Ok(format!("email sent to {user}"))
    }
}

mod sms {
    use super::*;
    pub static SENT: AtomicUsize = AtomicUsize::new(0);

    #[idempotent(key = "notify:<user>", store = *STORE)]
    pub fn notify(user: String) -> Result<String, idem::Error> {
        SENT.fetch_add(1, Ordering::SeqCst);
        Ok(format!("sms sent to {user}"))
    }
}

#[test]
fn functions_of_one_name_in_two_modules_are_two_tools() {
    assert_eq!(email::notify("u1".into()).unwrap(), "email sent to u1");
    assert_eq!(sms::notify("u1".into()).unwrap(), "sms sent to u1");
    assert_eq!(sms::notify("u1".into()).unwrap(), "sms sent to u1", "a repeat replays its own tool's result");
    assert_eq!((email::SENT.load(Ordering::SeqCst), sms::SENT.load(Ordering::SeqCst)), (1, 1));
    assert!(matches!(sms::notify_status("u1".into()), Ok(Status::Completed(text)) if text == "sms sent to u1"));

    let metrics = idem::telemetry::metrics();
    let namespaces: Vec<_> = metrics.iter().filter(|m| m.tool == "notify").map(|m| m.namespace).collect();
    assert!(namespaces.contains(&"edges::namespaces::email::notify"), "{namespaces:?}");
    assert!(namespaces.contains(&"edges::namespaces::sms::notify"), "{namespaces:?}");
}

/// Two types with a `notify` tool each, in one module: one default namespace.
mod clash {
    use super::*;
    pub static RUNS: AtomicUsize = AtomicUsize::new(0);

    pub struct Email;
    pub struct Sms;

    impl Email {
        #[idempotent(key = "notify:<user>", store = *STORE)]
        pub fn notify(&self, user: String) -> Result<String, idem::Error> {
            let _ = user;
            RUNS.fetch_add(1, Ordering::SeqCst);
            Ok("email".to_owned())
        }
    }

    impl Sms {
        #[idempotent(key = "notify:<user>", store = *STORE)]
        pub fn notify(&self, user: String) -> Result<String, idem::Error> {
            let _ = user;
            RUNS.fetch_add(1, Ordering::SeqCst);
            Ok("sms".to_owned())
        }
    }
}

/// Started together, the two tools race for the namespace: exactly one owns it, every
/// call of the other is refused before its body runs, and its status function too.
#[test]
fn methods_sharing_a_default_namespace_refuse_loudly_instead_of_replaying() {
    const CALLERS: usize = 8;
    let barrier = Barrier::new(CALLERS);
    let answers: Vec<(bool, Result<String, ErrorCode>)> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|i| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let user = format!("u{i}");
                    let answer = match i % 2 {
                        0 => clash::Email.notify(user),
                        _ => clash::Sms.notify(user),
                    };
                    (i % 2 == 0, answer.map_err(|error| error.code()))
                })
            })
            .collect();
        callers.into_iter().map(|caller| caller.join().unwrap()).collect()
    });
    let owner_is_email = answers.iter().find(|(_, answer)| answer.is_ok()).map(|(email, _)| *email).unwrap();
    for (email, answer) in &answers {
        match *email == owner_is_email {
            true => assert_eq!(answer.as_deref(), Ok(if *email { "email" } else { "sms" })),
            false => assert_eq!(answer.as_deref(), Err(&ErrorCode::NamespaceClash)),
        }
    }
    assert_eq!(clash::RUNS.load(Ordering::SeqCst), CALLERS / 2, "only the owner's bodies ran");

    let refused = match owner_is_email {
        true => clash::Sms.notify("u0".into()).unwrap_err(),
        false => clash::Email.notify("u1".into()).unwrap_err(),
    };
    assert_eq!(refused.code(), ErrorCode::NamespaceClash);
    assert!(!refused.retryable());
    assert!(refused.message().contains("edges::namespaces::clash::notify"), "{}", refused.message());
    assert!(refused.message().contains("tests/edges/namespaces.rs:"), "names the owner's site: {}", refused.message());
    assert!(refused.suggestion().unwrap().contains("namespace = "), "{:?}", refused.suggestion());
    let status = match owner_is_email {
        true => clash::Sms.notify_status("u0".into()),
        false => clash::Email.notify_status("u1".into()),
    };
    assert_eq!(status.unwrap_err().code(), ErrorCode::NamespaceClash);
    assert_eq!(clash::RUNS.load(Ordering::SeqCst), CALLERS / 2);
}

/// The same namespace, named on purpose: the tools share records.
mod shared {
    use super::*;

    #[idempotent(key = "order:<id>", store = *STORE, namespace = "shop::order")]
    pub fn place(id: u64) -> Result<String, idem::Error> {
        Ok(format!("placed {id}"))
    }

    pub mod again {
        use super::*;

        #[idempotent(key = "order:<id>", store = *STORE, namespace = "shop::order")]
        pub fn place(id: u64) -> Result<String, idem::Error> {
            Ok(format!("placed {id} again"))
        }
    }
}

#[test]
fn a_namespace_named_on_purpose_is_shared() {
    assert_eq!(shared::place(1).unwrap(), "placed 1");
    assert_eq!(shared::again::place(1).unwrap(), "placed 1");
}

mod records {
    use super::*;

    #[idempotent(key = "notify:<user>", store = *STORE)]
    pub fn notify(user: String) -> Result<String, idem::Error> {
        Ok(format!("recorded {user}"))
    }
}

/// `<tool>_record_id` names a tool's record from the key's fields, so code that reads or
/// settles records through a `Store` never repeats the namespace by hand.
#[test]
fn a_tools_record_id_reads_its_record_through_the_store() {
    use idem::store::RecordState;
    use idem::store::Store;

    let id = records::notify_record_id("Record-User ".into()).unwrap();
    assert_eq!((id.namespace, id.key.as_str()), ("edges::namespaces::records::notify", "notify:record-user"));
    assert_eq!(block_on(STORE.read(id.as_record_id())).unwrap(), None);
    records::notify("record-user".into()).unwrap();
    let record = block_on(STORE.read(id.as_record_id())).unwrap().expect("recorded");
    assert!(matches!(record.state, RecordState::Completed { .. }), "{:?}", record.state);
    assert_eq!(sms::notify_record_id("record-user".into()).unwrap().namespace, "edges::namespaces::sms::notify");
    let empty = records::notify_record_id("  ".into()).unwrap_err();
    assert_eq!(empty.code(), ErrorCode::InvalidKey);
}
