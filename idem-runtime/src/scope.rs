//! Thread-local context that follows a call: set while a closure runs, or while a future
//! is polled, and restored afterwards, so it works on any executor and nests.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Something installed in a thread-local for the duration of a call or a poll.
pub(crate) trait Scope {
    /// What was installed before, to put back.
    type Saved;
    /// Installs this scope; returns what it replaced.
    fn enter(&mut self) -> Self::Saved;
    /// Puts back what `enter` replaced, taking back this scope's state.
    fn exit(&mut self, saved: Self::Saved);
}

struct Restore<'s, S: Scope> {
    scope: &'s mut S,
    saved: Option<S::Saved>,
}

impl<S: Scope> Drop for Restore<'_, S> {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            self.scope.exit(saved);
        }
    }
}

/// Runs `f` with `scope` installed, restoring the previous state even if `f` panics.
pub(crate) fn in_scope<S: Scope, R>(scope: &mut S, f: impl FnOnce() -> R) -> R {
    let saved = scope.enter();
    let _restore = Restore { scope, saved: Some(saved) };
    f()
}

/// A future polled with `scope` installed.
pub(crate) struct Scoped<F, S> {
    inner: F,
    pub(crate) scope: S,
}

impl<F, S> Scoped<F, S> {
    pub(crate) fn new(inner: F, scope: S) -> Self {
        Scoped { inner, scope }
    }
}

impl<F: Future, S: Scope> Future for Scoped<F, S> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` while
        // pinned, and `Scoped` has no Drop impl or Unpin impl that could move it. `scope`
        // is not pinned and is only used through `&mut`.
        let this = unsafe { self.get_unchecked_mut() };
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        in_scope(&mut this.scope, || inner.poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local!(static DEPTH: Cell<u32> = const { Cell::new(0) });

    struct Depth(u32);

    impl Scope for Depth {
        type Saved = u32;
        fn enter(&mut self) -> u32 {
            DEPTH.with(|d| d.replace(self.0))
        }
        fn exit(&mut self, saved: u32) {
            DEPTH.with(|d| d.set(saved));
        }
    }

    #[test]
    fn restores_after_a_panic() {
        let result = std::panic::catch_unwind(|| in_scope(&mut Depth(7), || panic!("body panicked")));
        assert!(result.is_err());
        assert_eq!(DEPTH.with(Cell::get), 0);
    }

    #[test]
    fn nests() {
        in_scope(&mut Depth(1), || {
            in_scope(&mut Depth(2), || assert_eq!(DEPTH.with(Cell::get), 2));
            assert_eq!(DEPTH.with(Cell::get), 1);
        });
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
