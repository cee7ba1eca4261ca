//! The article's five retry scenarios, runnable against any tool, sync or async.
//!
//! Agent stacks repeat calls in five typical ways: the first call times out while its work
//! goes on, the model retries at once, it retries later with reworded free text, it asks
//! again with a changed amount, and two layers send the same call at the same moment.
//! [`RetryMatrix::run`] plays all five against a tool and [`MatrixReport::check`] says
//! whether each got the answer an idempotent tool must give, and whether each action
//! happened exactly once.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::{Duration, Instant};
//! use idem_runtime::testing::matrix::RetryMatrix;
//! # use idem_runtime as idem;
//! # #[derive(Clone)] struct Args { period: &'static str, amount: u32, memo: &'static str }
//! # fn send_invoice(_: Args) -> Result<u32, idem::Error> { Ok(1) }
//! let matrix = RetryMatrix {
//!     first: Args { period: "2026-10", amount: 120, memo: "October support" },
//!     reworded: Args { period: "2026-10", amount: 120, memo: "Support, October 2026" },
//!     changed: Args { period: "2026-10", amount: 150, memo: "October support" },
//!     other: Args { period: "2026-11", amount: 120, memo: "October support" },
//!     patience: Duration::from_millis(200),
//! };
//! let report = matrix.run(send_invoice, |_args: &Args| /* count in your ledger */ 1);
//! # let _ = report;
//! // report.check().unwrap();
//! ```

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::observe::{Outcome, observe};

/// The five scenarios' arguments and the caller's patience.
#[derive(Clone, Debug)]
pub struct RetryMatrix<A> {
    /// The first call: it should take longer than `patience`, so the caller gives up
    /// while the work goes on (the dangerous case).
    pub first: A,
    /// The same action with only free text reworded (a memo): a repeat, replayed.
    pub reworded: A,
    /// The same action with a compared field changed (an amount): a conflict.
    pub changed: A,
    /// Another action (another period), sent twice at the same moment.
    pub other: A,
    /// How long a caller waits for an answer before it gives up, like a tool wrapper's
    /// timeout. The work itself is never cancelled.
    pub patience: Duration,
}

/// What one call's caller saw within its patience.
#[derive(Debug)]
pub enum Answer<R> {
    /// The tool answered in time, with this return value.
    Returned(R),
    /// The caller gave up; the call went on in the background.
    TimedOut,
    /// The call panicked.
    Panicked,
}

/// One call of the matrix.
#[derive(Debug)]
pub struct Step<R> {
    /// The scenario, as the article prints it (`"1 first call"`).
    pub label: &'static str,
    /// What the caller saw within its patience.
    pub answer: Answer<R>,
    /// How idem answered the call, once it finished: whether the body ran, or the answer
    /// came from the store. `None` when the tool made no idempotent call.
    pub outcome: Option<Outcome>,
}

/// The matrix's results: six calls (the fifth scenario sends two) and the effects counted
/// once every call had finished.
#[derive(Debug)]
pub struct MatrixReport<R> {
    /// The calls, in order.
    pub steps: Vec<Step<R>>,
    /// Effects of the first action (scenarios 1 to 4), counted after all work finished.
    pub first_effects: usize,
    /// Effects of the other action (scenario 5).
    pub other_effects: usize,
}

struct Pending<R> {
    label: &'static str,
    answer: Answer<R>,
    rest: Option<Receiver<(R, Option<Outcome>)>>,
    outcome: Option<Outcome>,
}

impl<A> RetryMatrix<A>
where
    A: Clone + Send + 'static,
{
    /// Plays the five scenarios against `call`, each call on its own thread so that a caller
    /// can give up while the work goes on, then waits for all work to finish and counts
    /// each action's effects with `effects`.
    ///
    /// `call` must make its idempotent call on the thread it is given (for an async tool,
    /// `handle.block_on(tool(args))`), so that its outcome can be observed.
    pub fn run<R, F, E>(&self, call: F, effects: E) -> MatrixReport<R>
    where
        R: Send + 'static,
        F: Fn(A) -> R + Send + Sync + 'static,
        E: Fn(&A) -> usize,
    {
        let call = Arc::new(call);
        let mut steps = Vec::with_capacity(6);
        let first = self.wait(spawn(&call, "1 first call", self.first.clone(), None), Instant::now());
        steps.push(self.wait(spawn(&call, "2 retry at once", self.first.clone(), None), Instant::now()));
        // "Later" means after the first call's work has finished, whenever that is.
        steps.insert(0, finish(first));
        steps.push(self.wait(spawn(&call, "3 retry later", self.reworded.clone(), None), Instant::now()));
        steps.push(self.wait(spawn(&call, "4 other amount", self.changed.clone(), None), Instant::now()));
        // Both racers start before either is waited for, and share one deadline.
        let barrier = Arc::new(Barrier::new(2));
        let racers = [
            spawn(&call, "5 two at once", self.other.clone(), Some(barrier.clone())),
            spawn(&call, "5 two at once", self.other.clone(), Some(barrier)),
        ];
        let started = Instant::now();
        steps.extend(racers.map(|racer| self.wait(racer, started)));
        let steps: Vec<Step<R>> = steps.into_iter().map(finish).map(Pending::into_step).collect();
        MatrixReport { steps, first_effects: effects(&self.first), other_effects: effects(&self.other) }
    }

    /// Waits for a call's answer until `patience` after `started`, as its caller would.
    fn wait<R>(&self, running: Running<R>, started: Instant) -> Pending<R> {
        let Running { label, receive } = running;
        let left = self.patience.saturating_sub(started.elapsed());
        match receive.recv_timeout(left) {
            Ok((result, outcome)) => Pending { label, answer: Answer::Returned(result), rest: None, outcome },
            Err(RecvTimeoutError::Timeout) => {
                Pending { label, answer: Answer::TimedOut, rest: Some(receive), outcome: None }
            }
            Err(RecvTimeoutError::Disconnected) => {
                Pending { label, answer: Answer::Panicked, rest: None, outcome: None }
            }
        }
    }
}

struct Running<R> {
    label: &'static str,
    receive: Receiver<(R, Option<Outcome>)>,
}

/// Starts one call on its own thread, after `barrier` when racing.
fn spawn<A, R, F>(call: &Arc<F>, label: &'static str, args: A, barrier: Option<Arc<Barrier>>) -> Running<R>
where
    A: Send + 'static,
    R: Send + 'static,
    F: Fn(A) -> R + Send + Sync + 'static,
{
    let (send, receive) = mpsc::channel();
    let call = Arc::clone(call);
    thread::spawn(move || {
        if let Some(barrier) = barrier {
            barrier.wait();
        }
        let (result, observed) = observe(|| call(args));
        let _ = send.send((result, observed.last().map(|o| o.outcome)));
    });
    Running { label, receive }
}

/// Waits for a call's work to finish and keeps how idem answered it.
fn finish<R>(mut pending: Pending<R>) -> Pending<R> {
    if let Some(rest) = pending.rest.take() {
        match rest.recv() {
            Ok((_, outcome)) => pending.outcome = outcome,
            Err(_) => pending.answer = Answer::Panicked,
        }
    }
    pending
}

impl<R> Pending<R> {
    fn into_step(self) -> Step<R> {
        Step { label: self.label, answer: self.answer, outcome: self.outcome }
    }
}

impl<R> MatrixReport<R> {
    /// Checks every answer an idempotent tool must give, and exactly one effect per action.
    /// The error lists every failed expectation.
    ///
    /// - 1: the body ran (whether or not the caller waited for it);
    /// - 2: IN_PROGRESS, or the replay if the first call had finished already;
    /// - 3: the replay of the first result;
    /// - 4: CONFLICT;
    /// - 5: exactly one of the two ran the body; the other got IN_PROGRESS or the replay;
    /// - one effect for each action.
    pub fn check(&self) -> Result<(), String> {
        let outcome = |i: usize| self.steps.get(i).and_then(|s| s.outcome);
        let mut failures = Vec::new();
        let mut expect = |i: usize, ok: &dyn Fn(Option<Outcome>) -> bool, wanted: &str| {
            if !ok(outcome(i)) {
                let label = self.steps.get(i).map_or("?", |s| s.label);
                failures.push(format!("{label}: expected {wanted}, got {:?}", outcome(i)));
            }
        };
        expect(0, &|o| o == Some(Outcome::Fresh), "the body to run once (Fresh)");
        expect(1, &|o| matches!(o, Some(Outcome::InProgress | Outcome::Replayed)), "InProgress or Replayed");
        expect(2, &|o| o == Some(Outcome::Replayed), "Replayed");
        expect(3, &|o| o == Some(Outcome::Conflict), "Conflict");
        let ran = [4, 5].into_iter().filter(|&i| outcome(i).is_some_and(Outcome::ran_body)).count();
        let answered =
            [4, 5].into_iter().filter(|&i| matches!(outcome(i), Some(Outcome::InProgress | Outcome::Replayed))).count();
        if ran != 1 || answered != 1 {
            failures.push(format!(
                "5 two at once: expected one call to run the body and one to get InProgress or Replayed, got {:?} and {:?}",
                outcome(4),
                outcome(5)
            ));
        }
        for (name, count) in [("first action", self.first_effects), ("other action", self.other_effects)] {
            if count != 1 {
                failures.push(format!("{name}: expected exactly 1 effect, counted {count}"));
            }
        }
        if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
    }
}

impl<R> MatrixReport<R> {
    /// One line per call, as the article prints them: the answer its caller saw, rendered
    /// by `show`, then how idem answered it once it finished (`[idem: fresh]`).
    pub fn lines(&self, patience: Duration, show: impl Fn(&R) -> String) -> Vec<String> {
        self.steps
            .iter()
            .map(|step| {
                let answer = match &step.answer {
                    Answer::Returned(result) => show(result),
                    Answer::TimedOut => format!("TIMEOUT: no answer within {patience:?} (the work goes on)"),
                    Answer::Panicked => "PANICKED".to_owned(),
                };
                let idem = step.outcome.map_or("no idempotent call", Outcome::as_str);
                format!("{:<18} {answer}  [idem: {idem}]", format!("{}:", step.label))
            })
            .collect()
    }
}
