//! Property test of the plan and rollback-record parsers (issue 19): seeded random mutations of
//! valid plans and records, structural (a JSON value replaced by a hostile one, keys removed or
//! added, arrays multiplied, nesting) and textual (bytes flipped, inserted, cut). Every input
//! must give `Ok` or a typed `PlanError`, never a panic, and parsing must allocate at most a
//! bounded amount whatever the numbers inside say (a counting global allocator measures it).
//! Accepted inputs must respect the documented limits.
//!
//! Budget: `NUMASCOPE_FUZZ_SECS` seconds (default 15) and at most `NUMASCOPE_FUZZ_ITERS`
//! inputs (default 1,000,000); seed `NUMASCOPE_FUZZ_SEED` (default 19). A failure prints the
//! seed, the iteration and the input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use numascope_core::apply::{
    parse_plan, PlanErrorKind, RollbackRecord, MAX_PAGES_PER_RANGE, MAX_PAGE_RANGES, MAX_ROLLBACK_RUNS, MAX_THREADS,
    MAX_TOTAL_PAGES,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------- counting allocator

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = CURRENT.fetch_add(new - l.size(), Ordering::Relaxed) + (new - l.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes a parse may allocate beyond its input (serde_json values for a few KiB of JSON, the
/// parsed plan, error strings): far below what any size read from the input could demand.
const MAX_PARSE_ALLOC: usize = 16 << 20;

/// Runs `f`, returning its result and the peak bytes it allocated.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

// ---------------------------------------------------------------- seeded randomness

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------- inputs

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../..")
}

fn seed_plans() -> Vec<Value> {
    let mut v = vec![json!({
        "format": "numascope-plan", "version": 1, "createdAt": "2026-11-21T20:00:00Z",
        "source": { "policy": "interleave", "seed": 1 },
        "target": { "pid": 42, "startTimeTicks": "100", "command": ["./app"],
                    "machine": { "nodeIds": [0, 1, 2, 3], "distances": [[10,20,20,20],[20,10,20,20],[20,20,10,20],[20,20,20,10]] } },
        "pageRanges": [
            { "start": "0x7f0000000000", "end": "0x7f0000400000", "action": "interleave", "toNodes": [0, 1, 2, 3], "expectedNodes": { "0": 1024 } },
            { "start": "0x7f0000800000", "end": "0x7f0000801000", "action": "move", "toNodes": [2], "reason": "hot" }
        ],
        "threads": [ { "tid": 43, "toNodes": [1], "expectedNode": 0 }, { "tid": 44, "toNodes": [2, 3] } ],
        "expected": { "pagesToMove": 3, "bytesToMove": 12288, "pagesPerNodeAfter": { "0": 2, "1": 3 }, "threadsToPin": 2 }
    })];
    if let Ok(rd) = std::fs::read_dir(repo_root().join("docs/examples")) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("plan-") && n.ends_with(".json") && !n.contains("invalid") {
                if let Ok(plan) = serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()) {
                    v.push(plan);
                }
            }
        }
    }
    v
}

fn seed_records() -> Vec<Value> {
    vec![json!({
        "format": "numascope-rollback", "version": 1, "pid": 42, "startTimeTicks": "100", "pageSize": 4096,
        "pages": [ { "start": "0x7f0000000000", "count": 512, "node": 0 }, { "start": "0x7f0000400000", "count": 1, "node": 3 } ],
        "threads": [ { "tid": 43, "cpus": [0, 1, 2], "startTimeTicks": "120" }, { "tid": 44, "cpus": [5] } ]
    })]
}

/// A hostile replacement value.
fn hostile(r: &mut Rng) -> Value {
    let big = [
        json!(0),
        json!(-1),
        json!(1),
        json!(i32::MAX),
        json!(i32::MAX as i64 + 1),
        json!(u32::MAX),
        json!(1u64 << 35),
        json!(1u64 << 40),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1.5),
        json!(1e300),
        json!(-0.0),
    ];
    let strs = [
        "0x0",
        "0x1000",
        "0x7ffffffff000",
        "0xffffffffffffffff",
        "0xfffffffffffff000",
        "0x10000000000000000",
        "0x",
        "0X1000",
        "0x+1000",
        "0x-1000",
        "1000",
        "",
        "é",
        "💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥💥",
        "move",
        "interleave",
        "numascope-plan",
        "numascope-rollback",
        "18446744073709551616",
        "-5",
    ];
    match r.below(9) {
        0 | 1 => r.pick(&big).clone(),
        2 | 3 => json!(r.pick(&strs)),
        4 => Value::Null,
        5 => json!(r.below(2) == 0),
        6 => json!([]),
        7 => json!({}),
        _ => {
            let n = r.below(6);
            Value::Array((0..n).map(|_| r.pick(&big).clone()).collect())
        }
    }
}

/// Paths to every value in `v` (object keys and array indices).
fn paths(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                here.push(Step::Key(k.clone()));
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                here.push(Step::Index(i));
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    let mut cur = v;
    for s in path {
        cur = match s {
            Step::Key(k) => &mut cur[k.as_str()],
            Step::Index(i) => &mut cur[*i],
        };
    }
    cur
}

/// One structural mutation of `v`.
fn mutate(v: &mut Value, r: &mut Rng) {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    let p = r.pick(&all).clone();
    let target = at(v, &p);
    match r.below(8) {
        0..=2 => *target = hostile(r),
        3 => {
            // remove a key or an element
            if let Value::Object(o) = target {
                let keys: Vec<String> = o.keys().cloned().collect();
                if !keys.is_empty() {
                    let k = r.pick(&keys).clone();
                    o.remove(&k);
                }
            } else if let Value::Array(a) = target {
                if !a.is_empty() {
                    let i = r.below(a.len());
                    a.remove(i);
                }
            }
        }
        4 => {
            // multiply an array (many ranges, threads, runs, nodes)
            if let Value::Array(a) = target {
                if let Some(x) = a.first().cloned() {
                    let n = *r.pick(&[2usize, 10, 100, 1000]);
                    a.extend(std::iter::repeat_n(x, n));
                }
            } else {
                *target = json!([target.clone(), target.clone()]);
            }
        }
        5 => {
            // add an unexpected key
            if let Value::Object(o) = target {
                o.insert(r.pick(&["extra", "pid", "count", "start", "__proto__"]).to_string(), hostile(r));
            }
        }
        6 => {
            // nest
            let depth = *r.pick(&[1usize, 5, 50, 200]);
            let mut x = target.take();
            for _ in 0..depth {
                x = json!([x]);
            }
            *target = x;
        }
        _ => {
            // a wide page range or run (the probe's case)
            if let Value::Object(o) = target {
                if o.contains_key("end") {
                    o.insert("start".into(), json!("0x1000"));
                    o.insert("end".into(), json!(r.pick(&["0x7ffffffff000", "0xfffffffffffff000", "0x100001000"])));
                } else if o.contains_key("count") {
                    o.insert("count".into(), json!(*r.pick(&[1u64 << 27, (1u64 << 27) + 1, 1 << 40, u64::MAX])));
                }
            }
        }
    }
}

/// One textual mutation of `s`.
fn mutate_text(s: &str, r: &mut Rng) -> String {
    let mut b = s.as_bytes().to_vec();
    match r.below(5) {
        0 if !b.is_empty() => {
            let i = r.below(b.len());
            b[i] ^= 1 << r.below(8);
        }
        1 if !b.is_empty() => b.truncate(r.below(b.len())),
        2 => {
            let i = r.below(b.len() + 1);
            const INSERTS: [&[u8]; 10] = [b"{", b"[", b"\"", b"\\", b"0", b"-", b"\xff", b"\0", b"1e999", b"]]]]"];
            let ins = *r.pick(&INSERTS);
            b.splice(i..i, ins.iter().copied());
        }
        3 => {
            let n = *r.pick(&[100usize, 10_000]);
            let mut deep = "[".repeat(n);
            deep.push_str(&"]".repeat(n));
            return deep;
        }
        _ if !b.is_empty() => {
            let i = r.below(b.len());
            b.remove(i);
        }
        _ => {}
    }
    String::from_utf8_lossy(&b).into_owned()
}

// ---------------------------------------------------------------- the property

#[test]
fn plan_and_rollback_parsers_never_panic_and_allocate_boundedly() {
    let seed = env_u64("NUMASCOPE_FUZZ_SEED", 19);
    let budget = Duration::from_secs(env_u64("NUMASCOPE_FUZZ_SECS", 15));
    let max_iters = env_u64("NUMASCOPE_FUZZ_ITERS", 1_000_000);
    let mut r = Rng(seed);
    let plans = seed_plans();
    let records = seed_records();
    for p in &plans {
        parse_plan(&p.to_string(), 4096).unwrap_or_else(|e| panic!("a seed plan is invalid: {e}"));
    }
    for x in &records {
        RollbackRecord::parse(&x.to_string()).unwrap_or_else(|e| panic!("a seed record is invalid: {e}"));
    }
    let t0 = Instant::now();
    let (mut n, mut ok, mut too_large, mut worst) = (0u64, 0u64, 0u64, 0usize);
    while n < max_iters && t0.elapsed() < budget {
        n += 1;
        let is_plan = r.below(2) == 0;
        let mut v = if is_plan { r.pick(&plans).clone() } else { r.pick(&records).clone() };
        for _ in 0..=r.below(3) {
            mutate(&mut v, &mut r);
        }
        let mut text = v.to_string();
        if r.below(4) == 0 {
            text = mutate_text(&text, &mut r);
        }
        let outcome = std::panic::catch_unwind(|| {
            measured(|| {
                if is_plan {
                    parse_plan(&text, 4096).map(|p| {
                        assert!(p.page_ranges.len() <= MAX_PAGE_RANGES && p.threads.len() <= MAX_THREADS);
                        let mut total = 0;
                        for g in &p.page_ranges {
                            let pages = (g.end - g.start) / 4096;
                            assert!(g.start < g.end && pages <= MAX_PAGES_PER_RANGE);
                            assert!(!g.to_nodes.is_empty());
                            total += pages;
                        }
                        assert!(total <= MAX_TOTAL_PAGES);
                    })
                } else {
                    RollbackRecord::parse(&text).map(|rec| {
                        let runs = rec.checked_runs().expect("an accepted record has valid runs");
                        assert!(runs.len() <= MAX_ROLLBACK_RUNS && rec.threads.len() <= MAX_THREADS);
                        assert!(runs.iter().map(|r| r.1).sum::<u64>() <= MAX_TOTAL_PAGES);
                        assert!(rec.pid > 0 && rec.threads.iter().all(|t| t.tid > 0 && !t.cpus.is_empty()));
                    })
                }
            })
        });
        let what = if is_plan { "plan" } else { "rollback record" };
        let (result, alloc) = match outcome {
            Ok(x) => x,
            Err(_) => panic!("seed {seed}, input {n}: the {what} parser panicked on {text}"),
        };
        assert!(
            alloc <= MAX_PARSE_ALLOC + 8 * text.len(),
            "seed {seed}, input {n}: parsing a {}-byte {what} allocated {alloc} bytes: {text:.300}",
            text.len()
        );
        worst = worst.max(alloc);
        match result {
            Ok(()) => ok += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                assert!(e.to_string().len() < 4096, "seed {seed}, input {n}: an unbounded message: {e}");
                if e.kind == PlanErrorKind::TooLarge {
                    too_large += 1;
                }
            }
        }
    }
    eprintln!(
        "apply_fuzz: seed {seed}: {n} inputs in {:.1} s: {ok} accepted, {too_large} refused as too large, the rest \
         invalid; worst parse allocation {} KiB",
        t0.elapsed().as_secs_f64(),
        worst / 1024
    );
    assert!(n >= 1000, "too few inputs in the budget ({n}): the parsers are too slow");
    assert!(too_large > 0, "the mutations never reached a limit");
}

/// The probe's two inputs, as named cases of the same property.
#[test]
fn whole_address_space_plan_and_huge_run_are_refused_in_bounded_memory() {
    let mut plan = seed_plans()[0].clone();
    plan["pageRanges"] = json!([{ "start": "0x1000", "end": "0x7ffffffff000", "action": "move", "toNodes": [0] }]);
    let (r, alloc) = measured(|| parse_plan(&plan.to_string(), 4096));
    let e = r.unwrap_err();
    assert_eq!((e.path.as_str(), e.kind), ("pageRanges[0]", PlanErrorKind::TooLarge), "{e}");
    assert!(alloc < 1 << 20, "{alloc} bytes");
    // many ranges under the per-range limit but over the total
    let ranges: Vec<Value> = (0..3u64)
        .map(|i| {
            let s = 0x1000_0000_0000 + i * (MAX_PAGES_PER_RANGE * 4096);
            json!({ "start": format!("0x{s:x}"), "end": format!("0x{:x}", s + MAX_PAGES_PER_RANGE * 4096), "action": "move", "toNodes": [0] })
        })
        .collect();
    plan["pageRanges"] = json!(ranges);
    let e = parse_plan(&plan.to_string(), 4096).unwrap_err();
    assert_eq!((e.path.as_str(), e.kind), ("pageRanges[2]", PlanErrorKind::TooLarge), "{e}");
    let mut rec = seed_records()[0].clone();
    rec["pages"][0]["count"] = json!(1u64 << 40);
    let (r, alloc) = measured(|| RollbackRecord::parse(&rec.to_string()));
    let e = r.unwrap_err();
    assert_eq!((e.path.as_str(), e.kind), ("pages[0].count", PlanErrorKind::TooLarge), "{e}");
    assert!(alloc < 1 << 20, "{alloc} bytes");
}
