//! Giving up a request from another thread.
//!
//! `serve` handles each host request on its own thread, and the host may
//! cancel it while that thread waits on an upstream server (or on the
//! host's answer to a question). The front makes an [`Abort`] for the
//! request and [`Abort::enter`]s it on the handling thread; whatever
//! waits there on someone else registers a hook with [`arm`] (the session
//! sends `notifications/cancelled` with the upstream's request id; a
//! question asked of the host fails) and looks at [`fired`] while it
//! waits. Another thread [`Abort::fire`]s it: each armed hook runs once,
//! and the waits give up.
//!
//! A thread that entered no abort (every command but `serve`) arms
//! nothing and is never given up: nothing changes for it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What runs when a request is given up.
pub(crate) type Hook = Arc<dyn Fn() + Send + Sync>;

/// How often a wait that may be given up looks whether it was.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// One request's cancellation, shared by the thread that handles it and
/// the one that may cancel it.
#[derive(Clone, Default)]
pub(crate) struct Abort(Arc<Inner>);

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    hooks: Mutex<Vec<(u64, Hook)>>,
    next: AtomicU64,
}

impl std::fmt::Debug for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Abort").field("fired", &self.fired()).finish()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Abort>> = const { RefCell::new(None) };
}

impl Abort {
    /// Gives the request up: every armed hook runs (once), on this thread.
    pub(crate) fn fire(&self) {
        if self.0.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        let hooks = std::mem::take(&mut *self.lock());
        for (_, h) in hooks {
            h();
        }
    }

    /// Whether both are the one request's.
    pub(crate) fn same(&self, other: &Abort) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn fired(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }

    /// Makes it this thread's abort for the guard's life.
    pub(crate) fn enter(&self) -> Entered {
        let before = CURRENT.with(|c| c.replace(Some(self.clone())));
        Entered(before)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Hook)>> {
        self.0.hooks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Restores the thread's previous abort when dropped.
pub(crate) struct Entered(Option<Abort>);

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = before);
    }
}

/// This thread's abort, if it entered one.
pub(crate) fn current() -> Option<Abort> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether this thread's request was given up.
pub(crate) fn fired() -> bool {
    current().is_some_and(|a| a.fired())
}

/// Registers `hook` with this thread's abort until the guard drops; it
/// runs at once when the request was already given up. `None` (nothing
/// registered) on a thread without an abort.
pub(crate) fn arm(hook: Hook) -> Option<Armed> {
    let abort = current()?;
    let key = abort.0.next.fetch_add(1, Ordering::SeqCst);
    abort.lock().push((key, hook.clone()));
    if abort.fired() {
        // Fired between the check and the push: it may have missed it.
        let missed = {
            let mut h = abort.lock();
            let before = h.len();
            h.retain(|(k, _)| *k != key);
            h.len() != before
        };
        if missed {
            hook();
        }
    }
    Some(Armed { abort, key })
}

/// Unregisters its hook when dropped.
pub(crate) struct Armed {
    abort: Abort,
    key: u64,
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.abort.lock().retain(|(k, _)| *k != self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn hooks_run_once_on_fire_and_only_while_armed() {
        assert!(arm(Arc::new(|| {})).is_none());
        let a = Abort::default();
        let n = Arc::new(AtomicUsize::new(0));
        let _in = a.enter();
        let m = n.clone();
        let kept = arm(Arc::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }));
        let m = n.clone();
        drop(arm(Arc::new(move || {
            m.fetch_add(10, Ordering::SeqCst);
        })));
        assert!(!fired());
        a.fire();
        a.fire();
        assert!(fired());
        assert_eq!(n.load(Ordering::SeqCst), 1);
        let m = n.clone();
        let _late = arm(Arc::new(move || {
            m.fetch_add(100, Ordering::SeqCst);
        }));
        assert_eq!(n.load(Ordering::SeqCst), 101);
        drop(kept);
    }

    #[test]
    fn entering_nests_and_restores() {
        let (a, b) = (Abort::default(), Abort::default());
        let outer = a.enter();
        {
            let _inner = b.enter();
            b.fire();
            assert!(fired());
        }
        assert!(!fired());
        drop(outer);
        assert!(current().is_none());
    }
}
