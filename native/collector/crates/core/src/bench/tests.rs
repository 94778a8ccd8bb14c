use super::*;
use crate::topology::{read_topology, NodeTopology};

fn small() -> BenchOptions {
    BenchOptions { quick: true, array_bytes: Some(1 << 20), chase_bytes: Some(1 << 20), ..Default::default() }
}

fn fake_topo(kernel: &str, mem: u64) -> Topology {
    let mut t = read_topology().expect("this machine's topology");
    t.cpu_model = Some("Test CPU @ 2.00GHz".into());
    t.kernel = Some(kernel.into());
    t.nodes = vec![
        NodeTopology { id: 0, cpus: vec![0, 1], memory_bytes: Some(mem) },
        NodeTopology { id: 1, cpus: vec![], memory_bytes: Some(mem) },
    ];
    t
}

#[test]
fn the_fingerprint_is_stable_and_tracks_what_identifies_the_machine() {
    let a = output::fingerprint(&fake_topo("6.1.0", 64 << 30));
    assert_eq!(a, output::fingerprint(&fake_topo("6.1.0", 64 << 30)));
    // A fixed value: a change of the key or the hash would silently orphan every stored calibration.
    assert_eq!(a, "e3d4f6acedd507db");
    assert_eq!(a.len(), 16);
    assert_eq!(a, output::fingerprint(&fake_topo("6.1.0", (64 << 30) - (3 << 20))), "a few MiB less memory at boot");
    assert_ne!(a, output::fingerprint(&fake_topo("6.2.0", 64 << 30)), "kernel");
    assert_ne!(a, output::fingerprint(&fake_topo("6.1.0", 32 << 30)), "memory size");
    let mut three = fake_topo("6.1.0", 64 << 30);
    three.nodes.push(NodeTopology { id: 2, cpus: vec![], memory_bytes: Some(64 << 30) });
    assert_ne!(a, output::fingerprint(&three), "node count");
}

#[test]
fn sizes_beyond_available_memory_are_refused_with_what_to_do() {
    let e = check_memory(10 << 30, Some(8 << 30)).unwrap_err().to_string();
    assert!(e.contains("--size") && e.contains("MemAvailable"), "{e}");
    assert!(check_memory(1 << 30, Some(8 << 30)).is_ok());
    let topo = read_topology().unwrap();
    let stop = AtomicBool::new(false);
    let opts = BenchOptions { array_bytes: Some(1 << 50), ..small() };
    let ctx = Context { topo: &topo, roots: &Roots::default(), opts: &opts, stop: &stop };
    match run(&ctx, &mut |_| {}) {
        Err(BenchError::Memory(m)) => assert!(m.contains("more than half"), "{m}"),
        other => panic!("expected a memory refusal, got {:?}", other.map(|c| c.steps_done)),
    }
}

#[test]
fn a_step_budget_stops_early_and_marks_the_result_partial() {
    let topo = read_topology().unwrap();
    let stop = AtomicBool::new(false);
    let opts = BenchOptions { max_steps: Some(1), ..small() };
    let ctx = Context { topo: &topo, roots: &Roots::default(), opts: &opts, stop: &stop };
    let mut seen = Vec::new();
    let cal = run(&ctx, &mut |p| seen.push((p.step, p.steps))).expect("run");
    assert!(cal.partial, "stopped after one step");
    assert_eq!(cal.steps_done, 1);
    assert!(cal.steps_planned > 1);
    assert_eq!(seen.len(), 1);
    assert!(cal.stopped_by.as_deref().unwrap().contains("step budget"));
    assert!(cal.bandwidth_gbps.triad[0][0].is_some(), "the first step (pair 0,0) was measured");
    assert!(cal.loaded_latency.is_empty(), "later steps were not");
    let m = output::machine_json(&topo, &cal);
    assert_eq!(m["calibration"]["partial"], true);
    assert!(m["provenance"]["memoryBandwidthGBps"].as_str().unwrap().contains("partial run"));
}

#[test]
fn an_injected_stop_flag_yields_a_partial_result_without_steps() {
    let topo = read_topology().unwrap();
    let stop = AtomicBool::new(true);
    let ctx = Context { topo: &topo, roots: &Roots::default(), opts: &small(), stop: &stop };
    let cal = run(&ctx, &mut |_| {}).expect("run");
    assert!(cal.partial);
    assert_eq!(cal.steps_done, 0);
    assert!(cal.sustained_gbps.iter().all(Option::is_none));
    assert_eq!(output::machine_json(&topo, &cal)["latenciesNs"], serde_json::Value::Null);
}

#[test]
fn a_full_small_run_fills_the_matrices_with_positive_numbers() {
    let topo = read_topology().unwrap();
    let stop = AtomicBool::new(false);
    let ctx = Context { topo: &topo, roots: &Roots::default(), opts: &small(), stop: &stop };
    let cal = run(&ctx, &mut |_| {}).expect("run");
    assert!(!cal.partial);
    let n = topo.nodes.len();
    for c in plan::cpu_nodes(&topo) {
        for m in 0..n {
            for s in [&cal.bandwidth_gbps.copy[c][m], &cal.bandwidth_gbps.triad[c][m], &cal.latency_ns[c][m]] {
                let s = s.as_ref().expect("measured");
                assert!(s.value.is_finite() && s.value > 0.0 && s.min <= s.value && s.value <= s.max);
            }
        }
    }
    assert!(cal.sustained_gbps.iter().all(|v| v.is_some_and(|v| v > 0.0)));
    assert_eq!(cal.loaded_latency.len(), n);
    let m = output::machine_json(&topo, &cal);
    assert!(m["latenciesNs"][0][0].as_f64().unwrap() > 0.0);
    assert!(m["provenance"]["latenciesNs"].as_str().unwrap().starts_with("measured:numascope-bench "));
}

#[test]
fn stats_are_median_and_spread() {
    let s = Stat::of(&[3.0, 1.0, 2.0, f64::NAN]).unwrap();
    assert_eq!((s.value, s.min, s.max, s.repetitions), (2.0, 1.0, 3.0, 3));
    assert_eq!(Stat::of(&[1.0, 4.0]).unwrap().value, 2.5);
    assert!(Stat::of(&[]).is_none());
}

#[test]
fn cache_sizes_and_directories_parse() {
    assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
    assert_eq!(parse_cache_size("36M"), Some(36 << 20));
    assert_eq!(parse_cache_size("x"), None);
    assert_eq!(output::cache_dir_from(Some("/x".into()), Some("/h".into())).unwrap(), Path::new("/x/numascope"));
    assert_eq!(output::cache_dir_from(None, Some("/h".into())).unwrap(), Path::new("/h/.cache/numascope"));
    assert_eq!(output::cache_dir_from(Some(String::new()), None), None);
}
