//! What an apply or rollback reports (planned vs achieved, docs/apply.md "The report"): the
//! status, the page counts per range and in total, the threads, and where the time went.

use std::collections::BTreeMap;

use serde::Serialize;

use super::plan::{self, Expected};
use super::record::RollbackRecord;
use super::weights;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Dry run: nothing was changed.
    DryRun,
    /// Every planned page is on its target node and every thread is pinned.
    Complete,
    /// Done, but some pages could not be moved or some threads not pinned (see the counts).
    Partial,
    /// The time budget ran out before every page was moved.
    BudgetExhausted,
    /// The process exited midway; the report says what was done before.
    ProcessExited,
}

/// Pages that were not moved, by reason (from the `move_pages` status of each page).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotMoved {
    /// -EBUSY: page busy (locked, under I/O, pinned) — a retry may succeed.
    pub busy: u64,
    /// -EFAULT / -ENOENT: not mapped or never touched (nothing to move).
    pub not_present: u64,
    /// -EACCES / -EPERM: shared with other processes (needs MPOL_MF_MOVE_ALL + CAP_SYS_NICE) or not permitted.
    pub not_permitted: u64,
    /// Failed pages inside a transparent-huge-page mapping (smaps AnonHugePages > 0).
    pub huge_page: u64,
    /// Reported moved but found on another node than planned.
    pub elsewhere: u64,
    /// Other errno values by name.
    pub other: BTreeMap<String, u64>,
}

impl NotMoved {
    pub fn total(&self) -> u64 {
        self.busy
            + self.not_present
            + self.not_permitted
            + self.huge_page
            + self.elsewhere
            + self.other.values().sum::<u64>()
    }
    fn add(&mut self, o: &NotMoved) {
        self.busy += o.busy;
        self.not_present += o.not_present;
        self.not_permitted += o.not_permitted;
        self.huge_page += o.huge_page;
        self.elsewhere += o.elsewhere;
        for (k, v) in &o.other {
            *self.other.entry(k.clone()).or_default() += v;
        }
    }
}

/// Page counts of one range (or the totals).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageStats {
    pub pages: u64,
    /// Pages outside every mapping of the process (`/proc/PID/maps`): skipped, not queried.
    pub unmapped: u64,
    /// Pages per node before (present pages only).
    pub before: BTreeMap<u32, u64>,
    /// Pages not present before (never touched, swapped out, not mapped).
    pub not_present_before: u64,
    /// Pages per node the plan wants (present pages only).
    pub planned_after: BTreeMap<u32, u64>,
    pub to_move: u64,
    pub already_in_place: u64,
    /// `move_pages` reported these moved.
    pub moved: u64,
    pub not_moved: NotMoved,
    /// Not attempted because the time budget ran out or the process exited.
    pub not_attempted: u64,
    /// Pages per node found by the verification query (None in a dry run or if the process exited).
    pub after: Option<BTreeMap<u32, u64>>,
    /// Present pages found on their planned node by the verification query.
    pub on_target_after: Option<u64>,
}

impl PageStats {
    pub(super) fn add(&mut self, o: &PageStats) {
        self.pages += o.pages;
        self.unmapped += o.unmapped;
        self.add_counts(o);
        match (&mut self.after, &o.after) {
            (Some(a), Some(b)) => addmap(a, b),
            (a @ None, Some(b)) if self.pages == o.pages => *a = Some(b.clone()),
            _ => self.after = None,
        }
        self.on_target_after = match (self.on_target_after, o.on_target_after) {
            (Some(a), Some(b)) => Some(a + b),
            (None, Some(b)) if self.pages == o.pages => Some(b),
            _ => None,
        };
    }
}

pub(super) fn addmap(a: &mut BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) {
    for (k, v) in b {
        *a.entry(*k).or_default() += v;
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeReport {
    #[serde(serialize_with = "plan::ser_hex")]
    pub start: u64,
    #[serde(serialize_with = "plan::ser_hex")]
    pub end: u64,
    /// `move`, `interleave`, `weighted-interleave`, or `restore` (rollback).
    pub action: String,
    pub to_nodes: Vec<u32>,
    /// `weighted-interleave`: the weights of `to_nodes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<u8>>,
    #[serde(flatten)]
    pub stats: PageStats,
    /// `weighted-interleave`, after verification: do the per-node counts match the weights?
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_check: Option<WeightCheck>,
    /// Expected pages per node when the plan was made.
    pub expected_nodes: Option<BTreeMap<u32, u64>>,
    /// Pages of the range in transparent-huge-page mappings (smaps AnonHugePages), in base pages.
    pub thp_pages: u64,
}

/// The verification of a weighted-interleave range (docs/apply.md, "Weighted interleave"): the
/// present pages per node against their share by weight. Whole weight cycles give each node
/// exactly its weight; the last, partial cycle can put up to `w` pages more or less on a node of
/// weight `w` than its exact share, so that is the tolerance (per node: at most one page per
/// slot of a cycle), and no page may be left on a node outside `toNodes`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightCheck {
    /// Present pages found by the verification query.
    pub present: u64,
    /// Weight cycles the present pages span (`ceil(present / sum(weights))`).
    pub cycles: u64,
    /// Per target node: pages by weight (`present × w / sum(weights)`, rounded).
    pub expected: BTreeMap<u32, u64>,
    /// Per node (target or not): pages found.
    pub found: BTreeMap<u32, u64>,
    /// Every target node within its weight of its share, and no page elsewhere.
    pub ok: bool,
}

impl WeightCheck {
    pub fn new(to_nodes: &[u32], weights: &[u8], found: &BTreeMap<u32, u64>) -> WeightCheck {
        let present: u64 = found.values().sum();
        let total: u64 = weights.iter().map(|&w| w as u64).sum::<u64>().max(1);
        let cycles = present.div_ceil(total);
        let mut expected = BTreeMap::new();
        let mut ok = true;
        for (n, w) in to_nodes.iter().zip(weights) {
            let e = ((present as u128 * *w as u128 + total as u128 / 2) / total as u128) as u64;
            expected.insert(*n, e);
            ok &= found.get(n).copied().unwrap_or(0).abs_diff(e) <= *w as u64;
        }
        ok &= found.iter().all(|(n, c)| *c == 0 || to_nodes.contains(n));
        WeightCheck { present, cycles, expected, found: found.clone(), ok }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReport {
    pub tid: i32,
    pub to_nodes: Vec<u32>,
    /// All cpus of the target nodes.
    pub cpus: Vec<u32>,
    pub previous_cpus: Option<Vec<u32>>,
    /// Affinity read back after pinning (None in a dry run or on error).
    pub read_back: Option<Vec<u32>>,
    pub pinned: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyReport {
    /// `apply` or `rollback`.
    pub operation: String,
    pub pid: i32,
    #[serde(serialize_with = "ser_dec")]
    pub start_time_ticks: u64,
    pub dry_run: bool,
    pub status: Status,
    pub message: Option<String>,
    pub page_size: u64,
    pub pages: PageStats,
    pub ranges: Vec<RangeReport>,
    pub threads: Vec<ThreadReport>,
    /// The planner's totals (`expected` of the plan), for planned-vs-achieved.
    pub expected: Option<Expected>,
    pub warnings: Vec<String>,
    /// Threads that issued `move_pages` (`--jobs`; 1 in a dry run or with a pause).
    pub jobs: usize,
    pub elapsed_ms: f64,
    /// Where the rollback record was written (set by the caller).
    pub rollback_record: Option<String>,
    /// The system-wide weighted-interleave weights written or restored (`--set-system-weights`,
    /// a plan's `systemWeights`; absent when the plan has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_weights: Option<weights::SystemWeightsReport>,
}

fn ser_dec<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// The result of [`apply`](super::apply): the report and what to write as the rollback record.
pub struct ApplyOutcome {
    pub report: ApplyReport,
    pub rollback: RollbackRecord,
    /// Where the time went (`numascope apply --timings`; not part of the report).
    pub timings: Timings,
}

/// Wall-clock time of each phase of an apply or rollback, in milliseconds, and the
/// `move_pages` calls it made (docs/apply.md, "Where the time goes").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Checking the target and its threads, reading `/proc/PID/maps`, clipping the ranges.
    pub prepare_ms: f64,
    /// The pre-flight query of every page.
    pub query_ms: f64,
    /// Reading `/proc/PID/smaps` (transparent-huge-page mappings).
    pub thp_ms: f64,
    /// The move pass (busy retries included).
    pub move_ms: f64,
    /// Of the move pass, summed over its threads: in queries just before a move.
    pub move_query_ms: f64,
    /// Of the move pass, summed over its threads: in `move_pages` calls that move.
    pub move_call_ms: f64,
    /// `move_pages` calls that move pages (retries included).
    pub move_calls: u64,
    /// The largest batch handed to one `move_pages` call.
    pub move_batch_max: u64,
    /// Pinning threads.
    pub pin_ms: f64,
    /// Verification: the process checked again, every page queried again.
    pub verify_ms: f64,
    /// Reading `/proc/PID/numa_maps` + maps before the moves and for the verification
    /// (`vma_view`; included in `move_ms` and `verify_ms`).
    pub numa_maps_ms: f64,
    /// Pages whose node before the move came from numa_maps instead of a query.
    pub view_pages_before: u64,
    /// Pages verified from numa_maps instead of a query.
    pub view_pages_after: u64,
}

impl PageStats {
    /// Adds the counters of `o` (not `pages`, `unmapped`, `after`, `onTargetAfter`).
    pub(super) fn add_counts(&mut self, o: &PageStats) {
        addmap(&mut self.before, &o.before);
        self.not_present_before += o.not_present_before;
        addmap(&mut self.planned_after, &o.planned_after);
        self.to_move += o.to_move;
        self.already_in_place += o.already_in_place;
        self.moved += o.moved;
        self.not_moved.add(&o.not_moved);
        self.not_attempted += o.not_attempted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn weight_check_allows_one_page_per_cycle() {
        let found = BTreeMap::from([(1, 75), (0, 25)]);
        let c = WeightCheck::new(&[1, 0], &[3, 1], &found);
        assert_eq!((c.present, c.cycles, c.ok), (100, 25, true));
        assert_eq!(c.expected, BTreeMap::from([(1, 75), (0, 25)]));
        // a partial cycle: 10 pages of 3:1 are 8 + 2 by slots, 7.5 + 2.5 by share
        assert!(WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 8), (0, 2)])).ok);
        // 3 cycles of 4 pages: node 0 (weight 1) has 5 more than its share
        assert!(!WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 4), (0, 8)])).ok);
        // one page off on the weight-1 node of 100 pages is within the tolerance, two are not
        assert!(WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 74), (0, 26)])).ok);
        assert!(!WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 73), (0, 27)])).ok);
        // a page left on another node fails the check
        let c = WeightCheck::new(&[1, 0], &[1, 1], &BTreeMap::from([(1, 2), (0, 2), (3, 1)]));
        assert!(!c.ok, "{c:?}");
    }
}
