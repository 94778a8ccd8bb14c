//! The parts of a plan that serve a new run of the program (docs/plan-format.md, "Object
//! entries" and "Threads in a new run"): `objects[]`, placement policies keyed by allocation
//! site (module + module-relative offsets of the allocation's caller frames, which survive ASLR),
//! and the creation order and name of thread entries.
//!
//! Every error names the field path; every list is bounded before anything is done in
//! proportion to it.

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::plan_fields::{
    array, check_nodes_known, err, field, join, node_list, obj, opt_field, short, string, too_large, uint, PlanError,
};

/// Object entries per plan (also the shim's table size).
pub const MAX_OBJECTS: usize = 1024;
/// Frames per object entry (the shim matches them against the first 16 + this many frames).
pub const MAX_FRAMES_PER_OBJECT: usize = 16;
/// Distinct modules (path + build id) named by all object entries.
pub const MAX_PLAN_MODULES: usize = 256;
/// A module path, in bytes (Linux PATH_MAX).
pub const MAX_MODULE_PATH_BYTES: usize = 4096;
/// `site` and `reason` strings of an object entry, in characters.
pub const MAX_SITE_CHARS: usize = 1024;
/// Largest `size.max` (256 TiB): a bound for matching, far above any one allocation.
pub const MAX_OBJECT_BYTES: u64 = 1 << 48;
/// A thread name is a comm: at most 15 bytes (TASK_COMM_LEN - 1).
pub const MAX_THREAD_NAME_BYTES: usize = 15;
/// Largest creation order (2^20 threads created in one run).
pub const MAX_THREAD_ORDER: u64 = 1 << 20;
/// GNU build ids are 20 bytes (SHA-1) in practice; the shim keeps up to 64 bytes.
const MAX_BUILD_ID_HEX: usize = 128;

/// The memory policy an object entry asks for (set_mempolicy(2) modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectPolicy {
    /// MPOL_BIND: pages only from `nodes` (the nearest of them to the faulting cpu).
    Bind,
    /// MPOL_INTERLEAVE: page i on node i mod n of `nodes`.
    Interleave,
    /// MPOL_WEIGHTED_INTERLEAVE (Linux >= 6.9): `weights[k]` pages on `nodes[k]` in turn. The
    /// kernel takes the weights from /sys/kernel/mm/mempolicy/weighted_interleave (system-wide),
    /// so `numascope run` checks they are the plan's (docs/apply.md).
    WeightedInterleave,
}

impl ObjectPolicy {
    pub fn name(self) -> &'static str {
        match self {
            ObjectPolicy::Bind => "bind",
            ObjectPolicy::Interleave => "interleave",
            ObjectPolicy::WeightedInterleave => "weighted-interleave",
        }
    }
}

/// One frame of an allocation's call stack, as it survives a new run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectFrame {
    /// The module's path as the loader names it (the executable: its real path).
    pub module: String,
    /// GNU build id, lower-case hex; when given, a module matches by build id (path ignored).
    pub build_id: Option<String>,
    /// Address as in the module's ELF file: the code address minus the module's load bias
    /// (the shim records addresses one byte into the call instruction).
    #[serde(serialize_with = "super::plan_fields::ser_hex")]
    pub offset: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SizeRange {
    pub min: u64,
    pub max: u64,
}

/// A placement for every allocation made from one call stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectEntry {
    /// Human-readable site (`points.c:84 alloc_points`), for display only.
    pub site: Option<String>,
    /// Innermost first: the allocation call's caller and its callers, outside the allocator.
    pub frames: Vec<ObjectFrame>,
    /// Only allocations of `min..=max` bytes match.
    pub size: SizeRange,
    pub policy: ObjectPolicy,
    pub nodes: Vec<u32>,
    /// `weighted-interleave` only: one weight (1-255) per node.
    pub weights: Option<Vec<u8>>,
    pub reason: Option<String>,
}

impl ObjectEntry {
    /// The (module, build id) pair of each frame.
    pub fn modules(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.frames.iter().map(|f| (f.module.as_str(), f.build_id.as_deref()))
    }
}

fn bounded_text(v: &Value, path: &str) -> Result<String, PlanError> {
    let s = string(v, path)?;
    if s.chars().count() > MAX_SITE_CHARS {
        return too_large(path, format!("longer than {MAX_SITE_CHARS} characters"));
    }
    Ok(s.to_string())
}

fn parse_frame(v: &Value, path: &str) -> Result<ObjectFrame, PlanError> {
    let o = obj(v, path)?;
    let mp = join(path, "module");
    let module = string(field(o, path, "module")?, &mp)?;
    if module.len() > MAX_MODULE_PATH_BYTES {
        return too_large(&mp, format!("a path of {} bytes, more than {MAX_MODULE_PATH_BYTES}", module.len()));
    }
    if !module.starts_with('/') {
        return err(
            &mp,
            format!("expected an absolute path (as the loader names the module), found {}", short(&v["module"])),
        );
    }
    if module.bytes().any(|b| b == 0 || b == b'\n') {
        return err(&mp, "a path may not contain NUL or newline characters");
    }
    let build_id = match opt_field(o, "buildId") {
        Some(b) => {
            let bp = join(path, "buildId");
            let s = string(b, &bp)?;
            if s.is_empty() {
                None
            } else {
                if s.len() > MAX_BUILD_ID_HEX || s.len() % 2 != 0 || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return err(
                        &bp,
                        format!(
                            "expected an even number (at most {MAX_BUILD_ID_HEX}) of hex digits, found {}",
                            short(b)
                        ),
                    );
                }
                Some(s.to_ascii_lowercase())
            }
        }
        None => None,
    };
    let op = join(path, "offset");
    let ov = field(o, path, "offset")?;
    let s = string(ov, &op)?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .filter(|d| !d.is_empty() && d.len() <= 16 && d.bytes().all(|c| c.is_ascii_hexdigit()));
    let Some(digits) = digits else {
        return err(&op, format!("expected a hex string like \"0x1a2b\", found {}", short(ov)));
    };
    let offset = u64::from_str_radix(digits, 16).map_or_else(|_| err(&op, "not a 64-bit hex number"), Ok)?;
    Ok(ObjectFrame { module: module.to_string(), build_id, offset })
}

fn parse_size(o: &Map<String, Value>, path: &str, page_size: u64) -> Result<SizeRange, PlanError> {
    let sp = join(path, "size");
    let so = obj(field(o, path, "size")?, &sp)?;
    let min = uint(field(so, &sp, "min")?, &join(&sp, "min"))?;
    let max = uint(field(so, &sp, "max")?, &join(&sp, "max"))?;
    if min < page_size {
        return err(
            &join(&sp, "min"),
            format!("{min} bytes: an object smaller than a page ({page_size} bytes) cannot be given a page policy"),
        );
    }
    if max < min {
        return err(&join(&sp, "max"), format!("{max} is less than size.min {min}"));
    }
    if max > MAX_OBJECT_BYTES {
        return too_large(&join(&sp, "max"), format!("{max} bytes, more than the limit of {MAX_OBJECT_BYTES}"));
    }
    Ok(SizeRange { min, max })
}

fn parse_object(
    v: &Value,
    p: &str,
    node_ids: &[u32],
    sorted_ids: &[u32],
    page_size: u64,
) -> Result<ObjectEntry, PlanError> {
    let o = obj(v, p)?;
    let site = match opt_field(o, "site") {
        Some(s) => Some(bounded_text(s, &join(p, "site"))?),
        None => None,
    };
    let reason = match opt_field(o, "reason") {
        Some(s) => Some(bounded_text(s, &join(p, "reason"))?),
        None => None,
    };
    let fp = join(p, "frames");
    let fa = array(field(o, p, "frames")?, &fp)?;
    if fa.is_empty() {
        return err(&fp, "must list at least one frame (the allocation call's caller)");
    }
    if fa.len() > MAX_FRAMES_PER_OBJECT {
        return too_large(&fp, format!("{} frames, more than the limit of {MAX_FRAMES_PER_OBJECT}", fa.len()));
    }
    let mut frames = Vec::with_capacity(fa.len());
    for (j, f) in fa.iter().enumerate() {
        frames.push(parse_frame(f, &format!("{fp}[{j}]"))?);
    }
    let size = parse_size(o, p, page_size)?;
    let pp = join(p, "policy");
    let policy = match string(field(o, p, "policy")?, &pp)? {
        "bind" => ObjectPolicy::Bind,
        "interleave" => ObjectPolicy::Interleave,
        "weighted-interleave" => ObjectPolicy::WeightedInterleave,
        other => {
            return err(&pp, format!("expected \"bind\", \"interleave\" or \"weighted-interleave\", found {other:?}"))
        }
    };
    let np = join(p, "nodes");
    let nv = field(o, p, "nodes")?;
    if array(nv, &np)?.len() > node_ids.len() {
        return err(&np, format!("more nodes than target.machine.nodeIds has ({})", node_ids.len()));
    }
    let nodes = node_list(nv, &np)?;
    if nodes.is_empty() {
        return err(&np, "must list at least one node");
    }
    check_nodes_known(&nodes, node_ids, sorted_ids, &np)?;
    let wp = join(p, "weights");
    let weights = match (policy, opt_field(o, "weights")) {
        (ObjectPolicy::WeightedInterleave, Some(w)) => {
            let wa = array(w, &wp)?;
            if wa.len() != nodes.len() {
                return err(&wp, format!("{} weights for {} nodes: give one weight per node", wa.len(), nodes.len()));
            }
            let mut out = Vec::with_capacity(wa.len());
            for (k, x) in wa.iter().enumerate() {
                let n = uint(x, &format!("{wp}[{k}]"))?;
                if !(1..=255).contains(&n) {
                    return err(&format!("{wp}[{k}]"), format!("weight {n} is outside 1-255"));
                }
                out.push(n as u8);
            }
            Some(out)
        }
        (ObjectPolicy::WeightedInterleave, None) => {
            return err(&wp, "policy \"weighted-interleave\" needs one weight (1-255) per node")
        }
        (_, Some(_)) => {
            return err(&wp, format!("weights are only for \"weighted-interleave\", not {:?}", policy.name()))
        }
        (_, None) => None,
    };
    Ok(ObjectEntry { site, frames, size, policy, nodes, weights, reason })
}

/// Parses and checks `objects[]`.
pub(super) fn parse_objects(
    v: &Value,
    node_ids: &[u32],
    sorted_ids: &[u32],
    page_size: u64,
) -> Result<Vec<ObjectEntry>, PlanError> {
    let a = array(v, "objects")?;
    if a.len() > MAX_OBJECTS {
        return too_large(
            "objects",
            format!("{} object entries, more than the limit of {MAX_OBJECTS} per plan", a.len()),
        );
    }
    let mut out = Vec::with_capacity(a.len());
    let mut modules: BTreeSet<(&str, Option<&str>)> = BTreeSet::new();
    let mut stacks: HashSet<(&[ObjectFrame], u64, u64)> = HashSet::new();
    for (i, o) in a.iter().enumerate() {
        out.push(parse_object(o, &format!("objects[{i}]"), node_ids, sorted_ids, page_size)?);
    }
    for (i, o) in out.iter().enumerate() {
        modules.extend(o.modules());
        if modules.len() > MAX_PLAN_MODULES {
            return too_large(
                &format!("objects[{i}].frames"),
                format!("the object entries up to this one name more than {MAX_PLAN_MODULES} distinct modules"),
            );
        }
        if !stacks.insert((&o.frames, o.size.min, o.size.max)) {
            return err(&format!("objects[{i}]"), "the same frames and size range as an earlier entry");
        }
    }
    Ok(out)
}

/// `order` and `name` of a thread entry; `seen` holds the orders (and the names of entries
/// without an order) of earlier entries, so that two entries cannot claim the same thread.
pub(super) fn thread_identity(
    o: &Map<String, Value>,
    p: &str,
    seen: &mut HashSet<(Option<u32>, Option<String>)>,
) -> Result<(Option<u32>, Option<String>), PlanError> {
    let order = match opt_field(o, "order") {
        Some(v) => {
            let n = uint(v, &join(p, "order"))?;
            if n > MAX_THREAD_ORDER {
                return too_large(&join(p, "order"), format!("{n} is more than the limit of {MAX_THREAD_ORDER}"));
            }
            Some(n as u32)
        }
        None => None,
    };
    let name = match opt_field(o, "name") {
        Some(v) => {
            let np = join(p, "name");
            let s = string(v, &np)?;
            if s.is_empty() || s.len() > MAX_THREAD_NAME_BYTES {
                return err(
                    &np,
                    format!("a thread name (comm) is 1 to {MAX_THREAD_NAME_BYTES} bytes, found {} bytes", s.len()),
                );
            }
            if s.bytes().any(|b| b == 0 || b == b'\n') {
                return err(&np, "a thread name may not contain NUL or newline characters");
            }
            Some(s.to_string())
        }
        None => None,
    };
    // An order names one thread of the new run, so it may appear once; a name without an order
    // may name several threads (all get the pin), but only one entry may say so.
    let key = if order.is_some() { (order, None) } else { (None, name.clone()) };
    if (order.is_some() || name.is_some()) && !seen.insert(key) {
        return err(
            p,
            match order {
                Some(n) => format!("order {n} is given to an earlier thread entry too"),
                None => "the same name (without an order) as an earlier thread entry".to_string(),
            },
        );
    }
    Ok((order, name))
}
