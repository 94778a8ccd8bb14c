//! Address ranges where a later range replaces the parts of earlier ones it overlaps (mappings
//! seen over time: the newest wins): the regions of the trace build and the executable mappings
//! of the code locations.

use std::collections::BTreeMap;

pub(super) struct NewestWins {
    /// start -> (end, index of the range as given)
    map: BTreeMap<u64, (u64, usize)>,
}

impl NewestWins {
    /// Ranges `[start, end)` with their indices, oldest first.
    pub(super) fn new(ranges: impl IntoIterator<Item = (u64, u64, usize)>) -> Self {
        let mut map: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        for (s, e, i) in ranges {
            // Cut older entries that overlap [s, e).
            let overlapping: Vec<(u64, (u64, usize))> =
                map.range(..e).filter(|(&ks, &(ke, _))| ks < e && ke > s).map(|(&k, &v)| (k, v)).collect();
            for (ks, (ke, idx)) in overlapping {
                map.remove(&ks);
                if ks < s {
                    map.insert(ks, (s, idx));
                }
                if ke > e {
                    map.insert(e, (ke, idx));
                }
            }
            map.insert(s, (e, i));
        }
        NewestWins { map }
    }

    /// The index of the range holding `addr`.
    pub(super) fn find(&self, addr: u64) -> Option<usize> {
        let (_, &(end, idx)) = self.map.range(..=addr).next_back()?;
        (addr < end).then_some(idx)
    }
}
