//! The seam between the driver and a front end that serves calls over a protocol (rmcp's
//! MCP Tasks): what the driver tells it, at the moments a served call may answer with
//! something other than the tool's own output, or may learn of a request to stop. The
//! driver knows no front end by name; a tool that has one names it in
//! [`Tool::serving`](super::Tool::serving).

use std::time::Instant;

use crate::error::Running;
use crate::key::Key;
use crate::store::{BoxFuture, DynStore, Store, Token};

use super::Tool;
use super::call_store::{CallStore, Renews, Reserving};
use super::hold::in_body;

/// What a front end learns from the driver about a call of one of its tools. Async tools
/// only: `store` is the call's own store, so the front end can keep what it promises a
/// client (an MCP task) in the same store as the record it stands for.
///
/// A call made inside another tool's body answers that body, never a client: the driver
/// tells the front end neither [`found_running`](Self::found_running) nor
/// [`body_started`](Self::body_started) for it.
#[doc(hidden)]
pub trait Serving: std::fmt::Debug + Send + Sync + 'static {
    /// The call found `tool`'s action under `key` running, and answers IN_PROGRESS with
    /// `running` unless the front end answers for it.
    fn found_running<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        running: &'a Running,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, ()>;

    /// The call holds `key` under `token` (the reservation is durable) and its body is
    /// about to run; it started at `started`.
    fn body_started<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        started: Instant,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, ()>;

    /// The running call under `key`, held by `token`, renewed its lease (every third of
    /// it, and soon after its body reports progress). Resolves to whether the call was
    /// asked to stop by a request the front end found (one another worker received): the
    /// driver then tells the body, through [`cancel_requested`](super::cancel_requested).
    fn renewed<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        token: Token,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, bool>;

    /// The call's action waits for a person's approval (`asked`): the front end may ask
    /// the person in band, through the client, and record their decision (for `asked` and
    /// no later request). `true` when the driver should look at the approval again (a
    /// decision was recorded, here or elsewhere, or the request expired, while it asked):
    /// the call then answers from what stands, which may still be APPROVAL_REQUIRED.
    fn approval_required<'a>(
        &'a self,
        tool: &'static Tool,
        key: &'a Key,
        asked: &'a crate::approval::Request,
        store: &'a dyn DynStore,
    ) -> BoxFuture<'a, bool>;
}

/// The front end that may answer for this call instead of its tool, with the store to keep
/// what it promises in: an async call's, made outside any tool's body.
pub(super) fn front_end<'a, S, R, L>(
    tool: &'static Tool,
    at: &'a CallStore<'_, S, R, L>,
) -> Option<(&'static dyn Serving, &'a dyn DynStore)>
where
    S: Store + ?Sized,
    R: Reserving<S>,
    L: Renews,
{
    let serving = tool.serving?;
    (L::ASYNC && !in_body()).then(|| (serving, at.erased()))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::call::tests::SENSOR;
    use crate::call::{Call, NoReconcile, Release, Uncharged, run_async};
    use crate::key::build_key;
    use crate::store::{MemoryStore, RecordId, Reserve, Store, block_on};

    /// A front end that notes what the driver told it.
    #[derive(Debug)]
    struct Told(Mutex<Vec<(&'static str, String)>>);

    impl Told {
        fn note(&self, what: &'static str, key: &Key) {
            self.0.lock().unwrap().push((what, key.as_str().to_owned()));
        }
    }

    impl Serving for Told {
        fn found_running<'a>(
            &'a self,
            _: &'static Tool,
            key: &'a Key,
            _: &'a Running,
            _: &'a dyn DynStore,
        ) -> BoxFuture<'a, ()> {
            self.note("found_running", key);
            Box::pin(std::future::ready(()))
        }
        fn body_started<'a>(
            &'a self,
            _: &'static Tool,
            key: &'a Key,
            _: Token,
            _: Instant,
            _: &'a dyn DynStore,
        ) -> BoxFuture<'a, ()> {
            self.note("body_started", key);
            Box::pin(std::future::ready(()))
        }
        fn renewed<'a>(&'a self, _: &'static Tool, _: &'a Key, _: Token, _: &'a dyn DynStore) -> BoxFuture<'a, bool> {
            Box::pin(std::future::ready(false))
        }
        fn approval_required<'a>(
            &'a self,
            _: &'static Tool,
            key: &'a Key,
            _: &'a crate::approval::Request,
            _: &'a dyn DynStore,
        ) -> BoxFuture<'a, bool> {
            self.note("approval_required", key);
            Box::pin(std::future::ready(false))
        }
    }

    static TOLD: Told = Told(Mutex::new(Vec::new()));

    static SERVED: Tool = Tool {
        namespace: "serving-tests::served",
        site: "call/serving.rs",
        serving: Some(&TOLD),
        approval: None,
        budget: None,
        instruments: crate::__idem_instruments!("served"),
        claim: crate::call::Claim::new(),
        json_names: crate::json_names::JsonNames::none(),
        ..SENSOR
    };

    /// One call of `SERVED` for `sensor`, to its answer.
    fn served(store: &MemoryStore, sensor: &str) -> Result<String, crate::error::Error> {
        let call = Call::new(&SERVED, &[&sensor], []);
        block_on(run_async(call, store, Uncharged, async { Ok("ran".to_owned()) }, NoReconcile, Release))
    }

    #[test]
    fn the_front_end_hears_of_calls_made_outside_any_body_only() {
        let store = MemoryStore::new();
        let running = build_key(SERVED.name, SERVED.template, &[&"busy"]).unwrap();
        let id = RecordId { namespace: SERVED.namespace, key: running.as_str() };
        block_on(store.reserve(Reserve { id, request: "{}", lease: Duration::from_secs(60) })).unwrap();

        // Inside another tool's body: the call answers that body, never a client.
        let outer = Call::new(&SENSOR, &[&"outer"], []);
        let inner: Result<String, crate::error::Error> = block_on(run_async(
            outer,
            &store,
            Uncharged,
            async {
                assert_eq!(served(&store, "fresh-inside").unwrap(), "ran");
                let busy = served(&store, "busy").unwrap_err();
                assert_eq!(busy.code(), crate::error::ErrorCode::InProgress);
                Ok("outer".to_owned())
            },
            NoReconcile,
            Release,
        ));
        assert_eq!(inner.unwrap(), "outer");
        assert_eq!(*TOLD.0.lock().unwrap(), [], "nothing told of calls made inside a body");

        // Outside any body: told that the body started, and that the action runs already.
        assert_eq!(served(&store, "fresh-outside").unwrap(), "ran");
        assert_eq!(served(&store, "busy").unwrap_err().code(), crate::error::ErrorCode::InProgress);
        assert_eq!(
            *TOLD.0.lock().unwrap(),
            [("body_started", "reading:fresh-outside".to_owned()), ("found_running", "reading:busy".to_owned())]
        );
    }
}
