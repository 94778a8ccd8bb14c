//! `/api/bench`: `numascope bench` started from the app (docs/live-api.md, "Measuring the
//! machine"). One run at a time (two at once would measure each other); it runs on a thread of
//! its own, its progress and outcome are read by polling `GET /api/bench/:id`, and
//! `POST /api/bench/:id/stop` ends it after the current repetition with what was measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use numascope_core::bench::job::{self, BenchRequest};
use numascope_core::bench::output;
use numascope_core::topology::Roots;
use serde_json::{json, Value};

use super::http::{Conn, Head, Resp};
use super::ids::{random_hex, unix_ms};
use super::jobs::{BenchInner, BenchRun, Status};
use super::limits::MAX_BODY;
use super::request::{blocking, read_request_body};
use super::respond::{api_error, check_duplicate_keys, duplicate_key_error, json_response};
use super::state::State;

/// Runs kept for `GET /api/bench` (the oldest finished one is dropped beyond this).
const KEEP_RUNS: usize = 8;

/// The run object every `/api/bench` answer carries.
pub(super) fn bench_json(r: &BenchRun) -> Value {
    let inner = r.inner.lock().unwrap();
    json!({
        "id": r.id,
        "status": inner.status.as_str(),
        "quick": r.quick,
        "startedAtUnixMs": r.started_unix_ms,
        "stopRequested": inner.stop_requested,
        "progress": inner.progress,
        "result": inner.outcome,
        "error": inner.error.as_ref().map(|(c, m)| json!({ "code": c, "message": m })),
        "urls": {
            "status": format!("/api/bench/{}", r.id),
            "stop": format!("/api/bench/{}/stop", r.id),
        }
    })
}

fn find(st: &State, id: &str) -> Option<Arc<BenchRun>> {
    st.bench.0.lock().unwrap().iter().find(|r| r.id == id).cloned()
}

fn unknown(id: &str) -> Resp {
    let shown: String = id.chars().take(40).collect();
    api_error(404, "unknown-bench", &format!("no benchmark run with id {shown:?}"))
}

/// Every `/api/bench…` request.
pub(super) async fn route(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str, segs: &[&str]) -> (Resp, bool) {
    let method = head.method.as_str();
    let not_allowed = |allow: &str| {
        api_error(405, "method-not-allowed", &format!("{method} is not allowed on {path}; use {allow}"))
            .with_header("Allow", allow)
    };
    let resp = match (segs, method) {
        (["bench"], "POST") => {
            let body = match read_request_body(conn, head, MAX_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let st = st.clone();
            return (blocking(move || start(&st, &body)).await, true);
        }
        (["bench"], "GET") => {
            let runs = st.bench.0.lock().unwrap().clone();
            json_response(200, &json!({ "runs": runs.iter().map(|r| bench_json(r)).collect::<Vec<_>>() }))
        }
        (["bench", id], "GET") => match find(st, id) {
            Some(r) => json_response(200, &bench_json(&r)),
            None => unknown(id),
        },
        (["bench", id, "stop"], "POST") => match find(st, id) {
            Some(r) => {
                {
                    let mut inner = r.inner.lock().unwrap();
                    if inner.status == Status::Running {
                        inner.stop_requested = true;
                        r.stop.store(true, Ordering::SeqCst);
                    }
                }
                json_response(202, &bench_json(&r))
            }
            None => unknown(id),
        },
        (["bench"], _) => not_allowed("GET, POST"),
        (["bench", _], _) => not_allowed("GET"),
        (["bench", _, "stop"], _) => not_allowed("POST"),
        _ => api_error(404, "not-found", &format!("no API endpoint {method} {path} (see docs/live-api.md)")),
    };
    (resp, false)
}

fn start(st: &Arc<State>, body: &[u8]) -> Resp {
    if let Err(detail) = check_duplicate_keys(body) {
        return duplicate_key_error(&detail);
    }
    // An empty body is a full run with the defaults.
    let req: BenchRequest = if body.iter().all(u8::is_ascii_whitespace) {
        BenchRequest::default()
    } else {
        match serde_json::from_slice::<Value>(body) {
            Err(e) => return api_error(400, "bad-json", &format!("the body is not JSON: {e}")),
            Ok(v) => match serde_json::from_value(v) {
                Ok(r) => r,
                Err(e) => {
                    return api_error(
                        400,
                        "bad-request",
                        &format!("{e}; the body is {{\"quick\"?: bool, \"maxSeconds\"?: s, \"arrayBytes\"?: n, \"chaseBytes\"?: n, \"save\"?: bool}}"),
                    )
                }
            },
        }
    };
    let (opts, save) = match req.validate() {
        Ok(x) => x,
        Err(m) => return api_error(400, "bad-bench-option", &m),
    };
    let mut runs = st.bench.0.lock().unwrap();
    if let Some(r) = runs.iter().find(|r| r.inner.lock().unwrap().status == Status::Running) {
        return api_error(
            409,
            "bench-running",
            &format!(
                "benchmark run {} is still running (two runs at once would measure each other): stop it or wait for it",
                r.id
            ),
        );
    }
    let id = match random_hex(8) {
        Ok(id) => id,
        Err(e) => return api_error(500, "internal", &format!("reading random bytes for the run id: {e}")),
    };
    let run = Arc::new(BenchRun {
        id,
        quick: opts.quick,
        started_unix_ms: unix_ms(),
        stop: Arc::new(AtomicBool::new(false)),
        inner: Mutex::new(BenchInner {
            status: Status::Running,
            stop_requested: false,
            progress: None,
            outcome: None,
            error: None,
        }),
    });
    let worker = run.clone();
    let topo = st.topo.clone();
    let spawned = std::thread::Builder::new().name("numascope-bench".into()).spawn(move || {
        let r = job::run_outcome(&topo, &Roots::default(), &opts, save, output::cache_dir(), &worker.stop, &mut |p| {
            worker.inner.lock().unwrap().progress = Some(p.clone());
        });
        let mut inner = worker.inner.lock().unwrap();
        match r {
            Ok(o) => {
                if let Some(note) = &o.store_note {
                    eprintln!("numascope: bench {}: {note}", worker.id);
                }
                inner.outcome = Some(o);
                inner.status = Status::Finished;
            }
            Err(e) => {
                eprintln!("numascope: bench {} failed: {e}", worker.id);
                inner.error = Some((job::error_code(&e).to_string(), e.to_string()));
                inner.status = Status::Failed;
            }
        }
    });
    if let Err(e) = spawned {
        return api_error(500, "internal", &format!("cannot start the benchmark thread: {e}"));
    }
    if runs.len() >= KEEP_RUNS {
        if let Some(i) = runs.iter().position(|r| r.inner.lock().unwrap().status != Status::Running) {
            runs.remove(i);
        }
    }
    runs.push(run.clone());
    drop(runs);
    json_response(201, &bench_json(&run))
}

/// Examples of every bench message for the protocol fixture (protocol_fixture.rs): a run in
/// progress, a finished one on a two-node machine, a stopped (partial) one, a failed one.
#[cfg(test)]
pub(super) mod fixture {
    use super::*;
    use numascope_core::bench::job::{BenchOutcome, BenchProgress};
    use numascope_core::bench::output::{Calibration, KernelMatrices, LoadedCurve, LoadedPoint, Stat};
    use numascope_core::topology::{NodeTopology, Topology};
    use numascope_core::trace::MachineProvenance;

    fn topo() -> Topology {
        Topology {
            hostname: "box".into(),
            kernel: Some("6.8.0-52-generic".into()),
            cpu_model: Some("AMD EPYC 7302P 16-Core Processor".into()),
            cpu_clock_ghz: Some(3.0),
            page_size_bytes: 4096,
            nodes: vec![
                NodeTopology { id: 0, cpus: vec![0, 1], memory_bytes: Some(68_719_476_736) },
                NodeTopology { id: 1, cpus: vec![2, 3], memory_bytes: Some(68_719_476_736) },
            ],
            distances: vec![vec![10, 32], vec![32, 10]],
            has_node_sysfs: true,
            online_cpus: vec![0, 1, 2, 3],
            provenance: MachineProvenance {
                distances: "measured:sysfs node*/distance (ACPI SLIT)".into(),
                latencies_ns: "unavailable:no latency benchmark has been run (numascope bench)".into(),
                links: "unavailable:no interconnect description in sysfs".into(),
                memory_bandwidth_gbps: "unavailable:no uncore counters or bandwidth benchmark data".into(),
                memory_bytes: "measured:sysfs node*/meminfo MemTotal".into(),
                memory_tier: None,
                hmat: None,
                cpu_clock_ghz: Some(
                    "documented:sysfs cpu0/acpi_cppc/nominal_freq, 3000 MHz (the firmware's ACPI CPPC nominal frequency)"
                        .into(),
                ),
            },
            notes: vec![],
            memory: Default::default(),
        }
    }

    fn st(value: f64, reps: usize) -> Option<Stat> {
        Some(Stat { value, min: value * 0.97, max: value * 1.02, repetitions: reps })
    }

    /// A calibration of the two-node box; `partial`: stopped after the first pair.
    pub fn calibration(partial: bool) -> Calibration {
        let full = !partial;
        let mut cal = Calibration {
            tool: "numascope-bench".into(),
            version: "0.1.0".into(),
            date: "2026-11-24T12:00:00Z".into(),
            fingerprint: "e3d4f6acedd507db".into(),
            quick: true,
            partial,
            stopped_by: partial.then(|| "interrupted (signal)".to_string()),
            steps_done: if partial { 1 } else { 12 },
            steps_planned: 12,
            node_ids: vec![0, 1],
            bound_share: vec![vec![Some(1.0), full.then_some(1.0)], vec![full.then_some(1.0), full.then_some(1.0)]],
            array_bytes: 268_435_456,
            chase_bytes: 268_435_456,
            huge_pages: "requested (MADV_HUGEPAGE) for the chase buffer".into(),
            virtual_machine: None,
            bandwidth_gbps: KernelMatrices {
                copy: vec![
                    vec![st(21.4, 3), full.then(|| st(14.2, 3)).flatten()],
                    vec![full.then(|| st(14.0, 3)).flatten(), full.then(|| st(21.1, 3)).flatten()],
                ],
                triad: vec![
                    vec![st(23.9, 3), full.then(|| st(15.8, 3)).flatten()],
                    vec![full.then(|| st(15.6, 3)).flatten(), full.then(|| st(23.5, 3)).flatten()],
                ],
            },
            latency_ns: vec![
                vec![st(92.5, 2), full.then(|| st(141.0, 2)).flatten()],
                vec![full.then(|| st(139.5, 2)).flatten(), full.then(|| st(93.0, 2)).flatten()],
            ],
            all_local_gbps: if full { vec![st(22.8, 3), st(22.5, 3)] } else { vec![None, None] },
            all_to_one_gbps: if full { vec![st(26.1, 3), st(25.7, 3)] } else { vec![None, None] },
            sustained_gbps: vec![],
            loaded_latency: if full {
                vec![LoadedCurve {
                    memory_node: 0,
                    chase_cpu: 0,
                    points: vec![
                        LoadedPoint { load_threads: 0, delivered_gbps: 0.0, latency_ns: 93.1 },
                        LoadedPoint { load_threads: 1, delivered_gbps: 11.8, latency_ns: 118.4 },
                    ],
                }]
            } else {
                vec![]
            },
            notes: if partial { vec![] } else { vec!["transparent huge pages are not available".into()] },
        };
        cal.derive_sustained();
        cal
    }

    pub fn outcome(partial: bool) -> BenchOutcome {
        let machine = output::machine_json(&topo(), &calibration(partial));
        if partial {
            BenchOutcome {
                machine,
                stored_as: None,
                store_note: Some("a partial run is not stored as this machine's calibration".into()),
            }
        } else {
            BenchOutcome {
                machine,
                stored_as: Some("/home/u/.cache/numascope/machines/e3d4f6acedd507db.json".into()),
                store_note: None,
            }
        }
    }

    pub fn progress(step: usize) -> BenchProgress {
        BenchProgress {
            step,
            steps: 12,
            what: "cpu node 0 → memory node 1: copy, triad, idle latency".into(),
            elapsed_s: 4.2,
            remaining_s: (step > 1).then_some(21.0),
        }
    }

    fn run(id: &str, inner: BenchInner) -> BenchRun {
        BenchRun {
            id: id.into(),
            quick: true,
            started_unix_ms: 1_795_294_308_230,
            stop: Arc::new(AtomicBool::new(false)),
            inner: Mutex::new(inner),
        }
    }

    pub fn runs() -> Vec<BenchRun> {
        let base = || BenchInner {
            status: Status::Running,
            stop_requested: false,
            progress: None,
            outcome: None,
            error: None,
        };
        let starting = run("5a1c0e77d2b94f10", base());
        let running = run("5a1c0e77d2b94f11", BenchInner { progress: Some(progress(2)), ..base() });
        let finished = run(
            "5a1c0e77d2b94f12",
            BenchInner {
                status: Status::Finished,
                progress: Some(progress(12)),
                outcome: Some(outcome(false)),
                ..base()
            },
        );
        let stopped = run(
            "5a1c0e77d2b94f13",
            BenchInner {
                status: Status::Finished,
                stop_requested: true,
                progress: Some(progress(2)),
                outcome: Some(outcome(true)),
                ..base()
            },
        );
        let failed = run(
            "5a1c0e77d2b94f14",
            BenchInner {
                status: Status::Failed,
                error: Some(("bench-memory".into(), "the benchmark would map 9000 MiB at once, more than half of the 8000 MiB available (MemAvailable); pass a smaller --size (bytes of each array) and --chase-size, or free memory".into())),
                ..base()
            },
        );
        vec![starting, running, finished, stopped, failed]
    }
}

#[cfg(test)]
mod tests {
    /// Copy and triad of one pair far apart (the 25.5 against 6.7 GB/s) get a note that
    /// names the pair and says to run again; the fixture's consistent kernels get none.
    #[test]
    fn kernels_that_disagree_are_called_out() {
        let mut cal = super::fixture::calibration(false);
        assert_eq!(cal.kernel_spread_notes(), Vec::<String>::new());
        let t = cal.bandwidth_gbps.triad[1][1].as_mut().unwrap();
        t.value = 6.7;
        cal.bandwidth_gbps.copy[1][1].as_mut().unwrap().value = 25.5;
        let notes = cal.kernel_spread_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("cpu node 1 on memory node 1: triad 6.7 GB/s against copy 25.5 GB/s (×3.8 apart"),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("run numascope bench again"), "{}", notes[0]);
    }
}
