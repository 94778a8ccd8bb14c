//! `numascope bench`: measure this machine's bandwidth and latency per node pair and store a
//! calibrated machine model (docs/bench.md).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use numascope_core::bench::{self, output, BenchError, BenchOptions, Context};
use numascope_core::recorder;
use numascope_core::topology::{self, Roots};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Fewer repetitions and points, smaller arrays (about 2 minutes on 4 nodes).
    #[arg(long)]
    pub quick: bool,
    /// Print the machine model JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Bytes of each STREAM array per cpu node (default: 4 to 8 × the last-level caches).
    #[arg(long, value_name = "BYTES")]
    pub size: Option<u64>,
    /// Bytes of the pointer-chase buffer (default: 4 to 8 × the last-level caches).
    #[arg(long = "chase-size", value_name = "BYTES")]
    pub chase_size: Option<u64>,
    /// Stop after this many seconds and write what was measured (marked partial).
    #[arg(long = "max-seconds", value_name = "SECONDS")]
    pub max_seconds: Option<f64>,
    /// Also write the machine model JSON to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not store the result in the cache directory.
    #[arg(long = "no-save")]
    pub no_save: bool,
}

pub fn cmd_bench(args: BenchArgs) -> Result<(), (u8, String)> {
    let topo = topology::read_topology().map_err(|e| (1, format!("reading the NUMA topology: {e}")))?;
    let roots = Roots::default();
    let opts = BenchOptions {
        quick: args.quick,
        array_bytes: args.size,
        chase_bytes: args.chase_size,
        max_seconds: args.max_seconds,
        max_steps: None,
    };
    recorder::install_signal_handlers();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher_stop = Arc::clone(&stop);
    let done = Arc::new(AtomicBool::new(false));
    let watcher_done = Arc::clone(&done);
    // The signal handler only records the signal; this thread turns it into the stop flag.
    let watcher = std::thread::spawn(move || {
        while !watcher_done.load(Ordering::SeqCst) {
            if recorder::signal_received().is_some() {
                watcher_stop.store(true, Ordering::SeqCst);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let ctx = Context { topo: &topo, roots: &roots, opts: &opts, stop: &stop };
    let result = bench::run(&ctx, &mut |p| {
        let eta = p.remaining_s.map(|r| format!(", about {r:.0} s left")).unwrap_or_default();
        eprintln!("numascope bench: step {} of {} ({:.1} s{eta}): {}", p.step, p.steps, p.elapsed_s, p.what);
    });
    done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let cal = result.map_err(|e| match e {
        BenchError::Memory(m) | BenchError::Usage(m) => (2, m),
        e => (1, e.to_string()),
    })?;
    let machine = output::machine_json(&topo, &cal);
    for n in &cal.notes {
        eprintln!("numascope bench: note: {n}");
    }
    if cal.partial {
        eprintln!(
            "numascope bench: partial result ({}): {} of {} steps measured",
            cal.stopped_by.as_deref().unwrap_or("stopped"),
            cal.steps_done,
            cal.steps_planned
        );
    }
    let text = serde_json::to_string_pretty(&machine).map_err(|e| (1, e.to_string()))?;
    if let Some(path) = &args.output {
        std::fs::write(path, &text).map_err(|e| (1, format!("writing {}: {e}", path.display())))?;
    }
    save(&args, &cal, &machine);
    if args.json {
        println!("{text}");
    } else {
        print_table(&topo, &cal);
    }
    Ok(())
}

fn save(args: &BenchArgs, cal: &output::Calibration, machine: &serde_json::Value) {
    if args.no_save {
        return;
    }
    if cal.partial {
        eprintln!("numascope bench: a partial result is not stored as this machine's calibration (use -o to keep it)");
        return;
    }
    match output::cache_dir() {
        Some(dir) => match output::store(&dir, &cal.fingerprint, machine) {
            Ok(p) => eprintln!("numascope bench: stored as this machine's calibration: {}", p.display()),
            Err(e) => eprintln!("numascope bench: warning: could not store the calibration in {}: {e}", dir.display()),
        },
        None => {
            eprintln!("numascope bench: warning: neither XDG_CACHE_HOME nor HOME is set: the calibration is not stored")
        }
    }
}

fn cell(s: &Option<output::Stat>) -> String {
    s.as_ref().map_or("-".into(), |s| format!("{:.1}", s.value))
}

fn print_table(topo: &topology::Topology, cal: &output::Calibration) {
    let ids: Vec<String> = topo.nodes.iter().map(|n| format!("{:>9}", format!("mem {}", n.id))).collect();
    for (title, m) in [
        ("triad GB/s", &cal.bandwidth_gbps.triad),
        ("copy GB/s", &cal.bandwidth_gbps.copy),
        ("idle latency ns", &cal.latency_ns),
    ] {
        println!("{title:<16}{}", ids.join(""));
        for (c, row) in m.iter().enumerate() {
            if !topo.nodes[c].cpus.is_empty() {
                println!(
                    "{:<16}{}",
                    format!("cpu node {}", topo.nodes[c].id),
                    row.iter().map(|s| format!("{:>9}", cell(s))).collect::<String>()
                );
            }
        }
    }
    for curve in &cal.loaded_latency {
        let pts: Vec<String> =
            curve.points.iter().map(|p| format!("{:.1} GB/s → {:.0} ns", p.delivered_gbps, p.latency_ns)).collect();
        println!("loaded latency, memory node {}: {}", curve.memory_node, pts.join("; "));
    }
}
