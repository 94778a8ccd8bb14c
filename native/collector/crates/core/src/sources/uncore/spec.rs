//! What is counted: one event on one cpu ([`UncoreSpec`]), where its counts are summed
//! ([`Scope`]), and one event of a per-model table ([`TableEvent`]).

/// What a sum of counts belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// A NUMA node: its socket holds no other node.
    Node(i32),
    /// A socket (kernel `physical_package_id`) that holds several NUMA nodes.
    Socket(i32),
}

impl Scope {
    /// The `counters.scope` string.
    pub fn name(&self) -> &'static str {
        match self {
            Scope::Node(_) => "node",
            Scope::Socket(_) => "socket",
        }
    }

    /// The `counters.scope_id`.
    pub fn id(&self) -> i32 {
        match *self {
            Scope::Node(n) | Scope::Socket(n) => n,
        }
    }
}

/// One event to count on one cpu.
#[derive(Clone, Debug, PartialEq)]
pub struct UncoreSpec {
    pub pmu: String,
    pub ty: u32,
    pub config: [u64; 3],
    /// The cpu it is counted on (from the PMU's cpumask: one per socket).
    pub cpu: u32,
    /// Where its counts are summed.
    pub scope: Scope,
    /// `mc-read-bytes`, `mc-write-bytes`, `mc-bytes`, `link-tx-bytes` or `link-rx-bytes`.
    pub counter: &'static str,
    /// Bytes per count.
    pub bytes_per_count: f64,
    /// The event's name (perf's, or the sysfs event's).
    pub event: &'static str,
}

/// One event of a per-model table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableEvent {
    /// perf's event name.
    pub name: &'static str,
    /// Terms for the PMU's sysfs `format/` files.
    pub terms: &'static str,
    pub counter: &'static str,
    pub bytes_per_count: f64,
}
