//! The rollback record (docs/apply.md, "Rollback"): what an apply changed, written so that
//! `numascope rollback` can restore it; parsed and checked with the same care as a plan.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::options::ApplyError;
use super::plan::{
    self, PlanError, MAX_CPUS, MAX_NODES, MAX_PAGES_PER_RANGE, MAX_RECORD_BYTES, MAX_ROLLBACK_RUNS, MAX_THREADS,
    MAX_TOTAL_PAGES,
};
use super::weights;

pub const ROLLBACK_FORMAT: &str = "numascope-rollback";
pub const ROLLBACK_VERSION: u64 = 1;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackRecord {
    pub format: String,
    pub version: u64,
    pub pid: i32,
    /// Decimal string, as in the plan.
    pub start_time_ticks: String,
    pub page_size: u64,
    /// Runs of consecutive pages that were moved, with the node they were on before.
    pub pages: Vec<PageRun>,
    /// Threads whose affinity was changed, with their previous affinity.
    pub threads: Vec<ThreadAffinity>,
    /// The kernel's weighted-interleave weights and `auto` mode before `--set-system-weights`
    /// changed them (absent when they were not changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_weights: Option<weights::WeightsState>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageRun {
    /// First page address, hex string.
    pub start: String,
    pub count: u64,
    /// Node the pages were on before Apply moved them.
    pub node: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAffinity {
    pub tid: i32,
    pub cpus: Vec<u32>,
    /// The thread's own start time when Apply pinned it (`/proc/PID/task/TID/stat` field 22,
    /// decimal string): rollback restores the affinity only while the tid still has it. Absent
    /// in records written before it existed (then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_ticks: Option<String>,
}

fn rec_err<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::invalid("rollback record", path, message))
}

fn rec_too_large<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::too_large("rollback record", path, message))
}

impl RollbackRecord {
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty() && self.threads.is_empty() && self.system_weights.is_none()
    }

    /// Parses a rollback record and checks it with the same care as a plan: format and version,
    /// a positive pid and tids, aligned non-overlapping page runs that stay inside the address
    /// space, and the limits ([`MAX_RECORD_BYTES`], [`MAX_ROLLBACK_RUNS`],
    /// [`MAX_PAGES_PER_RANGE`] per run, [`MAX_TOTAL_PAGES`], [`MAX_THREADS`], [`MAX_CPUS`]).
    pub fn parse(text: &str) -> Result<RollbackRecord, PlanError> {
        if text.len() > MAX_RECORD_BYTES {
            return rec_too_large(
                "",
                format!("the record is {} bytes, more than the limit of {MAX_RECORD_BYTES} bytes", text.len()),
            );
        }
        let r: RollbackRecord = serde_json::from_str(text)
            .map_err(|e| PlanError::invalid("rollback record", "", format!("not JSON of a rollback record: {e}")))?;
        r.validate()?;
        Ok(r)
    }

    /// The checks of [`RollbackRecord::parse`] (format and version included).
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.format != ROLLBACK_FORMAT {
            let f: String = self.format.chars().take(40).collect();
            return rec_err("format", format!("expected \"{ROLLBACK_FORMAT}\", found {f:?}"));
        }
        if self.version != ROLLBACK_VERSION {
            return rec_err(
                "version",
                format!("this numascope reads rollback records of version {ROLLBACK_VERSION}, found {}", self.version),
            );
        }
        if self.pid <= 0 {
            return rec_err("pid", format!("expected a positive process id, found {}", self.pid));
        }
        if self.start_time_ticks.parse::<u64>().is_err() {
            let s: String = self.start_time_ticks.chars().take(40).collect();
            return rec_err("startTimeTicks", format!("{s:?} is not a decimal number"));
        }
        if self.page_size != 0 && (!self.page_size.is_power_of_two() || !(4096..=1 << 30).contains(&self.page_size)) {
            return rec_err(
                "pageSize",
                format!("{} is not a page size (a power of two, 4096 to 1 GiB)", self.page_size),
            );
        }
        self.checked_runs()?;
        if let Some(w) = &self.system_weights {
            w.validate("systemWeights")?;
        }
        if self.threads.len() > MAX_THREADS {
            return rec_too_large(
                "threads",
                format!("{} threads, more than the limit of {MAX_THREADS}", self.threads.len()),
            );
        }
        let mut tids = std::collections::HashSet::new();
        for (i, t) in self.threads.iter().enumerate() {
            let p = format!("threads[{i}]");
            if t.tid <= 0 {
                return rec_err(&format!("{p}.tid"), format!("expected a positive thread id, found {}", t.tid));
            }
            if !tids.insert(t.tid) {
                return rec_err(&format!("{p}.tid"), format!("thread {} is listed twice", t.tid));
            }
            if t.cpus.is_empty() {
                return rec_err(&format!("{p}.cpus"), "must list at least one cpu");
            }
            if t.cpus.len() > MAX_CPUS {
                return rec_too_large(&format!("{p}.cpus"), format!("more than {MAX_CPUS} cpus"));
            }
            if let Some((j, c)) = t.cpus.iter().enumerate().find(|(_, &c)| c as usize >= MAX_CPUS) {
                return rec_err(
                    &format!("{p}.cpus[{j}]"),
                    format!("cpu {c} is beyond the largest cpu id ({})", MAX_CPUS - 1),
                );
            }
            if let Some(s) = &t.start_time_ticks {
                if s.parse::<u64>().is_err() {
                    let s: String = s.chars().take(40).collect();
                    return rec_err(&format!("{p}.startTimeTicks"), format!("{s:?} is not a decimal number"));
                }
            }
        }
        Ok(())
    }

    /// The page runs as (start, count, node), sorted by address, after checking each run
    /// (hex address aligned to the page size, 1 to [`MAX_PAGES_PER_RANGE`] pages, inside the
    /// address space, a possible node id), that they do not overlap, and the limits.
    pub fn checked_runs(&self) -> Result<Vec<(u64, u64, u32)>, PlanError> {
        if self.pages.len() > MAX_ROLLBACK_RUNS {
            return rec_too_large(
                "pages",
                format!("{} page runs, more than the limit of {MAX_ROLLBACK_RUNS}", self.pages.len()),
            );
        }
        // 0: written without a page size; the base page is at least 4 KiB (rollback checks
        // the real one against the machine's).
        let page = if self.page_size == 0 { 4096 } else { self.page_size };
        let mut out: Vec<(u64, u64, u32, usize)> = Vec::with_capacity(self.pages.len());
        let mut total: u64 = 0;
        for (i, r) in self.pages.iter().enumerate() {
            let p = format!("pages[{i}]");
            let Some(start) = parse_hex(&r.start) else {
                let s: String = r.start.chars().take(40).collect();
                return rec_err(&format!("{p}.start"), format!("{s:?} is not a hex address like \"0x7f3a2c000000\""));
            };
            if start % page != 0 {
                return rec_err(
                    &format!("{p}.start"),
                    format!("0x{start:x} is not aligned to the {page}-byte page size"),
                );
            }
            if r.count == 0 {
                return rec_err(&format!("{p}.count"), "must be at least 1");
            }
            if r.count > MAX_PAGES_PER_RANGE {
                return rec_too_large(
                    &format!("{p}.count"),
                    format!(
                        "{} pages ({}), more than the limit of {MAX_PAGES_PER_RANGE} pages per run",
                        r.count,
                        plan::pages_human(r.count, page)
                    ),
                );
            }
            if r.count.checked_mul(page).and_then(|b| start.checked_add(b)).is_none() {
                return rec_err(&p, format!("0x{start:x} + {} pages runs past the end of the address space", r.count));
            }
            if r.node as usize >= MAX_NODES {
                return rec_err(&format!("{p}.node"), format!("node {} is not a possible node id", r.node));
            }
            total += r.count;
            if total > MAX_TOTAL_PAGES {
                return rec_too_large(
                    &p,
                    format!(
                        "the runs up to this one hold {total} pages ({}), more than the limit of {MAX_TOTAL_PAGES} pages",
                        plan::pages_human(total, page)
                    ),
                );
            }
            out.push((start, r.count, r.node, i));
        }
        out.sort_unstable();
        for w in out.windows(2) {
            if w[0].0 + w[0].1 * page > w[1].0 {
                return rec_err(&format!("pages[{}]", w[1].3), format!("overlaps pages[{}]", w[0].3));
            }
        }
        Ok(out.into_iter().map(|(s, c, n, _)| (s, c, n)).collect())
    }
}

/// Reads a plan or rollback record file of at most `limit` bytes (a larger file is refused
/// without reading it: [`MAX_PLAN_BYTES`](super::MAX_PLAN_BYTES), [`MAX_RECORD_BYTES`]).
pub fn read_limited(path: &Path, limit: usize, what: &'static str) -> Result<String, ApplyError> {
    use std::io::Read;
    let f = fs::File::open(path).map_err(|e| ApplyError::Io(format!("reading {}: {e}", path.display())))?;
    let mut buf = Vec::new();
    f.take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ApplyError::Io(format!("reading {}: {e}", path.display())))?;
    if buf.len() > limit {
        return Err(ApplyError::Plan(PlanError::too_large(
            what,
            "",
            format!("{} is larger than the limit of {limit} bytes", path.display()),
        )));
    }
    String::from_utf8(buf).map_err(|e| {
        ApplyError::Plan(PlanError::invalid(what, "", format!("{} is not UTF-8 text: {e}", path.display())))
    })
}

fn parse_hex(s: &str) -> Option<u64> {
    let d = s.strip_prefix("0x")?;
    if d.is_empty() || d.len() > 16 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(d, 16).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apply::plan::PlanErrorKind;
    fn record() -> RollbackRecord {
        RollbackRecord {
            format: ROLLBACK_FORMAT.into(),
            version: 1,
            pid: 5,
            start_time_ticks: "77".into(),
            page_size: 4096,
            pages: vec![
                PageRun { start: "0x5000".into(), count: 1, node: 0 },
                PageRun { start: "0x1000".into(), count: 3, node: 1 },
            ],
            threads: vec![ThreadAffinity { tid: 6, cpus: vec![0, 1], start_time_ticks: Some("80".into()) }],
            system_weights: None,
        }
    }

    #[test]
    fn rollback_record_with_system_weights() {
        let mut r = record();
        r.system_weights = Some(weights::WeightsState { weights: BTreeMap::from([(0, 1), (1, 4)]), auto: Some(true) });
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains(r#""systemWeights":{"weights":{"0":1,"1":4},"auto":true}"#), "{s}");
        assert_eq!(RollbackRecord::parse(&s).unwrap(), r);
        let e = RollbackRecord::parse(&s.replace(r#""1":4"#, r#""1":0"#)).unwrap_err();
        assert_eq!(e.path, "systemWeights.weights.1");
        assert!(RollbackRecord::parse(&s.replace(r#""1":4"#, r#""1":999"#)).is_err());
        assert!(RollbackRecord::parse(&s.replace(r#""1":4"#, r#""../../x":4"#)).is_err());
        let e = RollbackRecord::parse(&s.replace(r#""1":4"#, r#""4096":4"#)).unwrap_err();
        assert_eq!(e.path, "systemWeights.weights.4096");
        // a record with only system weights is not empty
        let only = RollbackRecord { pages: vec![], threads: vec![], ..r };
        assert!(!only.is_empty());
    }

    #[test]
    fn rollback_record_round_trip() {
        let r = record();
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"startTimeTicks\":\"77\"") && s.contains("\"startTimeTicks\":\"80\""), "{s}");
        assert_eq!(RollbackRecord::parse(&s).unwrap(), r);
        assert_eq!(r.checked_runs().unwrap(), vec![(0x1000, 3, 1), (0x5000, 1, 0)]);
        assert!(RollbackRecord::parse(&s.replace("numascope-rollback", "x")).is_err());
        // a record without thread start times (older writers) still parses
        let old = s.replace(",\"startTimeTicks\":\"80\"", "");
        assert_eq!(RollbackRecord::parse(&old).unwrap().threads[0].start_time_ticks, None);
    }

    fn bad(f: impl FnOnce(&mut RollbackRecord)) -> PlanError {
        let mut r = record();
        f(&mut r);
        RollbackRecord::parse(&serde_json::to_string(&r).unwrap()).unwrap_err()
    }

    #[test]
    fn rollback_record_errors_name_the_field() {
        assert_eq!(bad(|r| r.pid = 0).path, "pid");
        assert_eq!(bad(|r| r.threads[0].tid = -1).path, "threads[0].tid");
        assert_eq!(bad(|r| r.threads[0].cpus.clear()).path, "threads[0].cpus");
        assert_eq!(bad(|r| r.threads[0].cpus = vec![0, 9000]).path, "threads[0].cpus[1]");
        assert_eq!(bad(|r| r.pages[1].start = "0x1001".into()).path, "pages[1].start");
        assert_eq!(bad(|r| r.pages[1].start = "0x+1000".into()).path, "pages[1].start");
        assert_eq!(bad(|r| r.pages[1].count = 0).path, "pages[1].count");
        assert_eq!(bad(|r| r.pages[1].count = 5).path, "pages[0]"); // 0x1000 + 5 pages overlaps 0x5000
        assert_eq!(bad(|r| r.pages[0].start = "0xfffffffffffff000".into()).path, "pages[0]");
        assert_eq!(bad(|r| r.page_size = 3).path, "pageSize");
        let e = bad(|r| r.pages[0].count = 1 << 40);
        assert_eq!((e.path.as_str(), e.kind), ("pages[0].count", PlanErrorKind::TooLarge));
        assert!(e.to_string().contains("limit of 134217728 pages"), "{e}");
        let e = bad(|r| {
            r.pages = (0..3)
                .map(|i| PageRun { start: format!("0x{:x}", (i + 1u64) << 40), count: 1 << 27, node: 0 })
                .collect()
        });
        assert_eq!((e.path.as_str(), e.kind), ("pages[2]", PlanErrorKind::TooLarge));
    }
}
