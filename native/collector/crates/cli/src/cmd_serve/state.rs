//! The server's state: the recordings (each with its ring of live windows), the connections
//! that may be evicted, the counters behind the caps, and the bench runs, plan runs and loops.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use numascope_core::recorder::RecordSummary;
use numascope_core::topology::Topology;
use serde_json::Value;
use tokio::sync::{watch, Notify, Semaphore};

pub(super) use super::jobs::Status;
use super::jobs::{BenchRuns, PlanRuns};
use super::limits::MAX_IDLE_CONNECTIONS;
use super::loops;

pub(super) struct RecInner {
    pub(super) status: Status,
    pub(super) summary: Option<RecordSummary>,
    pub(super) error: Option<(String, String)>,
    /// Serialized `window` messages; `first_seq` is the seq of `windows[0]`.
    pub(super) windows: VecDeque<Arc<String>>,
    pub(super) first_seq: u64,
    pub(super) latest: Option<Value>,
    pub(super) stop_requested: bool,
}

pub(super) struct Recording {
    pub(super) id: String,
    pub(super) target: Value,
    pub(super) duration_s: Option<f64>,
    pub(super) started_unix_ms: u64,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) inner: Mutex<RecInner>,
    /// Bumped after every new window and at the end: wakes the WebSocket clients.
    pub(super) wake: watch::Sender<u64>,
}

impl Recording {
    pub(super) fn notify(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// The connections that may be closed to make room (see `MAX_IDLE_CONNECTIONS`), oldest first.
#[derive(Default)]
pub(super) struct IdleConnections {
    next_id: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Notify>>>,
}

impl IdleConnections {
    /// Registers a new connection as idle, first closing the oldest idle one when at the cap.
    pub(super) fn register(&self) -> (u64, Arc<Notify>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        let mut open = self.open.lock().unwrap();
        while open.len() >= MAX_IDLE_CONNECTIONS {
            match open.pop_first() {
                Some((_, victim)) => victim.notify_one(),
                None => break,
            }
        }
        open.insert(id, evict.clone());
        (id, evict)
    }

    /// Takes the connection off the evictable list (it is serving an authenticated request);
    /// false when it was evicted already.
    pub(super) fn claim(&self, id: u64) -> bool {
        self.open.lock().unwrap().remove(&id).is_some()
    }

    /// Puts the connection back on the list (its authenticated request is answered).
    pub(super) fn release(&self, id: u64, evict: &Arc<Notify>) {
        self.open.lock().unwrap().insert(id, evict.clone());
    }

    pub(super) fn forget(&self, id: u64) {
        self.open.lock().unwrap().remove(&id);
    }
}

pub(super) struct State {
    pub(super) token: String,
    pub(super) port: u16,
    pub(super) web_dir: Option<PathBuf>,
    pub(super) out_dir: PathBuf,
    pub(super) topo: Topology,
    pub(super) recordings: Mutex<HashMap<String, Arc<Recording>>>,
    pub(super) order: Mutex<Vec<String>>,
    /// Authenticated requests being served (not WebSockets).
    pub(super) active: AtomicUsize,
    /// WebSocket clients connected.
    pub(super) live_sockets: AtomicUsize,
    pub(super) idle: IdleConnections,
    pub(super) unauth: Arc<Semaphore>,
    /// `/api/bench` runs (cmd_serve/bench.rs).
    pub(super) bench: BenchRuns,
    /// `/api/runs`: programs launched with a plan (cmd_serve/runs.rs).
    pub(super) runs: PlanRuns,
    /// The live loop's state per recording (cmd_serve/loops.rs).
    pub(super) loops: loops::Loops,
}

/// Decrements a counter when dropped.
pub(super) struct CountGuard<'a>(pub(super) &'a AtomicUsize);

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_are_evicted_oldest_first() {
        let idle = IdleConnections::default();
        let first: Vec<(u64, Arc<Notify>)> = (0..MAX_IDLE_CONNECTIONS).map(|_| idle.register()).collect();
        // An authenticated one is not evictable, and leaves room for one more.
        assert!(idle.claim(first[0].0));
        let _a = idle.register();
        // At the cap: the oldest evictable one (index 1) is told to close and leaves the list.
        let _b = idle.register();
        assert!(!idle.claim(first[1].0));
        assert!(idle.claim(first[2].0));
        idle.release(first[0].0, &first[0].1);
        assert_eq!(idle.open.lock().unwrap().len(), MAX_IDLE_CONNECTIONS);
    }
}
