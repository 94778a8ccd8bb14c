//! A benchmark run driven from another process (`numascope serve`'s `/api/bench`, the Node
//! binding's `bench()`): the request's options and their checks, progress messages, and the
//! outcome (the machine model, stored as this machine's calibration when the run is complete).
//! The CLI's `numascope bench` runs the same `bench::run`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{output, BenchError, BenchOptions, Context, Progress};
use crate::topology::{Roots, Topology};

/// The options a client may send (`POST /api/bench`, the binding's `bench()`), all optional.
#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BenchRequest {
    /// Quick mode (fewer repetitions and points, smaller arrays); default false.
    pub quick: Option<bool>,
    /// Stop after this many seconds with what was measured (partial).
    pub max_seconds: Option<f64>,
    /// Bytes of each STREAM array per cpu node (`--size`).
    pub array_bytes: Option<u64>,
    /// Bytes of the pointer-chase buffer (`--chase-size`).
    pub chase_bytes: Option<u64>,
    /// Store a complete run as this machine's calibration (default true, as `numascope bench`).
    pub save: Option<bool>,
}

/// Largest `maxSeconds` a client may ask for: a day (a full run on a big machine takes minutes).
pub const MAX_SECONDS_LIMIT: f64 = 86_400.0;

impl BenchRequest {
    /// Checks the ranges; the error names the field and the range.
    pub fn validate(&self) -> Result<(BenchOptions, bool), String> {
        if let Some(s) = self.max_seconds {
            if !(s.is_finite() && (0.0..=MAX_SECONDS_LIMIT).contains(&s)) {
                return Err(format!("maxSeconds must be a number of seconds from 0 to {MAX_SECONDS_LIMIT}, got {s}"));
            }
        }
        if self.array_bytes.is_some_and(|b| b < 4096) {
            return Err("arrayBytes must be at least 4096".into());
        }
        if self.chase_bytes.is_some_and(|b| b < 65_536) {
            return Err("chaseBytes must be at least 65536".into());
        }
        let opts = BenchOptions {
            quick: self.quick.unwrap_or(false),
            array_bytes: self.array_bytes,
            chase_bytes: self.chase_bytes,
            max_seconds: self.max_seconds,
            max_steps: None,
        };
        Ok((opts, self.save.unwrap_or(true)))
    }
}

/// One progress message: step i of n, what it measures, seconds elapsed, estimated seconds left
/// (null before the first step has finished).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BenchProgress {
    pub step: usize,
    pub steps: usize,
    pub what: String,
    pub elapsed_s: f64,
    pub remaining_s: Option<f64>,
}

impl From<&Progress> for BenchProgress {
    fn from(p: &Progress) -> Self {
        BenchProgress {
            step: p.step,
            steps: p.steps,
            what: p.what.clone(),
            elapsed_s: p.elapsed_s,
            remaining_s: p.remaining_s,
        }
    }
}

/// What a run gives: the machine model with its calibration (`output::machine_json`), and where
/// it was stored as this machine's calibration (null for a partial run, `save: false`, or a
/// failed write, which `storeNote` then explains).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BenchOutcome {
    pub machine: Value,
    pub stored_as: Option<String>,
    pub store_note: Option<String>,
}

/// The error code a client sees for a failed run.
pub fn error_code(e: &BenchError) -> &'static str {
    match e {
        BenchError::Memory(_) => "bench-memory",
        BenchError::Usage(_) => "bad-bench-option",
        BenchError::Io(_) => "io-error",
    }
}

/// Runs the benchmark on `topo` (stopped early, with what was measured, when `stop` is set) and
/// stores a complete run in `cache_dir` when `save`.
pub fn run_outcome(
    topo: &Topology,
    roots: &Roots,
    opts: &BenchOptions,
    save: bool,
    cache_dir: Option<PathBuf>,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&BenchProgress),
) -> Result<BenchOutcome, BenchError> {
    let ctx = Context { topo, roots, opts, stop };
    let cal = super::run(&ctx, &mut |p| progress(&BenchProgress::from(p)))?;
    let machine = output::machine_json(topo, &cal);
    let (stored_as, store_note) = match (save, cal.partial, cache_dir) {
        (false, _, _) => (None, Some("not stored: save was false".to_string())),
        (true, true, _) => (None, Some("a partial run is not stored as this machine's calibration".to_string())),
        (true, false, None) => (None, Some("not stored: neither XDG_CACHE_HOME nor HOME is set".to_string())),
        (true, false, Some(dir)) => match output::store(&dir, &cal.fingerprint, &machine) {
            Ok(p) => (Some(p.display().to_string()), None),
            Err(e) => (None, Some(format!("could not store the calibration in {}: {e}", dir.display()))),
        },
    };
    Ok(BenchOutcome { machine, stored_as, store_note })
}

#[cfg(test)]
mod job_tests {
    use super::*;
    use crate::topology::read_topology;
    use std::sync::atomic::Ordering;

    #[test]
    fn requests_are_checked_field_by_field() {
        let ok: BenchRequest = serde_json::from_str(r#"{"quick":true,"maxSeconds":5,"arrayBytes":1048576}"#).unwrap();
        let (opts, save) = ok.validate().unwrap();
        assert!(opts.quick && save && opts.max_seconds == Some(5.0) && opts.array_bytes == Some(1 << 20));
        assert!(serde_json::from_str::<BenchRequest>(r#"{"quik":true}"#).unwrap_err().to_string().contains("quik"));
        let e = BenchRequest { max_seconds: Some(-1.0), ..Default::default() }.validate().unwrap_err();
        assert!(e.contains("maxSeconds"), "{e}");
        assert!(BenchRequest { max_seconds: Some(f64::NAN), ..Default::default() }.validate().is_err());
        assert!(BenchRequest { chase_bytes: Some(10), ..Default::default() }
            .validate()
            .unwrap_err()
            .contains("chaseBytes"));
        assert!(BenchRequest { array_bytes: Some(10), ..Default::default() }
            .validate()
            .unwrap_err()
            .contains("arrayBytes"));
    }

    #[test]
    fn a_stopped_run_keeps_what_it_measured_and_is_not_stored() {
        let topo = read_topology().unwrap();
        let stop = AtomicBool::new(false);
        let opts =
            BenchOptions { quick: true, array_bytes: Some(1 << 20), chase_bytes: Some(1 << 20), ..Default::default() };
        let dir = std::env::temp_dir().join(format!("numascope-job-test-{}", std::process::id()));
        let mut seen = Vec::new();
        // Stop as the second step starts: the first step (the first pair) is measured.
        let out = run_outcome(&topo, &Roots::default(), &opts, true, Some(dir.clone()), &stop, &mut |p| {
            seen.push(p.clone());
            if p.step == 2 {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        let cal = &out.machine["calibration"];
        assert_eq!(cal["partial"], true);
        assert!(cal["stepsDone"].as_u64().unwrap() >= 1, "{cal}");
        assert!(cal["bandwidthGBps"]["triad"][0][0]["value"].as_f64().unwrap() > 0.0);
        assert_eq!(out.stored_as, None);
        assert!(out.store_note.unwrap().contains("partial"));
        assert!(!dir.exists());
        assert_eq!(seen[0].step, 1);
        assert!(seen[0].remaining_s.is_none() && seen[1].remaining_s.is_some());
    }
}
