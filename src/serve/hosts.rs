//! What a host is told between its requests: the resources it subscribed
//! to (`resources/subscribe`, handshake era) and the upstream lists that
//! changed. Each host session may have one way to be told (stdio: stdout;
//! HTTP: its standalone GET stream, when it opened one); a message for a
//! host without one is dropped.
//!
//! Bounded: at most [`MAX_SUBS`] subscriptions in all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::gateway::HostLink;
use crate::mcp::{self, method};

/// Subscriptions held at once, over every host.
pub(crate) const MAX_SUBS: usize = 256;

/// One host's subscription to one upstream resource.
struct Sub {
    host: u64,
    server: String,
    /// The URI as the server knows it.
    uri: String,
    /// The URI as the host named it.
    shown: String,
}

#[derive(Default)]
struct State {
    links: HashMap<u64, Arc<dyn HostLink>>,
    subs: Vec<Sub>,
}

/// The host sessions' ways to be told things, and their subscriptions;
/// `closing` once the front ends (stdio: end of input), which ends every
/// `subscriptions/listen`.
#[derive(Default)]
pub(crate) struct Hosts(Mutex<State>, std::sync::atomic::AtomicBool);

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosts").finish_non_exhaustive()
    }
}

impl Hosts {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The front ends: nobody is told anything any more.
    pub(crate) fn close(&self) {
        self.1.store(true, std::sync::atomic::Ordering::SeqCst);
        self.lock().links.clear();
    }

    pub(crate) fn closing(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `link` tells host `host` things from now on (replacing any).
    pub(crate) fn attach(&self, host: u64, link: Arc<dyn HostLink>) {
        self.lock().links.insert(host, link);
    }

    /// Whether `link` is still how `host` is told things.
    pub(crate) fn attached(
        &self,
        host: u64,
        link: &Arc<dyn HostLink>,
    ) -> bool {
        self.lock().links.get(&host).is_some_and(|l| Arc::ptr_eq(l, link))
    }

    /// `link` tells host `host` things, unless it has a way already.
    pub(crate) fn attach_first(
        &self,
        host: u64,
        link: Arc<dyn HostLink>,
    ) -> bool {
        let mut s = self.lock();
        if s.links.contains_key(&host) {
            return false;
        }
        s.links.insert(host, link);
        true
    }

    /// `host` can no longer be told things (its stream ended).
    pub(crate) fn detach_link(&self, host: u64, link: &Arc<dyn HostLink>) {
        let mut s = self.lock();
        if s.links.get(&host).is_some_and(|l| Arc::ptr_eq(l, link)) {
            s.links.remove(&host);
        }
    }

    /// The host session ended: its link and subscriptions go. Returns
    /// the (server, URI) pairs nobody subscribes to any more.
    pub(crate) fn forget(&self, host: u64) -> Vec<(String, String)> {
        let mut s = self.lock();
        s.links.remove(&host);
        let mine: Vec<(String, String)> = s
            .subs
            .iter()
            .filter(|x| x.host == host)
            .map(|x| (x.server.clone(), x.uri.clone()))
            .collect();
        s.subs.retain(|x| x.host != host);
        mine.into_iter()
            .filter(|(sv, u)| {
                !s.subs.iter().any(|x| &x.server == sv && &x.uri == u)
            })
            .collect()
    }

    /// Records a subscription (once per host and URI); `Err` when too
    /// many are held.
    pub(crate) fn subscribe(
        &self,
        host: u64,
        server: &str,
        uri: &str,
        shown: &str,
    ) -> Result<(), String> {
        let mut s = self.lock();
        if s.subs.iter().any(|x| x.host == host && x.shown == shown) {
            return Ok(());
        }
        if s.subs.len() >= MAX_SUBS {
            return Err(format!(
                "too many subscriptions (at most {MAX_SUBS}); unsubscribe \
                 from some first"
            ));
        }
        s.subs.push(Sub {
            host,
            server: server.into(),
            uri: uri.into(),
            shown: shown.into(),
        });
        Ok(())
    }

    /// Drops a subscription; true when nobody else subscribes to the
    /// server's URI (the upstream may be unsubscribed).
    pub(crate) fn unsubscribe(
        &self,
        host: u64,
        server: &str,
        uri: &str,
    ) -> bool {
        let mut s = self.lock();
        s.subs.retain(|x| {
            !(x.host == host && x.server == server && x.uri == uri)
        });
        !s.subs.iter().any(|x| x.server == server && x.uri == uri)
    }

    /// An upstream said a resource changed: each host subscribed to it is
    /// told, under the URI it subscribed with.
    pub(crate) fn updated(&self, server: &str, uri: &str) {
        // Told outside the lock: a host slow to read holds up no other.
        let told: Vec<(Arc<dyn HostLink>, String)> = {
            let s = self.lock();
            s.subs
                .iter()
                .filter(|x| x.server == server && x.uri == uri)
                .filter_map(|x| {
                    Some((s.links.get(&x.host)?.clone(), x.shown.clone()))
                })
                .collect()
        };
        for (link, shown) in told {
            link.notify(method::RESOURCES_UPDATED, json!({"uri": shown}));
        }
    }

    /// Whether some host subscribes to one of `server`'s resources.
    pub(crate) fn subscribed(&self, server: &str) -> bool {
        self.lock().subs.iter().any(|x| x.server == server)
    }

    /// Tells every host that can be told (an upstream list changed).
    pub(crate) fn broadcast(&self, m: &str) {
        let links: Vec<Arc<dyn HostLink>> =
            self.lock().links.values().cloned().collect();
        for l in links {
            l.notify(m, json!({}));
        }
    }
}

/// How a `subscriptions/listen` request (2026-07-28) is told things:
/// only the list changes it opted in to (resource updates come by its
/// subscriptions), each stamped with the request's id.
pub(crate) struct Listen {
    pub(crate) inner: Arc<dyn HostLink>,
    pub(crate) id: Value,
    /// The `*/list_changed` methods it opted in to.
    pub(crate) lists: Vec<&'static str>,
}

impl HostLink for Listen {
    fn request(
        &self,
        _method: &str,
        _params: Value,
        _timeout: std::time::Duration,
    ) -> Result<Value, String> {
        Err("a 2026-07-28 host is not asked on a listen stream".into())
    }

    fn notify(&self, m: &str, mut params: Value) {
        if mcp::is_list_changed(m) && !self.lists.contains(&m) {
            return;
        }
        if !params.is_object() {
            params = json!({});
        }
        params["_meta"] = json!({mcp::meta::SUBSCRIPTION_ID: self.id});
        self.inner.notify(m, params);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[derive(Default)]
    struct Told(Mutex<Vec<(String, Value)>>);

    impl HostLink for Told {
        fn request(
            &self,
            _m: &str,
            _p: Value,
            _t: Duration,
        ) -> Result<Value, String> {
            Err("no".into())
        }
        fn notify(&self, method: &str, params: Value) {
            self.0.lock().unwrap().push((method.into(), params));
        }
    }

    #[test]
    fn updates_reach_the_subscribed_hosts_under_their_uris() {
        let h = Hosts::default();
        let (a, b) = (Arc::new(Told::default()), Arc::new(Told::default()));
        h.attach(1, a.clone());
        h.attach(2, b.clone());
        h.subscribe(1, "s", "x://1", "rivumi+s:x://1").unwrap();
        h.subscribe(2, "s", "x://1", "x://1").unwrap();
        h.updated("s", "x://1");
        h.updated("s", "x://other");
        assert_eq!(a.0.lock().unwrap()[0].1["uri"], "rivumi+s:x://1");
        assert_eq!(b.0.lock().unwrap().len(), 1);
        assert!(!h.unsubscribe(1, "s", "x://1"), "host 2 still holds it");
        assert_eq!(h.forget(2), vec![("s".into(), "x://1".into())]);
        h.updated("s", "x://1");
        assert_eq!(a.0.lock().unwrap().len(), 1);
        for i in 0..MAX_SUBS {
            h.subscribe(3, "s", &format!("u{i}"), &format!("u{i}")).unwrap();
        }
        assert!(h.subscribe(3, "s", "one-more", "one-more").is_err());
    }
}
