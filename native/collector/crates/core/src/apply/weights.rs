//! Weighted interleave (docs/plan-format.md, docs/apply.md "Weighted interleave"):
//!
//! - the slot layout of a `weighted-interleave` page range (page i of the range, counted from
//!   its start, goes to the node of slot `i mod sum(weights)`, slots laid out `toNodes[0]`
//!   `weights[0]` times, then `toNodes[1]` `weights[1]` times, …). `move_pages` places such pages
//!   on any kernel: nothing of the kernel's weighted interleave is needed for it;
//! - the plan's optional `systemWeights` and the kernel's system-wide weights in
//!   `/sys/kernel/mm/mempolicy/weighted_interleave/nodeN` (Linux ≥ 6.9) and its `auto` mode file
//!   (Linux ≥ 6.16): snapshot, write, read back, restore. Only the files `nodeN` (N a node id
//!   below [`MAX_NODES`]) and `auto` of that directory are ever written, with values 1–255 and a
//!   boolean, whatever a (possibly hostile) rollback record says.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan_fields::{array, err, field, join, obj, opt_field, string, uint, PlanError, MAX_NODES};

/// The kernel's system-wide weights for MPOL_WEIGHTED_INTERLEAVE.
pub const WEIGHTS_SYSFS: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";
/// The first kernel with MPOL_WEIGHTED_INTERLEAVE and the sysfs weights.
pub const KERNEL_NEEDED: &str = "Linux 6.9";

/// The slots of a weighted interleave: cumulative weights, so that memory stays proportional to
/// the number of nodes (a cycle has at most 255 × nodes slots).
#[derive(Clone, Debug, PartialEq)]
pub struct Slots {
    cum: Vec<u64>,
}

impl Slots {
    /// `weights` are 1–255 each (the plan parser checks), one per target node.
    pub fn new(weights: &[u8]) -> Slots {
        let mut t = 0u64;
        Slots {
            cum: weights
                .iter()
                .map(|&w| {
                    t += w.max(1) as u64;
                    t
                })
                .collect(),
        }
    }

    /// Pages in one weight cycle (the sum of the weights).
    pub fn cycle(&self) -> u64 {
        self.cum.last().copied().unwrap_or(1)
    }

    /// Index of the target node of page `i` (counted from the range's start).
    pub fn index(&self, i: u64) -> usize {
        let s = i % self.cycle();
        self.cum.partition_point(|&c| c <= s)
    }
}

/// Parses a `weights` array of one weight (an integer 1–255) per node.
pub fn parse_weights(v: &Value, path: &str, nodes: usize) -> Result<Vec<u8>, PlanError> {
    let a = array(v, path)?;
    if a.len() != nodes {
        return err(path, format!("{} weights for {nodes} nodes: give one weight (1-255) per node", a.len()));
    }
    let mut out = Vec::with_capacity(a.len());
    for (k, x) in a.iter().enumerate() {
        let p = format!("{path}[{k}]");
        let n = uint(x, &p)?;
        if !(1..=255).contains(&n) {
            return err(&p, format!("weight {n} is outside 1-255"));
        }
        out.push(n as u8);
    }
    Ok(out)
}

/// The plan's `systemWeights`: the system-wide weights `numascope apply --set-system-weights`
/// writes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemWeights {
    pub weights: BTreeMap<u32, u8>,
    pub reason: Option<String>,
}

/// Parses `systemWeights` (`{"weights": {"<node>": w}, "reason": ".."}`): at least one node, every
/// node in `target.machine.nodeIds`, weights 1–255.
pub fn parse_system_weights(v: &Value, sorted_ids: &[u32]) -> Result<SystemWeights, PlanError> {
    let p = "systemWeights";
    let o = obj(v, p)?;
    let wp = join(p, "weights");
    let w = obj(field(o, p, "weights")?, &wp)?;
    if w.is_empty() {
        return err(&wp, "must give a weight for at least one node");
    }
    if w.len() > MAX_NODES {
        return err(&wp, format!("more than {MAX_NODES} nodes"));
    }
    let mut weights = BTreeMap::new();
    for (k, x) in w {
        let kp = join(&wp, k);
        let id: u32 = k.parse().map_or_else(|_| err(&kp, format!("key {k:?} is not a node id")), Ok)?;
        if sorted_ids.binary_search(&id).is_err() {
            return err(&kp, format!("node {id} is not in target.machine.nodeIds {sorted_ids:?}"));
        }
        let n = uint(x, &kp)?;
        if !(1..=255).contains(&n) {
            return err(&kp, format!("weight {n} is outside 1-255"));
        }
        weights.insert(id, n as u8);
    }
    let reason = match opt_field(o, "reason") {
        Some(s) => Some(string(s, &join(p, "reason"))?.to_string()),
        None => None,
    };
    Ok(SystemWeights { weights, reason })
}

/// The kernel's weighted-interleave state: every node's weight and the `auto` mode (absent
/// before Linux 6.16). Also the rollback record's `systemWeights`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WeightsState {
    /// Node id → weight, for every `nodeN` file.
    pub weights: BTreeMap<u32, u8>,
    /// `auto` mode (weights from the firmware's bandwidth figures); `None`: no `auto` file.
    #[serde(default)]
    pub auto: Option<bool>,
}

impl WeightsState {
    /// The checks a rollback record's `systemWeights` must pass before anything is written:
    /// node ids below [`MAX_NODES`], weights 1–255.
    pub fn validate(&self, path: &str) -> Result<(), PlanError> {
        if self.weights.len() > MAX_NODES {
            return Err(PlanError::too_large("rollback record", path, format!("more than {MAX_NODES} nodes")));
        }
        for (n, w) in &self.weights {
            let p = format!("{path}.weights.{n}");
            if *n as usize >= MAX_NODES {
                return Err(PlanError::invalid(
                    "rollback record",
                    &p,
                    format!("node {n} is beyond the largest node id"),
                ));
            }
            if *w == 0 {
                return Err(PlanError::invalid("rollback record", &p, "weight 0 is outside 1-255"));
            }
        }
        Ok(())
    }

    /// `N0=1 N1=3 (auto)`.
    pub fn describe(&self) -> String {
        let w: Vec<String> = self.weights.iter().map(|(n, w)| format!("N{n}={w}")).collect();
        let mode = match self.auto {
            Some(true) => " (auto)",
            Some(false) => " (manual)",
            None => "",
        };
        format!("{}{mode}", if w.is_empty() { "-".to_string() } else { w.join(" ") })
    }
}

/// The `auto` mode file of `dir`, where the kernel has one: `auto` (Linux 6.16+), or
/// `__auto_type`, the name some later kernels give it (their headers define `auto` as a macro
/// for `__auto_type`, and the attribute's name is spelled through it; seen on 6.18).
pub fn auto_file(dir: &Path) -> Option<std::path::PathBuf> {
    ["auto", "__auto_type"].iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`), for messages.
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

/// Why the kernel cannot take system weights (no `dir`), or `None`.
pub fn missing_feature(dir: &Path) -> Option<String> {
    if dir.is_dir() {
        return None;
    }
    Some(format!(
        "this kernel (Linux {}) has no weighted interleave: {} is missing. System-wide weights and \
         MPOL_WEIGHTED_INTERLEAVE (new allocations) need {KERNEL_NEEDED} or later; weighted-interleave page ranges of \
         existing pages do not (move_pages places each page), so a plan without systemWeights applies here",
        kernel_release(),
        dir.display()
    ))
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "Y" | "y" | "1" | "true" | "on" => Some(true),
        "N" | "n" | "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Reads every `nodeN` weight and the `auto` mode of `dir`.
pub fn read_state(dir: &Path) -> io::Result<WeightsState> {
    let mut st = WeightsState::default();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(n) = name.to_str().and_then(|s| s.strip_prefix("node")).and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if n as usize >= MAX_NODES {
            continue;
        }
        let text = fs::read_to_string(e.path())?;
        let w: u8 = text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {:?} is not a weight", e.path().display(), text.trim()),
            )
        })?;
        st.weights.insert(n, w);
    }
    if let Some(auto) = auto_file(dir) {
        let text = fs::read_to_string(&auto)?;
        st.auto = Some(parse_bool(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {:?} is not a boolean", auto.display(), text.trim()),
            )
        })?);
    }
    Ok(st)
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    // The files exist (sysfs); never create one.
    let mut f = fs::OpenOptions::new().write(true).truncate(true).open(path)?;
    io::Write::write_all(&mut f, value.as_bytes())
}

/// Writes `weights` to `dir/nodeN` (which must exist). Writing a node's weight switches the
/// kernel to manual mode where there is an `auto` file.
pub fn write_weights(dir: &Path, weights: &BTreeMap<u32, u8>) -> Result<(), String> {
    for (n, w) in weights {
        let p = dir.join(format!("node{n}"));
        if !p.exists() {
            return Err(format!("{} does not exist (node {n} has no weighted-interleave weight)", p.display()));
        }
        write_file(&p, &format!("{w}\n")).map_err(|e| format!("writing {w} to {}: {e}", p.display()))?;
    }
    Ok(())
}

/// Restores `before` in `dir`: every node weight it lists (nodes without a file are skipped and
/// named), then the `auto` mode. Returns what was skipped; errors name the file.
pub fn restore(dir: &Path, before: &WeightsState) -> Result<Vec<String>, String> {
    let mut skipped = Vec::new();
    let mut present = BTreeMap::new();
    for (n, w) in &before.weights {
        if dir.join(format!("node{n}")).exists() {
            present.insert(*n, *w);
        } else {
            skipped.push(format!("node{n} (no such file)"));
        }
    }
    write_weights(dir, &present)?;
    if let Some(a) = before.auto {
        if let Some(p) = auto_file(dir) {
            write_file(&p, if a { "1\n" } else { "0\n" })
                .map_err(|e| format!("writing {} to {}: {e}", a, p.display()))?;
        } else {
            skipped.push("auto (no such file)".into());
        }
    }
    Ok(skipped)
}

/// What `--set-system-weights` did (or would do, in a dry run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemWeightsReport {
    /// `apply` (the plan's weights) or `restore` (rollback).
    pub operation: String,
    pub before: WeightsState,
    /// The weights asked for (the plan's, or the record's snapshot).
    pub planned: BTreeMap<u32, u8>,
    /// Read back after writing (None in a dry run).
    pub after: Option<WeightsState>,
    /// Every planned weight reads back as planned (and, on restore, the auto mode too).
    pub matched: bool,
}

/// Applies the plan's system weights in `dir` (or only reads the state in a dry run): snapshot,
/// write, read back. On a failed write, what was written is restored and the error returned.
pub fn apply_system(dir: &Path, sw: &SystemWeights, dry_run: bool) -> Result<SystemWeightsReport, String> {
    if let Some(m) = missing_feature(dir) {
        return Err(m);
    }
    let before = read_state(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for n in sw.weights.keys() {
        if !before.weights.contains_key(n) {
            return Err(format!(
                "systemWeights.weights.{n}: {} has no node{n} (the kernel has no weight for node {n})",
                dir.display()
            ));
        }
    }
    let mut r = SystemWeightsReport {
        operation: "apply".into(),
        before: before.clone(),
        planned: sw.weights.clone(),
        after: None,
        matched: false,
    };
    if dry_run {
        return Ok(r);
    }
    if let Err(e) = write_weights(dir, &sw.weights) {
        let _ = restore(dir, &before);
        return Err(e);
    }
    let after = read_state(dir).map_err(|e| format!("reading {} back: {e}", dir.display()))?;
    r.matched = sw.weights.iter().all(|(n, w)| after.weights.get(n) == Some(w));
    r.after = Some(after);
    Ok(r)
}

/// Restores a rollback record's snapshot in `dir` and reads it back.
pub fn restore_system(dir: &Path, snap: &WeightsState) -> Result<(SystemWeightsReport, Vec<String>), String> {
    if let Some(m) = missing_feature(dir) {
        return Err(m);
    }
    let before = read_state(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let skipped = restore(dir, snap)?;
    let after = read_state(dir).map_err(|e| format!("reading {} back: {e}", dir.display()))?;
    let matched = snap.weights.iter().all(|(n, w)| after.weights.get(n).is_none_or(|a| a == w))
        && (snap.auto.is_none() || after.auto.is_none() || snap.auto == after.auto);
    let r = SystemWeightsReport {
        operation: "restore".into(),
        before,
        planned: snap.weights.clone(),
        after: Some(after),
        matched,
    };
    Ok((r, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_weights() {
        let s = Slots::new(&[3, 1]);
        assert_eq!(s.cycle(), 4);
        let idx: Vec<usize> = (0..9).map(|i| s.index(i)).collect();
        assert_eq!(idx, vec![0, 0, 0, 1, 0, 0, 0, 1, 0]);
        let s = Slots::new(&[1, 2, 3]);
        let idx: Vec<usize> = (0..7).map(|i| s.index(i)).collect();
        assert_eq!(idx, vec![0, 1, 1, 2, 2, 2, 0]);
        let s = Slots::new(&[255; 4]);
        assert_eq!((s.cycle(), s.index(254), s.index(255), s.index(1019), s.index(1020)), (1020, 0, 1, 3, 0));
    }

    fn fake_sysfs(auto: Option<&str>) -> tempdir::Dir {
        let d = tempdir::Dir::new();
        for (n, w) in [(0, "1"), (1, "1"), (2, "4")] {
            fs::write(d.path().join(format!("node{n}")), format!("{w}\n")).unwrap();
        }
        if let Some(a) = auto {
            fs::write(d.path().join("auto"), a).unwrap();
        }
        d
    }

    /// A minimal temporary directory (removed on drop).
    mod tempdir {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "numascope-weights-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn snapshot_apply_restore_exactly() {
        let d = fake_sysfs(Some("Y\n"));
        let sw = SystemWeights { weights: BTreeMap::from([(0, 9), (2, 1)]), reason: None };
        let dry = apply_system(d.path(), &sw, true).unwrap();
        assert_eq!(dry.after, None);
        assert_eq!(fs::read_to_string(d.path().join("node0")).unwrap(), "1\n", "a dry run writes nothing");
        let r = apply_system(d.path(), &sw, false).unwrap();
        assert_eq!(r.before.weights, BTreeMap::from([(0, 1), (1, 1), (2, 4)]));
        assert_eq!(r.before.auto, Some(true));
        assert!(r.matched);
        assert_eq!(r.after.as_ref().unwrap().weights, BTreeMap::from([(0, 9), (1, 1), (2, 1)]));
        // the kernel would switch to manual mode here; the fake file keeps what it had
        fs::write(d.path().join("auto"), "N\n").unwrap();
        let (back, skipped) = restore_system(d.path(), &r.before).unwrap();
        assert!(skipped.is_empty() && back.matched, "{skipped:?}");
        assert_eq!(read_state(d.path()).unwrap(), r.before);
        assert_eq!(fs::read_to_string(d.path().join("auto")).unwrap(), "1\n");
    }

    #[test]
    fn refusals_name_the_kernel_and_the_node() {
        let d = fake_sysfs(None);
        let missing = d.path().join("nope");
        let sw = SystemWeights { weights: BTreeMap::from([(0, 2)]), reason: None };
        let e = apply_system(&missing, &sw, false).unwrap_err();
        assert!(e.contains("Linux 6.9") && e.contains("has no weighted interleave") && e.contains("move_pages"), "{e}");
        let sw = SystemWeights { weights: BTreeMap::from([(7, 2)]), reason: None };
        let e = apply_system(d.path(), &sw, false).unwrap_err();
        assert!(e.starts_with("systemWeights.weights.7:"), "{e}");
    }

    #[test]
    fn the_auto_file_under_its_other_name() {
        let d = fake_sysfs(None);
        fs::write(d.path().join("__auto_type"), "true\n").unwrap();
        let st = read_state(d.path()).unwrap();
        assert_eq!(st.auto, Some(true));
        fs::write(d.path().join("__auto_type"), "false\n").unwrap();
        restore(d.path(), &st).unwrap();
        assert_eq!(fs::read_to_string(d.path().join("__auto_type")).unwrap(), "1\n");
    }

    #[test]
    fn hostile_snapshots_are_refused_or_confined() {
        let bad = WeightsState { weights: BTreeMap::from([(0, 0)]), auto: None };
        assert_eq!(bad.validate("systemWeights").unwrap_err().path, "systemWeights.weights.0");
        let far = WeightsState { weights: BTreeMap::from([(5000, 1)]), auto: None };
        assert!(far.validate("systemWeights").is_err());
        // a node without a file is skipped, not created
        let d = fake_sysfs(None);
        let snap = WeightsState { weights: BTreeMap::from([(0, 2), (9, 3)]), auto: Some(true) };
        let (_, skipped) = restore_system(d.path(), &snap).unwrap();
        assert_eq!(skipped, vec!["node9 (no such file)".to_string(), "auto (no such file)".to_string()]);
        assert!(!d.path().join("node9").exists() && !d.path().join("auto").exists());
        // out-of-range values do not even deserialize
        assert!(serde_json::from_str::<WeightsState>(r#"{"weights":{"0":300}}"#).is_err());
        assert!(serde_json::from_str::<WeightsState>(r#"{"weights":{"../x":3}}"#).is_err());
    }

    #[test]
    fn system_weights_field_errors() {
        let ok = parse_system_weights(&serde_json::json!({ "weights": { "0": 3, "1": 1 }, "reason": "bw" }), &[0, 1]);
        assert_eq!(ok.unwrap().weights, BTreeMap::from([(0, 3), (1, 1)]));
        let e = |v: Value| parse_system_weights(&v, &[0, 1]).unwrap_err().path;
        assert_eq!(e(serde_json::json!({ "weights": {} })), "systemWeights.weights");
        assert_eq!(e(serde_json::json!({ "weights": { "2": 1 } })), "systemWeights.weights.2");
        assert_eq!(e(serde_json::json!({ "weights": { "x": 1 } })), "systemWeights.weights.x");
        assert_eq!(e(serde_json::json!({ "weights": { "0": 0 } })), "systemWeights.weights.0");
        assert_eq!(e(serde_json::json!({ "weights": { "0": 256 } })), "systemWeights.weights.0");
        assert_eq!(e(serde_json::json!({ "reason": "no weights" })), "systemWeights.weights");
    }
}
