//! The pool: live sessions keyed by launch identity, at most one per key.
//!
//! A reusable piece (the daemon holds warm servers in it; a gateway can
//! hold its upstream sessions the same way). The pool knows nothing of
//! what it holds beyond [`Pooled`]: whether an entry is still alive, since
//! when nobody has used it, and how to close it. Starting is serialised
//! per key (two callers asking for one key at once start one server, the
//! second waits for it), never across keys, and the number of entries is
//! bounded: when it is full, the entry unused the longest makes room, and
//! with none unused nothing is started. Each key belongs to a family (the
//! same server but for a value: a rotated token, a changed variable): a
//! family keeps at most [`FAMILY_MAX`] entries, the unused ones beyond
//! that retiring when a new one starts. An entry is retired only once it
//! is claimed unused ([`Pooled::claim_if_unused`]), atomically with
//! whatever would take it up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Result;

/// What a pool can hold.
pub(crate) trait Pooled: Send + Sync {
    /// Whether it can still be used (a server that exited cannot).
    fn alive(&self) -> bool;
    /// Since when nobody has used it, or `None` while it is in use.
    fn idle_since(&self) -> Option<Instant>;
    /// Closes it for good (and what it started); idempotent.
    fn close(&self);
    /// Marks it closing when nobody uses it, atomically with whatever
    /// takes it up (so nobody can once this says true); false when in
    /// use.
    fn claim_if_unused(&self) -> bool;
}

type Slot<T> = Arc<Mutex<Option<Arc<T>>>>;

/// The most entries one family keeps (see [`Pool::get_or_start`]).
pub(crate) const FAMILY_MAX: usize = 4;

/// Entries of type `T` by key, each with its family.
pub(crate) struct Pool<T> {
    slots: Mutex<HashMap<String, (String, Slot<T>)>>,
    max: usize,
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("max", &self.max).finish_non_exhaustive()
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<T: Pooled> Pool<T> {
    /// An empty pool of at most `max` entries.
    pub(crate) fn new(max: usize) -> Pool<T> {
        Pool { slots: Mutex::new(HashMap::new()), max }
    }

    /// The live entry of `key` (of `family`), or a new one from `start`
    /// (called with only this key's slot held); `true` when it was
    /// started now. A dead entry is closed and replaced. `None`: the pool
    /// is full of entries in use.
    pub(crate) fn get_or_start(
        &self,
        key: &str,
        family: &str,
        start: impl FnOnce() -> Result<Arc<T>>,
    ) -> Result<Option<(Arc<T>, bool)>> {
        let slot = loop {
            {
                let mut slots = lock(&self.slots);
                if slots.contains_key(key) || slots.len() < self.max {
                    let (_, slot) =
                        slots.entry(key.to_string()).or_insert_with(|| {
                            (family.to_string(), Slot::default())
                        });
                    break Arc::clone(slot);
                }
            }
            // Full: the entry unused the longest makes room.
            let unused = self
                .entries()
                .into_iter()
                .filter_map(|(k, t)| t.idle_since().map(|s| (s, k, t)))
                .min_by_key(|(s, _, _)| *s);
            match unused {
                // A dead one goes too; one taken up meanwhile is no longer
                // unused, so the next look passes it by.
                Some((_, k, t)) => {
                    if !t.alive() || t.claim_if_unused() {
                        self.retire(&k, &t);
                    }
                }
                None => return Ok(None),
            }
        };
        let mut held = lock(&slot);
        if let Some(t) = held.as_ref() {
            if t.alive() {
                return Ok(Some((Arc::clone(t), false)));
            }
            t.close();
            *held = None;
        }
        match start() {
            Ok(t) => {
                *held = Some(Arc::clone(&t));
                drop(held);
                self.retire_family(key, family);
                Ok(Some((t, true)))
            }
            Err(e) => {
                drop(held);
                self.forget_empty(key);
                Err(e)
            }
        }
    }

    /// Keeps at most [`FAMILY_MAX`] entries of `family`: beyond that, the
    /// unused ones other than `key`'s retire, unused the longest first
    /// (the same server started for values that changed since: a minted
    /// token, a rotated variable). A few are kept, so that two users of
    /// one server with different values do not restart it in turn.
    fn retire_family(&self, key: &str, family: &str) {
        let kin: Vec<String> = lock(&self.slots)
            .iter()
            .filter(|(_, (f, _))| f == family)
            .map(|(k, _)| k.clone())
            .collect();
        let mut over = kin.len().saturating_sub(FAMILY_MAX);
        let mut unused: Vec<(Instant, String, Arc<T>)> = self
            .entries()
            .into_iter()
            .filter(|(k, _)| k != key && kin.contains(k))
            .filter_map(|(k, t)| t.idle_since().map(|s| (s, k, t)))
            .collect();
        unused.sort_by_key(|(s, _, _)| *s);
        for (_, k, t) in unused {
            if over == 0 {
                break;
            }
            if t.claim_if_unused() {
                self.retire(&k, &t);
                over -= 1;
            }
        }
    }

    /// Removes `key`'s slot when it holds nothing (nobody is starting it).
    fn forget_empty(&self, key: &str) {
        let mut slots = lock(&self.slots);
        let empty = slots.get(key).is_some_and(|(_, s)| {
            s.try_lock().is_ok_and(|held| held.is_none())
        });
        if empty {
            slots.remove(key);
        }
    }

    /// Removes and closes `key`'s entry when it is still `which`.
    pub(crate) fn retire(&self, key: &str, which: &Arc<T>) {
        let slot = lock(&self.slots).get(key).map(|(_, s)| Arc::clone(s));
        let Some(slot) = slot else { return };
        let taken = {
            let mut held = lock(&slot);
            match held.as_ref() {
                Some(t) if Arc::ptr_eq(t, which) => held.take(),
                _ => None,
            }
        };
        if let Some(t) = taken {
            t.close();
        }
        self.forget_empty(key);
    }

    /// Every entry now, by key (those being started are left out).
    pub(crate) fn entries(&self) -> Vec<(String, Arc<T>)> {
        let slots: Vec<(String, Slot<T>)> = lock(&self.slots)
            .iter()
            .map(|(k, (_, s))| (k.clone(), Arc::clone(s)))
            .collect();
        slots
            .into_iter()
            .filter_map(|(k, s)| {
                let held = s.try_lock().ok()?;
                held.as_ref().map(|t| (k, Arc::clone(t)))
            })
            .collect()
    }

    /// Closes the entries that are dead or unused for `idle`; how many.
    pub(crate) fn retire_idle(&self, idle: Duration) -> usize {
        let mut n = 0;
        for (k, t) in self.entries() {
            let unused = t.idle_since().is_some_and(|s| s.elapsed() >= idle)
                && t.claim_if_unused();
            if unused || !t.alive() {
                self.retire(&k, &t);
                n += 1;
            }
        }
        n
    }

    /// Whether no key is held or being started.
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.slots).is_empty()
    }

    /// Closes every entry, in parallel (each close may wait for a
    /// process to exit).
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<T>> = {
            let mut slots = lock(&self.slots);
            let taken: Vec<Slot<T>> =
                slots.drain().map(|(_, (_, s))| s).collect();
            taken.iter().filter_map(|s| lock(s).take()).collect()
        };
        std::thread::scope(|s| {
            for t in &all {
                s.spawn(|| t.close());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;
    use crate::error::Error;

    struct Item {
        alive: AtomicBool,
        closed: AtomicUsize,
        idle: Option<Instant>,
    }

    impl Item {
        fn new(idle: Option<Instant>) -> Arc<Item> {
            Arc::new(Item {
                alive: AtomicBool::new(true),
                closed: AtomicUsize::new(0),
                idle,
            })
        }
    }

    impl Pooled for Item {
        fn alive(&self) -> bool {
            self.alive.load(Ordering::SeqCst)
        }
        fn idle_since(&self) -> Option<Instant> {
            self.idle
        }
        fn close(&self) {
            self.closed.fetch_add(1, Ordering::SeqCst);
            self.alive.store(false, Ordering::SeqCst);
        }
        fn claim_if_unused(&self) -> bool {
            self.idle.is_some()
        }
    }

    /// `get_or_start` of `key` in `family` that must find or start one.
    fn get(
        p: &Pool<Item>,
        key: &str,
        family: &str,
        start: impl FnOnce() -> Result<Arc<Item>>,
    ) -> (Arc<Item>, bool) {
        p.get_or_start(key, family, start).unwrap().expect("room")
    }

    #[test]
    fn one_entry_per_key_and_a_dead_one_is_replaced() {
        let p = Pool::new(4);
        let (a, fresh) = get(&p, "k", "f", || Ok(Item::new(None)));
        assert!(fresh);
        let (b, fresh) = get(&p, "k", "f", || panic!("started"));
        assert!(!fresh && Arc::ptr_eq(&a, &b));
        a.alive.store(false, Ordering::SeqCst);
        let (c, fresh) = get(&p, "k", "f", || Ok(Item::new(None)));
        assert!(fresh && !Arc::ptr_eq(&a, &c));
        assert_eq!(a.closed.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn bounded_and_a_failed_start_leaves_nothing() {
        let p = Pool::new(1);
        assert!(
            p.get_or_start("a", "a", || Err(Error::server("no"))).is_err()
        );
        assert!(p.is_empty());
        get(&p, "a", "a", || Ok(Item::new(None)));
        // Full of an entry in use: nothing is started.
        let full = p.get_or_start("b", "b", || panic!("started")).unwrap();
        assert!(full.is_none());
    }

    #[test]
    fn a_full_pool_makes_room_by_the_entry_unused_longest() {
        let p = Pool::new(2);
        let ago = |s| Instant::now().checked_sub(Duration::from_secs(s));
        let (old, _) = get(&p, "old", "x", || Ok(Item::new(ago(20))));
        let (new, _) = get(&p, "new", "y", || Ok(Item::new(ago(10))));
        let (c, fresh) = get(&p, "c", "z", || Ok(Item::new(None)));
        assert!(fresh);
        assert_eq!(old.closed.load(Ordering::SeqCst), 1, "the oldest went");
        assert_eq!(new.closed.load(Ordering::SeqCst), 0);
        assert_eq!(c.closed.load(Ordering::SeqCst), 0);
        assert_eq!(p.entries().len(), 2);
    }

    #[test]
    fn a_family_keeps_a_few_and_retires_the_unused_longest_beyond() {
        let p = Pool::new(16);
        let ago = |s| Instant::now().checked_sub(Duration::from_secs(s));
        let (oldest, _) = get(&p, "tok-1", "web", || Ok(Item::new(ago(40))));
        let (busy, _) = get(&p, "tok-2", "web", || Ok(Item::new(None)));
        let (old, _) = get(&p, "tok-3", "web", || Ok(Item::new(ago(30))));
        let (other, _) = get(&p, "x", "files", || Ok(Item::new(ago(50))));
        get(&p, "tok-4", "web", || Ok(Item::new(ago(20))));
        // Four of "web": none retires yet.
        assert_eq!(oldest.closed.load(Ordering::SeqCst), 0);
        get(&p, "tok-5", "web", || Ok(Item::new(None)));
        assert_eq!(oldest.closed.load(Ordering::SeqCst), 1, "unused longest");
        assert_eq!(old.closed.load(Ordering::SeqCst), 0);
        assert_eq!(busy.closed.load(Ordering::SeqCst), 0, "in use: stays");
        assert_eq!(other.closed.load(Ordering::SeqCst), 0, "another family");
        assert_eq!(p.entries().len(), 5);
    }

    #[test]
    fn idle_entries_retire_and_close_all_closes() {
        let p = Pool::new(4);
        let old = Instant::now().checked_sub(Duration::from_secs(10));
        let (a, _) = get(&p, "old", "o", || Ok(Item::new(old)));
        let (b, _) = get(&p, "busy", "b", || Ok(Item::new(None)));
        assert_eq!(p.retire_idle(Duration::from_secs(5)), 1);
        assert_eq!(a.closed.load(Ordering::SeqCst), 1);
        assert_eq!(p.entries().len(), 1);
        p.close_all();
        assert_eq!(b.closed.load(Ordering::SeqCst), 1);
        assert!(p.is_empty());
    }
}
