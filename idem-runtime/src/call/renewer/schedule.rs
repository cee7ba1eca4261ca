//! When a running call's lease is renewed, and the progress it has to write.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::call::Tool;
use crate::key::Key;
use crate::observe::{Happened, Phase, TelemetryKey, notify};
use crate::store::StoreError;

/// The soonest a progress message is written after it is set, and the least time between
/// two writes of one: a body that reports progress in a loop costs one write a second.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The longest progress message kept, in bytes; a longer one is cut at a character
/// boundary.
const PROGRESS_MAX: usize = 256;

/// When one running call's lease is renewed, and what progress it has to write. Kept
/// small: a sync call's schedule is moved onto its thread's list and off again.
pub(super) struct Schedule {
    pub(super) tool: &'static Tool,
    pub(super) key: Key,
    /// When the call started, a moment before its reservation (the call's own clock
    /// reading, reused), so renewals come a little early, never late.
    pub(super) started: Instant,
    /// When the next renewal is due; `None` once renewal ended (the key was lost, or
    /// `max_hold` passed).
    pub(super) next_due: Option<Instant>,
    /// Only a body that reports progress has one.
    pub(super) progress: Option<Box<Progress>>,
}

pub(super) struct Progress {
    message: Arc<str>,
    /// Whether `message` is not yet written.
    unsent: bool,
    written_at: Option<Instant>,
}

impl Schedule {
    pub(super) fn new(tool: &'static Tool, key: Key, started: Instant) -> Schedule {
        let next_due = Some(started + Self::every(tool));
        Schedule { tool, key, started, next_due, progress: None }
    }

    /// A third of the lease: a renewal that fails has two more chances before the lease ends.
    fn every(tool: &Tool) -> Duration {
        (tool.lease / 3).max(Duration::from_millis(1))
    }

    /// If a renewal is due at `now`: the progress to write with it (`Some(None)`: nothing
    /// new to say), and the renewal after it scheduled. Renewal ends once the call has
    /// run for the tool's `max_hold`.
    pub(super) fn take_due(&mut self, now: Instant) -> Option<Option<Arc<str>>> {
        if self.next_due.is_none_or(|due| due > now) {
            return None;
        }
        if now.saturating_duration_since(self.started) >= self.tool.max_hold {
            self.next_due = None;
            notify(self.tool.subject(), &self.key, Phase::Renew, Happened::HoldEnded);
            tracing::warn!(
                target: "idem", tool = self.tool.name, key = %TelemetryKey::of(&self.key), max_hold = ?self.tool.max_hold,
                "the body has run past the tool's max_hold: its lease is no longer renewed, so the key counts \
                 as abandoned when the lease ends"
            );
            return None;
        }
        self.next_due = Some(now + Self::every(self.tool));
        let unsent = self.progress.as_mut().filter(|progress| progress.unsent);
        Some(unsent.map(|progress| {
            progress.unsent = false;
            Arc::clone(&progress.message)
        }))
    }

    /// Records what a renewal came to (`sent`: the progress it wrote). Returns the next
    /// renewal when it moved earlier (a retry after a failure).
    pub(super) fn renewed(&mut self, result: Result<(), StoreError>, sent: Option<Arc<str>>) -> Option<Instant> {
        let now = Instant::now();
        match result {
            Ok(()) => {
                if let (Some(progress), Some(_)) = (self.progress.as_mut(), sent) {
                    progress.written_at = Some(now);
                }
                None
            }
            Err(StoreError::Fenced) => {
                self.next_due = None;
                notify(self.tool.subject(), &self.key, Phase::Renew, Happened::Fenced);
                tracing::error!(
                    target: "idem", tool = self.tool.name, key = %TelemetryKey::of(&self.key),
                    "the running call lost its key: its lease ended and another call took it over; its result \
                     will not be recorded"
                );
                None
            }
            Err(error) => {
                if let (Some(progress), Some(sent)) = (self.progress.as_mut(), sent)
                    && Arc::ptr_eq(&progress.message, &sent)
                {
                    progress.unsent = true;
                }
                tracing::warn!(
                    target: "idem", tool = self.tool.name, key = %TelemetryKey::of(&self.key), %error,
                    "could not renew the running call's lease; trying again"
                );
                self.pull_to(now + Self::every(self.tool) / 3)
            }
        }
    }

    /// Keeps `message`, to be written with a renewal a second from now (or a second after
    /// the last one written). Returns the next renewal when it moved earlier.
    pub(super) fn set_progress(&mut self, message: &str) -> Option<Instant> {
        let mut cut = message.len().min(PROGRESS_MAX);
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let message: Arc<str> = Arc::from(&message[..cut]);
        let progress = match &mut self.progress {
            Some(progress) => {
                progress.message = message;
                progress.unsent = true;
                progress
            }
            None => self.progress.insert(Box::new(Progress { message, unsent: true, written_at: None })),
        };
        let now = Instant::now();
        let write_at = progress.written_at.map_or(now, |at| at.max(now)) + PROGRESS_EVERY;
        self.pull_to(write_at)
    }

    fn pull_to(&mut self, due: Instant) -> Option<Instant> {
        match self.next_due {
            Some(next) if next > due => {
                self.next_due = Some(due);
                Some(due)
            }
            _ => None,
        }
    }
}
