//! Placement of whole mappings from `/proc/PID/numa_maps`, for `move` ranges that cover them.
//!
//! A `move_pages` query looks every page up on its own (the mm lock, the VMA and a page-table
//! walk per entry, in chunks of 16), while numa_maps walks each mapping's page tables once. When
//! a `move` range covers whole anonymous mappings of base pages, their numa_maps counts are the
//! exact pages per node of the range, so:
//!
//! * before the move: a mapping whose pages are *all* present and on one node X (`N<X>=` equal
//!   to its page count, no other node) needs no query: every page's node is X, which the move
//!   pass uses as the query's answer (the rollback record keeps X for each moved page);
//! * after the moves: the verification counts of such a range are the sum of its mappings'
//!   `N<node>=` counts (what a query of every page would count: both leave out pages not present
//!   and the shared zero page).
//!
//! Anything else (file mappings, huge-page mappings, a range covering part of a mapping, a
//! mapping with pages missing or on several nodes, numa_maps and maps disagreeing because the
//! process changed its mappings between the two reads) falls back to the per-page query. Reading
//! numa_maps walks every mapping of the process, so it is used only when the ranges it can serve
//! hold at least half of the process's resident pages.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;

use super::pages::Group;
use crate::procfs;

/// One mapping with its numa_maps counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    /// Pages per node (numa_maps `N<node>=`), in base pages.
    pub nodes: Vec<(u32, u64)>,
    /// Anonymous memory of base pages (no `file=`, no hugetlb, kernel page size = page size).
    pub plain: bool,
}

/// Joins numa_maps and maps (read in that order): `None` unless both list the same mappings (same
/// number, same starts, in order), i.e. the process did not change its mappings in between. The
/// `[vsyscall]` page, which maps lists and numa_maps does not (it is no mapping of the process),
/// is left out.
pub fn join(numa_maps: &str, maps: &str, page: u64) -> Option<Vec<Vma>> {
    let nm = procfs::parse_numa_maps(numa_maps);
    let mp: Vec<(u64, u64)> = maps
        .lines()
        .filter(|l| !l.trim_end().ends_with("[vsyscall]"))
        .filter_map(super::pages::parse_maps_range)
        .collect();
    if nm.len() != mp.len() || nm.iter().zip(&mp).any(|(n, m)| n.start != m.0) {
        return None;
    }
    Some(
        nm.into_iter()
            .zip(mp)
            .map(|(n, (start, end))| Vma {
                start,
                end,
                plain: n.file.is_none() && !n.huge && n.page_size_bytes() == page,
                nodes: n.nodes,
            })
            .collect(),
    )
}

/// Most bytes of numa_maps or maps read (some 100,000 mappings); a process with more is queried.
const MAX_TEXT: u64 = 16 << 20;

fn read_bounded(path: &Path) -> Option<String> {
    let mut text = String::new();
    fs::File::open(path).ok()?.take(MAX_TEXT + 1).read_to_string(&mut text).ok()?;
    (text.len() as u64 <= MAX_TEXT).then_some(text)
}

/// The mappings of process `pid` with their counts, or `None` (unreadable, too large, or changing).
pub fn read(pid: i32, proc_root: &Path, page: u64) -> Option<Vec<Vma>> {
    let dir = proc_root.join(pid.to_string());
    let nm = read_bounded(&dir.join("numa_maps"))?;
    let mp = read_bounded(&dir.join("maps"))?;
    join(&nm, &mp, page)
}

/// Resident pages of process `pid` (`/proc/PID/statm`, second field).
pub fn resident_pages(pid: i32, proc_root: &Path) -> Option<u64> {
    let s = fs::read_to_string(proc_root.join(pid.to_string()).join("statm")).ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

/// Whether reading numa_maps (a walk of every mapping) is worth it: the pages it can serve
/// (`covered`) are at least half of the process's `resident` pages.
pub fn worth_reading(covered: u64, resident: u64) -> bool {
    covered > 0 && resident <= covered.saturating_mul(2)
}

/// Whether every segment of `g` is exactly one plain mapping of `vmas` (sorted by start).
fn whole_vmas<'a>(g: &Group, vmas: &'a [Vma], page: u64) -> Option<Vec<&'a Vma>> {
    if g.action != "move" || g.segs.is_empty() {
        return None;
    }
    g.segs
        .iter()
        .map(|s| {
            let i = vmas.partition_point(|v| v.start < s.start);
            let v = vmas.get(i)?;
            (v.start == s.start && v.end == s.start + s.pages * page && v.plain).then_some(v)
        })
        .collect()
}

/// The node every page of `g` is on, when `g` covers whole plain mappings whose pages are all
/// present and on that one node; `None` otherwise (the move pass then queries).
pub fn single_node(g: &Group, vmas: &[Vma], page: u64) -> Option<u32> {
    let vs = whole_vmas(g, vmas, page)?;
    let mut node = None;
    for v in vs {
        let [(n, count)] = v.nodes[..] else { return None };
        if count != (v.end - v.start) / page || node.is_some_and(|m| m != n) {
            return None;
        }
        node = Some(n);
    }
    node
}

/// Pages per node of `g` and how many are on its target, when `g` covers whole plain mappings
/// (the verification without a query); `None` otherwise.
pub fn counts(g: &Group, vmas: &[Vma], page: u64) -> Option<(BTreeMap<u32, u64>, u64)> {
    let vs = whole_vmas(g, vmas, page)?;
    let target = *g.to_nodes.first()?;
    let mut hist = BTreeMap::new();
    for v in vs {
        for &(n, c) in &v.nodes {
            *hist.entry(n).or_default() += c;
        }
    }
    let on = hist.get(&target).copied().unwrap_or(0);
    Some((hist, on))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 4096;
    const MAPS: &str = "\
00400000-00401000 r-xp 00000000 08:01 42 /bin/prog
7f0000000000-7f0000010000 rw-p 00000000 00:00 0
7f0000020000-7f0000030000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";
    const NUMA_MAPS: &str = "\
00400000 default file=/bin/prog mapped=1 N0=1 kernelpagesize_kB=4
7f0000000000 default anon=16 dirty=16 N0=16 kernelpagesize_kB=4
7f0000020000 default anon=16 dirty=16 N1=10 N2=6 kernelpagesize_kB=4
7ffc00000000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4
";

    fn group(start: u64, pages: u64) -> Group {
        let mut g = Group::new(start, start + pages * P, "move", vec![1]);
        g.push(start, pages, Some(1));
        g
    }

    #[test]
    fn joins_numa_maps_with_maps() {
        let v = join(NUMA_MAPS, MAPS, P).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!((v[1].start, v[1].end, v[1].plain), (0x7f0000000000, 0x7f0000010000, true));
        assert!(!v[0].plain, "a file mapping is not served");
        // the process changed its mappings between the two reads: not used
        let moved = MAPS.replace("7f0000020000-", "7f0000021000-");
        assert!(join(NUMA_MAPS, &moved, P).is_none());
        assert!(join(NUMA_MAPS, &MAPS.lines().take(3).collect::<Vec<_>>().join("\n"), P).is_none());
        // huge pages are counted in their own size: not served
        let huge = NUMA_MAPS.replace("N0=16 kernelpagesize_kB=4", "huge N0=16 kernelpagesize_kB=2048");
        assert!(!join(&huge, MAPS, P).unwrap()[1].plain);
    }

    #[test]
    fn single_node_needs_whole_dense_mappings_on_one_node() {
        let v = join(NUMA_MAPS, MAPS, P).unwrap();
        assert_eq!(single_node(&group(0x7f0000000000, 16), &v, P), Some(0));
        // part of the mapping: its counts are not the range's
        assert_eq!(single_node(&group(0x7f0000000000, 15), &v, P), None);
        // several nodes
        assert_eq!(single_node(&group(0x7f0000020000, 16), &v, P), None);
        // a page not present
        let sparse = NUMA_MAPS.replace("anon=16 dirty=16 N0=16", "anon=15 dirty=15 N0=15");
        assert_eq!(single_node(&group(0x7f0000000000, 16), &join(&sparse, MAPS, P).unwrap(), P), None);
        // two mappings on different nodes in one range
        let mut g = Group::new(0x7f0000000000, 0x7f0000030000, "move", vec![1]);
        g.push(0x7f0000000000, 16, Some(1));
        g.push(0x7f0000020000, 16, Some(1));
        assert_eq!(single_node(&g, &v, P), None);
        // an interleave is never served
        let mut il = Group::new(0x7f0000000000, 0x7f0000010000, "interleave", vec![0, 1]);
        il.push(0x7f0000000000, 16, None);
        assert_eq!(single_node(&il, &v, P), None);
        assert_eq!(counts(&il, &v, P), None);
    }

    #[test]
    fn counts_sum_the_mappings_and_count_the_target() {
        let v = join(NUMA_MAPS, MAPS, P).unwrap();
        let mut g = Group::new(0x7f0000000000, 0x7f0000030000, "move", vec![1]);
        g.push(0x7f0000000000, 16, Some(1));
        g.push(0x7f0000020000, 16, Some(1));
        let (hist, on) = counts(&g, &v, P).unwrap();
        assert_eq!(hist, BTreeMap::from([(0, 16), (1, 10), (2, 6)]));
        assert_eq!(on, 10);
        assert_eq!(counts(&group(0x7f0000000000, 15), &v, P), None);
    }

    #[test]
    fn the_reading_rule() {
        assert!(worth_reading(16, 32));
        assert!(!worth_reading(16, 33));
        assert!(!worth_reading(0, 0));
    }
}
