//! The live allocations of a device by handle. The table hands out the
//! handles, which only grow and are never reused, so it is a vector in
//! handle order: an allocation is
//! appended (no search, no node to allocate), a free is a binary search
//! that leaves a hole, and the holes are squeezed out once they are half
//! the rows. A planner of ten thousand loads appends half a million rows;
//! an ordered map spent a tenth of a planned load finding where each goes.

use super::MemHandle;

#[derive(Debug)]
pub(super) struct LiveTable<V> {
    rows: Vec<(MemHandle, Option<V>)>,
    holes: usize,
    next: u64,
}

impl<V> Default for LiveTable<V> {
    fn default() -> Self {
        LiveTable {
            rows: Vec::new(),
            holes: 0,
            next: 1,
        }
    }
}

impl<V> LiveTable<V> {
    /// The handle the next [`LiveTable::push`] will give.
    pub fn next_handle(&self) -> MemHandle {
        MemHandle(self.next)
    }

    /// Enters `value` under a new handle.
    pub fn push(&mut self, value: V) -> MemHandle {
        let handle = self.next_handle();
        self.next += 1;
        self.rows.push((handle, Some(value)));
        handle
    }

    fn position(&self, handle: MemHandle) -> Option<usize> {
        self.rows.binary_search_by_key(&handle, |&(h, _)| h).ok()
    }

    pub fn get(&self, handle: MemHandle) -> Option<&V> {
        self.position(handle).and_then(|i| self.rows[i].1.as_ref())
    }

    pub fn remove(&mut self, handle: MemHandle) -> Option<V> {
        let at = self.position(handle)?;
        let value = self.rows[at].1.take()?;
        self.holes += 1;
        if self.holes > 32 && self.holes * 2 > self.rows.len() {
            self.rows.retain(|(_, v)| v.is_some());
            self.holes = 0;
        }
        Some(value)
    }

    /// In handle order.
    pub fn iter(&self) -> impl Iterator<Item = (MemHandle, &V)> {
        self.rows
            .iter()
            .filter_map(|(h, v)| v.as_ref().map(|v| (*h, v)))
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn len(&self) -> usize {
        self.rows.len() - self.holes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_table_answers_as_an_ordered_map() {
        let mut table = LiveTable::default();
        let mut map = BTreeMap::new();
        let mut seed = 7u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pick = (seed >> 33) % 5;
            let next = table.next_handle().0;
            if pick < 3 {
                let h = table.push(next * 10);
                assert_eq!(h, MemHandle(next));
                map.insert(h, next * 10);
            } else {
                let h = MemHandle((seed >> 20) % next.max(1));
                assert_eq!(table.remove(h), map.remove(&h));
                assert_eq!(table.remove(h), None);
            }
            let probe = MemHandle((seed >> 40) % (table.next_handle().0 + 2));
            assert_eq!(table.get(probe), map.get(&probe));
        }
        assert_eq!(table.len(), map.len());
        assert!(table.iter().map(|(h, &v)| (h, v)).eq(map.into_iter()));
        assert!(table.rows.len() <= 2 * table.len() + 33, "holes are squeezed out");
    }
}
