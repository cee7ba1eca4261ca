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

pin_project_lite::pin_project! {
    /// A future polled with `scope` installed.
    pub(crate) struct Scoped<F, S> {
        #[pin]
        inner: F,
        scope: S,
    }
}

impl<F, S> Scoped<F, S> {
    pub(crate) fn new(inner: F, scope: S) -> Self {
        Scoped { inner, scope }
    }

    /// The scope's state, once the future is pinned (e.g. what it gathered while polled).
    pub(crate) fn scope_mut(self: Pin<&mut Self>) -> &mut S {
        self.project().scope
    }
}

impl<F: Future, S: Scope> Future for Scoped<F, S> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let inner = this.inner;
        in_scope(this.scope, || inner.poll(cx))
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
