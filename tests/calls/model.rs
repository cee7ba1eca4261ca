//! A model-based test: random sequences of calls and retries (same or changed compared
//! field), body errors, panics before and after the effect, crashed reservations, lease
//! expiries, reconciliations (the provider says done, not done, cannot tell, or the hook
//! itself panics), calls held in flight and completed later (also after their lease was
//! taken over: fenced), and purges, over three keys, driven through real `#[idempotent]`
//! tools on the memory and the SQLite store and checked after every step against a small
//! reference model of what each call must answer and what each key's status is.
//!
//! The invariants: never two effects for one key within its retention (counted in the
//! stand-in provider's own ledger, which does not deduplicate); a completed result is
//! replayed identically while it is retained; CONFLICT whenever the compared field
//! differs; IN_PROGRESS while a lease holds; OUTCOME_UNKNOWN, or the hook's answer, after
//! it ends; the hook asked once per reconciliation, about the right key and first request;
//! purge removes exactly the settled records past retention, never more than its limit.
//!
//! Lease expiry is real: short leases (5 ms) end by the store's clock and the test polls
//! the status function until it says so; long leases (1 h) are ended through the store's
//! own `abandon`. Crashes are reservations made through the store API by a "process" that
//! never comes back, or panics in the body. The tools differ in lease, retention (a week
//! or 1 ms) and hook, and share one namespace, so they act as one tool.
//!
//! `the_model_catches_broken_stores` runs the same model against stores with known bugs
//! and fails unless it catches each of them.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

use idem::store::block_on;
use idem::store::{DynStore, Store};
use idem::store::{RecordId, Reservation, Reserve};
use idem::telemetry::Outcome;
use idem::{Abandoned, ErrorCode, Reconciled, Status, idempotent};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

const KEYS: u8 = 3;
const NAMESPACE: &str = "model";
const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Out {
    effect: u64,
    amount: u32,
    #[serde(default)]
    replayed: bool,
}

#[derive(Debug)]
enum ToolError {
    Idem(idem::Error),
    /// The body's own error: nothing was sent.
    Declined,
}

impl From<idem::Error> for ToolError {
    fn from(error: idem::Error) -> Self {
        ToolError::Idem(error)
    }
}

/// What the body does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Ok,
    /// Returns an error before sending anything: the key is released.
    Fail,
    /// Panics before sending: the action did not happen, nobody knows.
    PanicBeforeSend,
    /// Panics after sending: the action happened, nobody knows.
    PanicAfterSend,
    /// Sends, then waits at the gate until the test lets it go: a call in flight, which
    /// may outlive its lease.
    Hold,
}

/// The payload of the test's own panics, kept out of the test output.
struct SimulatedCrash;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HookMode {
    /// Ask the provider's ledger: done with its charge, or not done.
    Ledger,
    /// The provider cannot tell.
    Unknown,
    /// The reconciliation itself crashes.
    Panic,
}

#[derive(Debug)]
struct Effect {
    id: u64,
    key: String,
    epoch: u32,
    amount: u32,
}

/// The stand-in provider (a ledger without deduplication of its own), the store, and the
/// gate that holds bodies in flight.
struct Ctx {
    store: Box<dyn DynStore>,
    effects: Mutex<Vec<Effect>>,
    /// Per key: how many times its records were purged. The provider forgets an action
    /// with its record, so a reconciliation looks at the current epoch only.
    epochs: Mutex<HashMap<String, u32>>,
    next_effect: AtomicU64,
    hook_mode: Mutex<HookMode>,
    hook_calls: AtomicUsize,
    /// The last call the hook was asked about: its key and compared fields.
    abandoned: Mutex<Option<(String, serde_json::Value)>>,
    body_runs: AtomicUsize,
    /// Keys whose held bodies may go on; keys whose held bodies are waiting.
    gate: Mutex<(HashSet<u8>, HashSet<u8>)>,
    gate_changed: Condvar,
}

impl Ctx {
    fn new(store: Box<dyn DynStore>) -> Ctx {
        Ctx {
            store,
            effects: Mutex::default(),
            epochs: Mutex::default(),
            next_effect: AtomicU64::new(1),
            hook_mode: Mutex::new(HookMode::Ledger),
            hook_calls: AtomicUsize::new(0),
            abandoned: Mutex::new(None),
            body_runs: AtomicUsize::new(0),
            gate: Mutex::default(),
            gate_changed: Condvar::new(),
        }
    }

    fn epoch(&self, key: &str) -> u32 {
        self.epochs.lock().unwrap().get(key).copied().unwrap_or(0)
    }

    fn send(&self, key: &str, amount: u32) -> u64 {
        let id = self.next_effect.fetch_add(1, Ordering::SeqCst);
        let epoch = self.epoch(key);
        self.effects.lock().unwrap().push(Effect { id, key: key.to_owned(), epoch, amount });
        id
    }

    /// The provider's answer to "did an action with this key happen?".
    fn lookup(&self, key: &str) -> Option<Out> {
        let epoch = self.epoch(key);
        let effects = self.effects.lock().unwrap();
        let found = effects.iter().find(|e| e.key == key && e.epoch == epoch)?;
        Some(Out { effect: found.id, amount: found.amount, replayed: false })
    }

    fn effects_of(&self, key: &str) -> Vec<u64> {
        self.effects.lock().unwrap().iter().filter(|e| e.key == key).map(|e| e.id).collect()
    }

    fn body(&self, k: u8, amount: u32, act: Act) -> Result<Out, ToolError> {
        self.body_runs.fetch_add(1, Ordering::SeqCst);
        let key = idem::current_key().expect("inside the body").to_string();
        match act {
            Act::Fail => return Err(ToolError::Declined),
            Act::PanicBeforeSend => std::panic::panic_any(SimulatedCrash),
            Act::Ok | Act::PanicAfterSend | Act::Hold => {}
        }
        let effect = self.send(&key, amount);
        match act {
            Act::PanicAfterSend => std::panic::panic_any(SimulatedCrash),
            Act::Hold => self.hold(k),
            _ => {}
        }
        Ok(Out { effect, amount, replayed: false })
    }

    fn reconcile(&self, abandoned: &Abandoned) -> Reconciled<Out> {
        self.hook_calls.fetch_add(1, Ordering::SeqCst);
        *self.abandoned.lock().unwrap() = Some((abandoned.key().to_string(), abandoned.request()));
        let mode = *self.hook_mode.lock().unwrap();
        match mode {
            HookMode::Unknown => Reconciled::Unknown,
            HookMode::Panic => std::panic::panic_any(SimulatedCrash),
            HookMode::Ledger => match self.lookup(abandoned.key()) {
                Some(out) => Reconciled::Done(out),
                None => Reconciled::NotDone,
            },
        }
    }

    fn hold(&self, k: u8) {
        let mut gate = self.gate.lock().unwrap();
        gate.1.insert(k);
        self.gate_changed.notify_all();
        let (mut gate, timeout) =
            self.gate_changed.wait_timeout_while(gate, DEADLINE, |(open, _)| !open.contains(&k)).unwrap();
        assert!(!timeout.timed_out(), "a held body was never let go");
        gate.0.remove(&k);
        gate.1.remove(&k);
    }

    fn wait_until_held(&self, k: u8) {
        let gate = self.gate.lock().unwrap();
        let (gate, timeout) =
            self.gate_changed.wait_timeout_while(gate, DEADLINE, |(_, waiting)| !waiting.contains(&k)).unwrap();
        drop(gate);
        assert!(!timeout.timed_out(), "the held call never reached its body");
    }

    fn let_go(&self, k: u8) {
        self.gate.lock().unwrap().0.insert(k);
        self.gate_changed.notify_all();
    }
}

/// The tool in every combination of lease (1h or 5ms), retention (the default week or
/// 1ms) and hook (asks the provider, or none). All share one namespace and key template,
/// so they are one tool called with different policies.
macro_rules! tool {
    ($name:ident, $lease:tt, $retain:tt, hooked) => {
        #[idempotent(key = "op:<k>", compare = [amount], store = ctx.store, namespace = "model", lease = $lease,
                                    retain = $retain, reconcile = |abandoned: Abandoned| ctx.reconcile(&abandoned))]
        fn $name(ctx: &Ctx, k: u8, amount: u32, act: Act) -> Result<Out, ToolError> {
            ctx.body(k, amount, act)
        }
    };
    ($name:ident, $lease:tt, $retain:tt, unhooked) => {
        #[idempotent(key = "op:<k>", compare = [amount], store = ctx.store, namespace = "model", lease = $lease,
                                    retain = $retain)]
        fn $name(ctx: &Ctx, k: u8, amount: u32, act: Act) -> Result<Out, ToolError> {
            ctx.body(k, amount, act)
        }
    };
}

tool!(long_kept_hooked, "1h", "7d", hooked);
tool!(long_kept_unhooked, "1h", "7d", unhooked);
tool!(long_brief_hooked, "1h", "1ms", hooked);
tool!(long_brief_unhooked, "1h", "1ms", unhooked);
tool!(short_kept_hooked, "5ms", "7d", hooked);
tool!(short_kept_unhooked, "5ms", "7d", unhooked);
tool!(short_brief_hooked, "5ms", "1ms", hooked);
tool!(short_brief_unhooked, "5ms", "1ms", unhooked);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Policy {
    short_lease: bool,
    brief_retention: bool,
    /// `None`: no hook.
    hook: Option<HookMode>,
}

fn call(ctx: &Ctx, policy: Policy, k: u8, amount: u32, act: Act) -> Result<Out, ToolError> {
    if let Some(mode) = policy.hook {
        *ctx.hook_mode.lock().unwrap() = mode;
    }
    let tool = match (policy.short_lease, policy.brief_retention, policy.hook.is_some()) {
        (false, false, true) => long_kept_hooked,
        (false, false, false) => long_kept_unhooked,
        (false, true, true) => long_brief_hooked,
        (false, true, false) => long_brief_unhooked,
        (true, false, true) => short_kept_hooked,
        (true, false, false) => short_kept_unhooked,
        (true, true, true) => short_brief_hooked,
        (true, true, false) => short_brief_unhooked,
    };
    tool(ctx, k, amount, act)
}

fn status(ctx: &Ctx, k: u8) -> Status<Out> {
    long_kept_hooked_status(ctx, k).unwrap()
}

fn key_of(k: u8) -> String {
    format!("op:{k}")
}

/// The operations.
#[derive(Clone, Debug)]
enum Op {
    /// A call (a first call or a retry) with a compared amount of 1 or 2.
    Call { k: u8, amount: u32, act: Act, policy: Policy },
    /// A process reserves the key through the store API, maybe sends, and dies.
    Crash { k: u8, amount: u32, sent: bool, short_lease: bool },
    /// The lease of a crashed reservation ends (the store's `abandon`).
    Expire { k: u8 },
    /// A call whose body is held in flight on another thread.
    Start { k: u8, amount: u32 },
    /// The held body goes on and completes.
    Finish { k: u8 },
    /// Purge in batches of `limit` until every record past retention is gone.
    Purge { limit: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS;
    // Mostly the same amount, so that retries replay more often than they conflict.
    let amount = prop_oneof![3 => Just(1u32), 1 => Just(2u32)];
    let act = prop_oneof![
        4 => Just(Act::Ok),
        1 => Just(Act::Fail),
        1 => Just(Act::PanicBeforeSend),
        1 => Just(Act::PanicAfterSend),
    ];
    let hook = prop_oneof![
        6 => Just(Some(HookMode::Ledger)),
        2 => Just(Some(HookMode::Unknown)),
        1 => Just(Some(HookMode::Panic)),
        2 => Just(None),
    ];
    let policy = (any::<bool>(), prop::bool::weighted(0.3), hook)
        .prop_map(|(short_lease, brief_retention, hook)| Policy { short_lease, brief_retention, hook });
    prop_oneof![
        8 => (k.clone(), amount.clone(), act, policy).prop_map(|(k, amount, act, policy)| Op::Call { k, amount, act, policy }),
        2 => (k.clone(), amount.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(k, amount, sent, short_lease)| Op::Crash { k, amount, sent, short_lease }),
        2 => k.clone().prop_map(|k| Op::Expire { k }),
        1 => (k.clone(), amount).prop_map(|(k, amount)| Op::Start { k, amount }),
        1 => k.prop_map(|k| Op::Finish { k }),
        1 => (1usize..=3).prop_map(|limit| Op::Purge { limit }),
    ]
}

/// What the model knows about one key.
#[derive(Clone, Debug, PartialEq)]
enum Rec {
    Absent,
    InProgress {
        amount: u32,
        expired: bool,
        /// The provider's effect, if the action happened before the crash.
        sent: Option<u64>,
        /// The reservation is still the one of a live call held in flight (nobody took it
        /// over), which completes it when it finishes.
        in_flight: bool,
    },
    Completed {
        amount: u32,
        out: Out,
        brief: bool,
    },
}

struct Model {
    recs: Vec<Rec>,
    /// Every effect the provider should hold per key, and how many in the current epoch.
    effects: Vec<Vec<u64>>,
    in_epoch: Vec<usize>,
    /// When each unsettled record's action started, as its status first said.
    since: Vec<Option<i64>>,
    hook_calls: usize,
    body_runs: usize,
}

impl Model {
    fn new() -> Model {
        let n = usize::from(KEYS);
        Model {
            recs: vec![Rec::Absent; n],
            effects: vec![Vec::new(); n],
            in_epoch: vec![0; n],
            since: vec![None; n],
            hook_calls: 0,
            body_runs: 0,
        }
    }

    fn effect(&mut self, k: u8, id: u64) {
        let k = usize::from(k);
        self.effects[k].push(id);
        self.in_epoch[k] += 1;
        assert!(self.in_epoch[k] <= 1, "the model itself expects two effects for key {k}");
    }
}

/// How a call must be answered.
#[derive(Debug)]
enum Expected {
    /// The body runs (a fresh call, or a reconciliation that found nothing).
    Runs {
        after_hook: bool,
    },
    Replayed(Out),
    Reconciled(Out),
    /// The hook panics after taking the reservation over.
    HookPanics,
    Error(ErrorCode, Outcome),
}

fn expected(model: &Model, k: u8, amount: u32, policy: Policy) -> Expected {
    match &model.recs[usize::from(k)] {
        Rec::Absent => Expected::Runs { after_hook: false },
        Rec::InProgress { amount: first, .. } | Rec::Completed { amount: first, .. } if *first != amount => {
            Expected::Error(ErrorCode::Conflict, Outcome::Conflict)
        }
        Rec::Completed { out, .. } => Expected::Replayed(out.clone()),
        Rec::InProgress { expired: false, .. } => Expected::Error(ErrorCode::InProgress, Outcome::InProgress),
        Rec::InProgress { sent, .. } => match (policy.hook, sent) {
            (None | Some(HookMode::Unknown), _) => Expected::Error(ErrorCode::OutcomeUnknown, Outcome::Unknown),
            (Some(HookMode::Panic), _) => Expected::HookPanics,
            (Some(HookMode::Ledger), Some(effect)) => {
                Expected::Reconciled(Out { effect: *effect, amount, replayed: false })
            }
            (Some(HookMode::Ledger), None) => Expected::Runs { after_hook: true },
        },
    }
}

fn install_quiet_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<SimulatedCrash>() {
                default(info);
            }
        }));
    });
}

fn wait_until_unknown(ctx: &Ctx, k: u8) -> Result<(), TestCaseError> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match status(ctx, k) {
            Status::Unknown { .. } => {
                seen("lease ended (clock)");
                return Ok(());
            }
            Status::InProgress { .. } => {}
            other => prop_assert!(false, "key {}: waiting for its lease to end, the status is {:?}", k, other),
        }
        prop_assert!(Instant::now() < deadline, "key {}: the lease did not end", k);
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn idem_code(result: &Result<Out, ToolError>) -> Option<ErrorCode> {
    match result {
        Err(ToolError::Idem(error)) => Some(error.code()),
        _ => None,
    }
}

/// Runs one call op against the real tool and the model.
fn step_call(ctx: &Ctx, model: &mut Model, k: u8, amount: u32, act: Act, policy: Policy) -> Result<(), TestCaseError> {
    let expected = expected(model, k, amount, policy);
    let reconciled = matches!(expected, Expected::Reconciled(_));
    let hooks_before = ctx.hook_calls.load(Ordering::SeqCst);
    let ran =
        std::panic::catch_unwind(AssertUnwindSafe(|| idem::telemetry::observe(|| call(ctx, policy, k, amount, act))));
    let hooked = ctx.hook_calls.load(Ordering::SeqCst) - hooks_before;
    let expect_hook = match (&expected, &model.recs[usize::from(k)]) {
        (Expected::Runs { after_hook }, _) => *after_hook,
        (Expected::Reconciled(_) | Expected::HookPanics, _) => true,
        (Expected::Error(ErrorCode::OutcomeUnknown, _), _) => policy.hook.is_some(),
        _ => false,
    };
    prop_assert_eq!(hooked, usize::from(expect_hook), "key {}: hook calls ({:?})", k, expected);
    model.hook_calls += hooked;
    let i = usize::from(k);
    if hooked > 0 {
        // The hook is asked about this key, with the first call's compared fields.
        let Rec::InProgress { amount: first, .. } = model.recs[i] else { unreachable!("only abandoned keys") };
        let asked = ctx.abandoned.lock().unwrap().take();
        prop_assert_eq!(asked, Some((key_of(k), serde_json::json!({ "amount": first }))));
    }
    match expected {
        Expected::Runs { after_hook } => {
            model.body_runs += 1;
            match (act, ran) {
                (Act::Ok, Ok((Ok(out), calls))) => {
                    seen(if after_hook { "reconciled (not done): body ran" } else { "fresh" });
                    prop_assert_eq!(calls[0].outcome, Outcome::Fresh);
                    prop_assert_eq!((out.amount, out.replayed), (amount, false));
                    model.effect(k, out.effect);
                    model.recs[i] = Rec::Completed { amount, out, brief: policy.brief_retention };
                }
                (Act::Fail, Ok((Err(ToolError::Declined), calls))) => {
                    seen("released");
                    prop_assert_eq!(calls[0].outcome, Outcome::Released);
                    model.recs[i] = Rec::Absent;
                }
                (Act::PanicBeforeSend | Act::PanicAfterSend, Err(_)) => {
                    seen(if act == Act::PanicAfterSend { "panic after sending" } else { "panic before sending" });
                    let sent = if act == Act::PanicAfterSend {
                        let id = *ctx.effects_of(&key_of(k)).last().expect("sent before the panic");
                        model.effect(k, id);
                        Some(id)
                    } else {
                        None
                    };
                    model.recs[i] = Rec::InProgress { amount, expired: policy.short_lease, sent, in_flight: false };
                    if policy.short_lease {
                        wait_until_unknown(ctx, k)?;
                    }
                }
                (act, ran) => {
                    prop_assert!(false, "key {}: the body ran with {:?} and gave {:?}", k, act, ran.map(|r| r.0))
                }
            }
        }
        Expected::Replayed(stored) | Expected::Reconciled(stored) => {
            let Ok((answer, calls)) = ran else {
                return Err(TestCaseError::fail(format!("key {k}: a replay panicked")));
            };
            let outcome = if reconciled { Outcome::Reconciled } else { Outcome::Replayed };
            seen(if reconciled { "reconciled (done)" } else { "replayed" });
            prop_assert_eq!(calls[0].outcome, outcome, "key {}: {:?}", k, answer);
            let replay = match answer {
                Ok(out) => out,
                Err(e) => return Err(TestCaseError::fail(format!("key {k}: expected a replay, got {e:?}"))),
            };
            prop_assert_eq!(&replay, &Out { replayed: true, ..stored.clone() }, "key {}: replayed identically", k);
            if reconciled {
                model.recs[i] = Rec::Completed { amount, out: stored, brief: policy.brief_retention };
            }
        }
        Expected::HookPanics => {
            prop_assert!(ran.is_err(), "key {}: the hook's panic reaches the caller", k);
            seen("hook panicked");
            // Taken over with this tool's lease, then abandoned again by the panic.
            let Rec::InProgress { expired, in_flight, .. } = &mut model.recs[i] else { unreachable!() };
            (*expired, *in_flight) = (policy.short_lease, false);
            if policy.short_lease {
                wait_until_unknown(ctx, k)?;
            }
        }
        Expected::Error(code, outcome) => {
            let Ok((answer, calls)) = ran else { return Err(TestCaseError::fail(format!("key {k}: {code} panicked"))) };
            prop_assert_eq!(idem_code(&answer), Some(code), "key {}: {:?}", k, answer);
            prop_assert_eq!(calls[0].outcome, outcome);
            seen(match (code, &model.recs[i], policy.hook) {
                (ErrorCode::Conflict, ..) => "conflict",
                (ErrorCode::InProgress, Rec::InProgress { in_flight: true, .. }, _) => "in progress (in flight)",
                (ErrorCode::InProgress, ..) => "in progress (held lease)",
                (_, _, None) => "unknown (no hook)",
                _ => "unknown (hook could not tell)",
            });
            if code == ErrorCode::OutcomeUnknown
                && let Rec::InProgress { expired, in_flight, .. } = &mut model.recs[i]
            {
                *expired = true;
                // A hook that could not tell took the reservation over (and ended its
                // lease again): a call in flight no longer holds it.
                *in_flight &= policy.hook.is_none();
            }
        }
    }
    Ok(())
}

fn step<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    ctx: &'env Ctx,
    model: &mut Model,
    op: &Op,
    held: &mut HashMap<u8, HeldCall<'scope>>,
) -> Result<(), TestCaseError> {
    match *op {
        Op::Call { k, amount, act, policy } => step_call(ctx, model, k, amount, act, policy)?,
        Op::Crash { k, amount, sent, short_lease } => {
            let key = key_of(k);
            let lease = if short_lease { Duration::from_millis(5) } else { Duration::from_secs(3600) };
            let request = format!("{{\"amount\":{amount}}}");
            let id = RecordId { namespace: NAMESPACE, key: &key };
            let reserved = block_on(ctx.store.reserve(Reserve { id, request: &request, lease })).unwrap();
            let i = usize::from(k);
            match (reserved, &model.recs[i]) {
                (Reservation::Acquired { .. }, Rec::Absent) => {
                    seen("crash");
                    let sent = sent.then(|| ctx.send(&key, amount));
                    if let Some(id) = sent {
                        model.effect(k, id);
                    }
                    model.recs[i] = Rec::InProgress { amount, expired: short_lease, sent, in_flight: false };
                    if short_lease {
                        wait_until_unknown(ctx, k)?;
                    }
                }
                (Reservation::Existing(_), rec) if *rec != Rec::Absent => {}
                (reserved, rec) => {
                    prop_assert!(false, "key {}: reserving gave {:?}, the model has {:?}", k, reserved, rec)
                }
            }
        }
        Op::Expire { k } => {
            if let Rec::InProgress { expired: expired @ false, .. } = &mut model.recs[usize::from(k)] {
                let key = key_of(k);
                let id = RecordId { namespace: NAMESPACE, key: &key };
                let record = block_on(ctx.store.read(id)).unwrap().expect("reserved");
                block_on(ctx.store.abandon(id, record.token)).unwrap();
                seen("lease ended (abandon)");
                *expired = true;
            }
        }
        Op::Start { k, amount } => {
            if model.recs[usize::from(k)] != Rec::Absent || held.contains_key(&k) {
                // Not a first call: an ordinary call, answered from the record.
                let policy = Policy { short_lease: false, brief_retention: false, hook: Some(HookMode::Ledger) };
                return step_call(ctx, model, k, amount, Act::Ok, policy);
            }
            let policy = Policy { short_lease: false, brief_retention: false, hook: Some(HookMode::Ledger) };
            let thread = scope.spawn(move || idem::telemetry::observe(|| call(ctx, policy, k, amount, Act::Hold)));
            ctx.wait_until_held(k);
            let effect = *ctx.effects_of(&key_of(k)).last().expect("sent before holding");
            held.insert(k, HeldCall { amount, effect, thread });
            model.body_runs += 1;
            model.effect(k, effect);
            model.recs[usize::from(k)] =
                Rec::InProgress { amount, expired: false, sent: Some(effect), in_flight: true };
        }
        Op::Finish { k } => {
            if let Some(call) = held.remove(&k) {
                finish(ctx, model, k, call)?;
            }
        }
        Op::Purge { limit } => {
            let brief: Vec<usize> = (0..model.recs.len())
                .filter(|i| matches!(model.recs[*i], Rec::Completed { brief: true, .. }))
                .collect();
            let deadline = Instant::now() + DEADLINE;
            let mut purged = 0;
            while purged < brief.len() {
                let n = block_on(ctx.store.purge(limit)).unwrap();
                prop_assert!(n <= limit, "purge removed {} records, more than its limit {}", n, limit);
                purged += n;
                prop_assert!(Instant::now() < deadline, "purge never removed the records past retention");
                if purged < brief.len() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            prop_assert_eq!(purged, brief.len(), "purge removed records within retention or in progress");
            prop_assert_eq!(block_on(ctx.store.purge(limit)).unwrap(), 0, "purge removed a record within retention");
            for i in brief {
                seen("purged");
                model.recs[i] = Rec::Absent;
                model.in_epoch[i] = 0;
                *ctx.epochs.lock().unwrap().entry(key_of(i as u8)).or_default() += 1;
            }
        }
    }
    Ok(())
}

/// A call whose body waits at the gate on a thread of its own.
struct HeldCall<'scope> {
    amount: u32,
    /// What it sent before it was held.
    effect: u64,
    thread: std::thread::ScopedJoinHandle<'scope, (Result<Out, ToolError>, Vec<idem::telemetry::Observation>)>,
}

fn finish(ctx: &Ctx, model: &mut Model, k: u8, call: HeldCall<'_>) -> Result<(), TestCaseError> {
    ctx.let_go(k);
    let (answer, calls) = call.thread.join().expect("a held call does not panic");
    let out = match answer {
        Ok(out) => out,
        Err(e) => return Err(TestCaseError::fail(format!("key {k}: the held call failed: {e:?}"))),
    };
    // The body's own result, whatever became of its reservation.
    prop_assert_eq!(&out, &Out { effect: call.effect, amount: call.amount, replayed: false });
    let rec = &mut model.recs[usize::from(k)];
    if let Rec::InProgress { in_flight: true, expired, .. } = *rec {
        // Still its reservation, even past its lease: it completes the key.
        seen(if expired { "in-flight call finished after its lease" } else { "in-flight call finished" });
        prop_assert_eq!(calls[0].outcome, Outcome::Fresh, "key {}", k);
        *rec = Rec::Completed { amount: call.amount, out, brief: false };
    } else {
        // Taken over after its lease ended: its completion is fenced off.
        seen("late finisher fenced");
        prop_assert_eq!(calls[0].outcome, Outcome::Fenced, "key {}: model {:?}", k, rec);
    }
    Ok(())
}

/// The store agrees with the model on every key, and the provider holds exactly the
/// effects the model expects: never two for one key within its retention.
fn check(ctx: &Ctx, model: &mut Model) -> Result<(), TestCaseError> {
    for k in 0..KEYS {
        let i = usize::from(k);
        let status = status(ctx, k);
        // An unsettled record keeps the time its action started, across take-overs.
        match (&status, model.since[i]) {
            (Status::InProgress { since_ms, .. } | Status::Unknown { since_ms }, Some(since)) => {
                prop_assert_eq!(*since_ms, since, "key {}: the action's start moved", k);
            }
            (Status::InProgress { since_ms, .. } | Status::Unknown { since_ms }, None) => {
                model.since[i] = Some(*since_ms);
            }
            _ => model.since[i] = None,
        }
        match (&model.recs[i], &status) {
            (Rec::Absent, Status::NotFound) => {}
            (Rec::InProgress { expired: false, .. }, Status::InProgress { .. }) => {}
            (Rec::InProgress { expired: true, .. }, Status::Unknown { .. }) => {}
            (Rec::Completed { out, .. }, Status::Completed(stored)) => {
                prop_assert_eq!(out, stored, "key {}: the stored result", k);
            }
            (rec, status) => prop_assert!(false, "key {}: the status is {:?}, the model has {:?}", k, status, rec),
        }
        prop_assert_eq!(&ctx.effects_of(&key_of(k)), &model.effects[i], "key {}: the provider's effects", k);
    }
    let effects = ctx.effects.lock().unwrap();
    let mut per_epoch = HashMap::new();
    for effect in effects.iter() {
        let n = per_epoch.entry((&effect.key, effect.epoch)).or_insert(0);
        *n += 1;
        prop_assert!(*n <= 1, "two effects for {} within its retention: {:?}", effect.key, *effects);
    }
    prop_assert_eq!(ctx.body_runs.load(Ordering::SeqCst), model.body_runs, "bodies run");
    prop_assert_eq!(ctx.hook_calls.load(Ordering::SeqCst), model.hook_calls, "hook calls");
    Ok(())
}

fn run(ops: &[Op], store: Box<dyn DynStore>) -> Result<(), TestCaseError> {
    install_quiet_panic_hook();
    let ctx = Ctx::new(store);
    let mut model = Model::new();
    std::thread::scope(|scope| {
        let mut held = HashMap::new();
        let mut result = Ok(());
        for (n, op) in ops.iter().enumerate() {
            result = step(scope, &ctx, &mut model, op, &mut held).and_then(|()| check(&ctx, &mut model));
            if let Err(error) = result {
                result = Err(TestCaseError::fail(format!("step {n} {op:?}: {error}")));
                break;
            }
        }
        let mut held: Vec<_> = held.into_iter().collect();
        held.sort_by_key(|(k, _)| *k);
        for (k, call) in held {
            if result.is_ok() {
                result = finish(&ctx, &mut model, k, call).and_then(|()| check(&ctx, &mut model));
            } else {
                ctx.let_go(k);
            }
        }
        result
    })
}

/// How often each kind of step happened over a run of `the_stores_follow_the_model` (on
/// its thread only), to show (and check) that the sequences reach every path.
static SEEN: Mutex<Vec<(&'static str, usize)>> = Mutex::new(Vec::new());

thread_local!(static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });

fn seen(what: &'static str) {
    if !COUNTING.get() {
        return;
    }
    let mut seen = SEEN.lock().unwrap();
    match seen.iter_mut().find(|(w, _)| *w == what) {
        Some((_, n)) => *n += 1,
        None => seen.push((what, 1)),
    }
}

/// Paths every run must reach: if the generator stops reaching one, the test says so.
const MUST_SEE: &[&str] = &[
    "fresh",
    "released",
    "panic before sending",
    "panic after sending",
    "replayed",
    "reconciled (done)",
    "reconciled (not done): body ran",
    "unknown (hook could not tell)",
    "unknown (no hook)",
    "conflict",
    "in progress (held lease)",
    "in progress (in flight)",
    "crash",
    "lease ended (abandon)",
    "lease ended (clock)",
    "in-flight call finished",
    "in-flight call finished after its lease",
    "late finisher fenced",
    "hook panicked",
    "purged",
];

fn run_model(name: &str, store: impl Fn() -> (Box<dyn DynStore>, Option<tempfile::TempDir>)) {
    // No regression files: a failure prints its minimal sequence of operations, to be
    // pasted into a test of its own.
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES);
    let config = ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let strategy = proptest::collection::vec(op(), 1..48);
    let result = runner.run(&strategy, |ops| {
        let (store, _dir) = store();
        run(&ops, store)
    });
    if let Err(error) = result {
        panic!("{name}: {error}");
    }
}

/// Cases per store (`PROPTEST_CASES` overrides it): each runs up to 48 operations; both
/// stores together take a few seconds.
const CASES: u32 = 128;

#[test]
fn the_stores_follow_the_model() {
    COUNTING.set(true);
    run_model("memory store", || (Box::new(idem::MemoryStore::new()), None));
    run_model("SQLite store", || {
        let dir = tempfile::tempdir().unwrap();
        let store = idem::SqliteStore::builder(dir.path().join("idem.db"))
            .synchronous(idem::store::Synchronous::Normal)
            .open()
            .unwrap();
        (Box::new(store), Some(dir))
    });
    let seen = SEEN.lock().unwrap().clone();
    eprintln!("model steps over both stores:");
    for (what, n) in &seen {
        eprintln!("  {n:>6} x {what}");
    }
    for what in MUST_SEE {
        assert!(seen.iter().any(|(w, _)| w == what), "no case reached: {what}");
    }
}

/// Broken stores, each with a bug that idempotency libraries have shipped: the model must
/// catch every one of them, or it is not testing what it claims to.
#[derive(Clone, Copy, Debug)]
enum Bug {
    /// A reservation found abandoned is released and taken afresh ("blind release").
    ReleasesAbandoned,
    /// Purge also deletes abandoned reservations.
    PurgesAbandoned,
    /// Completion ignores the tool's retention: results are purgeable at once.
    IgnoresRetention,
    /// Completion is not fenced: a late finisher completes the current holder's record.
    Unfenced,
}

struct Broken {
    inner: idem::MemoryStore,
    bug: Bug,
    seen: Mutex<HashSet<String>>,
}

impl Store for Broken {
    async fn reserve(&self, request: Reserve<'_>) -> Result<Reservation, idem::store::StoreError> {
        self.seen.lock().unwrap().insert(request.id.key.to_owned());
        let reserved = self.inner.reserve(request).await?;
        if let (Bug::ReleasesAbandoned, Reservation::Existing(record)) = (self.bug, &reserved)
            && matches!(record.state, idem::store::RecordState::InProgress { lease_expired: true, .. })
        {
            self.inner.release(request.id, record.token).await?;
            return self.inner.reserve(request).await;
        }
        Ok(reserved)
    }
    async fn take_over(
        &self,
        id: RecordId<'_>,
        expired: idem::store::Token,
        lease: Duration,
    ) -> Result<idem::store::Token, idem::store::StoreError> {
        self.inner.take_over(id, expired, lease).await
    }
    async fn renew(&self, renewal: idem::store::Renew<'_>) -> Result<(), idem::store::StoreError> {
        self.inner.renew(renewal).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: idem::store::Token,
        completion: idem::store::Completion<'_>,
        retain: Duration,
    ) -> Result<(), idem::store::StoreError> {
        match self.bug {
            Bug::IgnoresRetention => self.inner.complete(id, token, completion, Duration::ZERO).await,
            Bug::Unfenced => {
                let current = self.inner.read(id).await?.map_or(token, |record| record.token);
                self.inner.complete(id, current, completion, retain).await
            }
            _ => self.inner.complete(id, token, completion, retain).await,
        }
    }
    async fn release(&self, id: RecordId<'_>, token: idem::store::Token) -> Result<(), idem::store::StoreError> {
        self.inner.release(id, token).await
    }
    async fn abandon(&self, id: RecordId<'_>, token: idem::store::Token) -> Result<(), idem::store::StoreError> {
        self.inner.abandon(id, token).await
    }
    async fn read(&self, id: RecordId<'_>) -> Result<Option<idem::store::Record>, idem::store::StoreError> {
        self.inner.read(id).await
    }
    async fn purge(&self, limit: usize) -> Result<usize, idem::store::StoreError> {
        let mut purged = self.inner.purge(limit).await?;
        if let Bug::PurgesAbandoned = self.bug {
            let seen: Vec<String> = self.seen.lock().unwrap().iter().cloned().collect();
            for key in &seen {
                let id = RecordId { namespace: NAMESPACE, key };
                if let Some(record) = self.inner.read(id).await?
                    && let idem::store::RecordState::InProgress { lease_expired: true, .. } = record.state
                    && purged < limit
                {
                    self.inner.release(id, record.token).await?;
                    purged += 1;
                }
            }
        }
        Ok(purged)
    }
}

#[test]
fn the_model_catches_broken_stores() {
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    for bug in [Bug::ReleasesAbandoned, Bug::PurgesAbandoned, Bug::IgnoresRetention, Bug::Unfenced] {
        let config =
            ProptestConfig { cases: 512, failure_persistence: None, max_shrink_iters: 0, ..Default::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let result = runner.run(&proptest::collection::vec(op(), 1..48), |ops| {
            let store = Broken { inner: idem::MemoryStore::new(), bug, seen: Mutex::default() };
            run(&ops, Box::new(store))
        });
        match result {
            Err(failure) => eprintln!("{bug:?}: caught: {}", failure.to_string().lines().next().unwrap_or_default()),
            Ok(()) => panic!("the model did not notice a store with the bug {bug:?}"),
        }
    }
}
