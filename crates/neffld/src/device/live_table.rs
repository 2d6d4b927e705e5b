//! The live allocations of a device by handle. The table hands out the
//! handles, which only grow and are never reused, so it is a vector in
//! handle order: an allocation is appended (no search, no node to
//! allocate), a free is a binary search that leaves a hole, and the holes
//! are squeezed out once they are half the rows. A planner of ten thousand
//! loads appends half a million allocations; an ordered map spent a tenth
//! of a planned load finding where each goes. A row may hold a run of
//! consecutive handles (a batch: made together, freed together).

use super::MemHandle;

#[derive(Debug)]
pub(super) struct LiveTable<V> {
    /// First handle, handles held, value (`None`: a hole).
    rows: Vec<(MemHandle, u32, Option<V>)>,
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

    /// Enters `value` under `span` new consecutive handles (at least
    /// one), returning the first.
    pub fn push(&mut self, value: V, span: u32) -> MemHandle {
        let handle = self.next_handle();
        let span = span.max(1);
        self.next += u64::from(span);
        self.rows.push((handle, span, Some(value)));
        handle
    }

    /// The row holding `handle`.
    fn position(&self, handle: MemHandle) -> Option<usize> {
        let at = self.rows.partition_point(|&(h, _, _)| h <= handle).checked_sub(1)?;
        let (first, span, _) = self.rows[at];
        (handle.0 - first.0 < u64::from(span)).then_some(at)
    }

    /// The live row holding `handle`: its first handle and its value.
    pub fn get(&self, handle: MemHandle) -> Option<(MemHandle, &V)> {
        let (first, _, value) = &self.rows[self.position(handle)?];
        Some((*first, value.as_ref()?))
    }

    /// Takes out the row whose first handle is `first`, if its value is
    /// one `wanted` takes.
    pub fn take(&mut self, first: MemHandle, wanted: impl FnOnce(&V) -> bool) -> Option<V> {
        let at = self.position(first).filter(|&i| self.rows[i].0 == first)?;
        let slot = &mut self.rows[at].2;
        let value = slot.take_if(|v| wanted(v))?;
        self.holes += 1;
        if self.holes > 32 && self.holes * 2 > self.rows.len() {
            self.rows.retain(|(_, _, v)| v.is_some());
            self.holes = 0;
        }
        Some(value)
    }

    /// Live rows in handle order, each with its first handle.
    pub fn iter(&self) -> impl Iterator<Item = (MemHandle, &V)> {
        self.rows
            .iter()
            .filter_map(|(h, _, v)| v.as_ref().map(|v| (*h, v)))
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
                let h = table.push(next * 10, 1);
                assert_eq!(h, MemHandle(next));
                map.insert(h, next * 10);
            } else {
                let h = MemHandle((seed >> 20) % next.max(1));
                assert_eq!(table.take(h, |_| true), map.remove(&h));
                assert_eq!(table.take(h, |_| true), None);
            }
            let probe = MemHandle((seed >> 40) % (table.next_handle().0 + 2));
            assert_eq!(table.get(probe).map(|(_, v)| v), map.get(&probe));
        }
        assert!(table.iter().map(|(h, &v)| (h, v)).eq(map.clone().into_iter()));
        assert!(table.rows.len() <= 2 * map.len() + 33, "holes are squeezed out");
    }

    #[test]
    fn a_run_of_handles_is_one_row_taken_out_by_its_first() {
        let mut table = LiveTable::default();
        let one = table.push("one", 1);
        let run = table.push("run", 3);
        let after = table.push("after", 1);
        assert_eq!((one.0, run.0, after.0), (1, 2, 5));
        for h in 2..5 {
            assert_eq!(table.get(MemHandle(h)), Some((run, &"run")));
        }
        assert_eq!(table.take(MemHandle(3), |_| true), None, "only by its first handle");
        assert_eq!(table.take(run, |&v| v == "one"), None, "only what is wanted");
        assert_eq!(table.take(run, |_| true), Some("run"));
        assert_eq!(table.get(MemHandle(3)), None);
        assert_eq!(table.get(after), Some((after, &"after")));
        assert_eq!(table.get(MemHandle(0)), None);
        assert_eq!(table.get(MemHandle(6)), None);
    }
}
