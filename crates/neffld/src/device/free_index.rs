//! The free ranges of one pool, ordered by address and indexed by length:
//! a treap (a binary search tree on the start address, heap-ordered on a
//! pseudo-random priority, so its depth stays logarithmic in expectation)
//! whose every node also knows the longest range below it. First-fit then
//! descends only into subtrees that hold a long enough range, so finding
//! the lowest range that can take a request costs O(log n) in the number of
//! free ranges instead of a walk over every range below it; so does the
//! highest (top-down placement), a neighbour lookup, an insertion and a
//! removal.
//!
//! A length alone does not decide an aligned request: a range as long as
//! the request may still hold no aligned block of it (the gaps that aligned
//! blocks leave below themselves are such ranges, and a deployment of many
//! loads leaves many). So each node keeps, per alignment class (4 KiB,
//! 8 KiB, ... 4 MiB), the most bytes any range below it offers from its
//! first address of that alignment on (in 4 KiB units, rounded up): a
//! subtree is entered only when one of its ranges can hold the block.
//! Alignments above the last class are pruned by the last class's figure,
//! which can only overstate.
//!
//! Nodes live in one vector (indices, not pointers); removed ones are
//! reused. The highest range is kept outside the tree ([`RangeIndex`]).

const NIL: u32 = u32::MAX;

/// Alignment classes: `FIRST_ALIGN << k` for `k` below this.
const CLASSES: usize = 11;
const FIRST_ALIGN: u64 = 4096;

/// Bytes of `[start, start + len)` from its first multiple of `align` on.
fn room(start: u64, len: u64, align: u64) -> u64 {
    let aligned = start
        .checked_add(align - 1)
        .map(|a| a & !(align - 1))
        .unwrap_or(u64::MAX);
    (start.saturating_add(len)).saturating_sub(aligned)
}

/// The class whose figure bounds a request aligned to `align` (a power of
/// two): the largest class alignment not above it.
fn class_of(align: u64) -> usize {
    let k = (align.max(FIRST_ALIGN) / FIRST_ALIGN).ilog2() as usize;
    k.min(CLASSES - 1)
}

#[derive(Clone, Debug)]
struct Node {
    start: u64,
    len: u64,
    /// [`room`] of this range alone, per alignment class, in [`units`].
    own: [u32; CLASSES],
    /// Per alignment class, the most [`room`] any range of this node's
    /// subtree offers, in 4 KiB units rounded up (class 0, 4 KiB, is the
    /// longest range). Rounded up, a figure can only overstate, so a
    /// subtree is never wrongly skipped; the unit keeps a node at 120
    /// bytes (two cache lines, where bytes would take four), which the
    /// tree's descents pay for at every level.
    max: [u32; CLASSES],
    prio: u32,
    left: u32,
    right: u32,
}

/// A request as the tree's search sees it.
struct Wanted {
    size: u64,
    align: u64,
    /// [`class_of`] the alignment.
    class: usize,
    /// [`units`] of the size, what a node's figures are compared with.
    units: u32,
}

/// `bytes` in 4 KiB units, rounded up (saturating).
fn units(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(FIRST_ALIGN)).unwrap_or(u32::MAX)
}

/// [`room`] of one range in every class, in [`units`].
fn own_room(start: u64, len: u64) -> [u32; CLASSES] {
    std::array::from_fn(|k| units(room(start, len, FIRST_ALIGN << k)))
}

/// Disjoint `(start, len)` ranges, keyed by start: the highest apart (a
/// pool's untouched top, where most requests of a growing deployment are
/// carved: each carve is then two stores, not a descent that recomputes
/// every figure up to the root), the others in a [`Treap`].
#[derive(Clone, Debug, Default)]
pub(super) struct RangeIndex {
    tree: Treap,
    /// The highest range; every range of `tree` starts below it.
    top: Option<(u64, u64)>,
}

impl RangeIndex {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tree.count + usize::from(self.top.is_some())
    }

    /// Adds a range; its start must not be present.
    pub fn insert(&mut self, start: u64, len: u64) {
        match self.top {
            Some((top, _)) if start < top => self.tree.insert(start, len),
            _ => {
                if let Some((s, l)) = self.top.replace((start, len)) {
                    self.tree.insert(s, l);
                }
            }
        }
    }

    /// Removes the range starting at `start`; its length, if present.
    pub fn remove(&mut self, start: u64) -> Option<u64> {
        match self.top {
            Some((top, len)) if top == start => {
                self.top = self.tree.highest_range().and_then(|(s, _)| {
                    let l = self.tree.remove(s)?;
                    Some((s, l))
                });
                Some(len)
            }
            _ => self.tree.remove(start),
        }
    }

    /// Gives the range starting at `old` a new start and length in place.
    /// The new start must keep the order (no other range between `old`
    /// and `start`), which holds when a range shrinks or grows into free
    /// space next to it. `false` when no range starts at `old`.
    pub fn reshape(&mut self, old: u64, start: u64, len: u64) -> bool {
        match &mut self.top {
            Some(top) if top.0 == old => {
                *top = (start, len);
                true
            }
            _ => self.tree.reshape(old, start, len),
        }
    }

    /// The range with the largest start at or below `at`.
    pub fn at_or_before(&self, at: u64) -> Option<(u64, u64)> {
        match self.top {
            Some(top) if top.0 <= at => Some(top),
            _ => self.tree.at_or_before(at),
        }
    }

    /// The range with the smallest start above `at`.
    pub fn after(&self, at: u64) -> Option<(u64, u64)> {
        self.tree
            .after(at)
            .or(self.top.filter(|&(s, _)| s > at))
    }

    /// The lowest range that holds `size` bytes at a multiple of `align`
    /// (a power of two) for which `accept` holds; only ranges that can hold
    /// such a block are offered to `accept`.
    pub fn lowest(
        &self,
        size: u64,
        align: u64,
        accept: &mut impl FnMut(u64, u64) -> bool,
    ) -> Option<(u64, u64)> {
        self.tree
            .first(size, align, false, accept)
            .or_else(|| self.top_holds(size, align, accept))
    }

    /// The highest range that holds `size` bytes at a multiple of `align`
    /// for which `accept` holds.
    pub fn highest(
        &self,
        size: u64,
        align: u64,
        accept: &mut impl FnMut(u64, u64) -> bool,
    ) -> Option<(u64, u64)> {
        self.top_holds(size, align, accept)
            .or_else(|| self.tree.first(size, align, true, accept))
    }

    /// The top range, if it holds the block and `accept` takes it.
    fn top_holds(
        &self,
        size: u64,
        align: u64,
        accept: &mut impl FnMut(u64, u64) -> bool,
    ) -> Option<(u64, u64)> {
        self.top
            .filter(|&(s, l)| room(s, l, align) >= size && accept(s, l))
    }

    /// The longest range's length (0 when nothing is free).
    pub fn longest(&self) -> u64 {
        let top = self.top.map_or(0, |(s, l)| room(s, l, FIRST_ALIGN));
        top.max(self.tree.longest())
    }

    /// Every range in address order.
    #[cfg(test)]
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        let mut out = self.tree.ranges();
        out.extend(self.top);
        out
    }
}

/// The ranges below the highest, as a treap.
#[derive(Clone, Debug)]
struct Treap {
    nodes: Vec<Node>,
    spare: Vec<u32>,
    root: u32,
    count: usize,
    seed: u32,
}

impl Default for Treap {
    fn default() -> Self {
        Treap {
            nodes: Vec::new(),
            spare: Vec::new(),
            root: NIL,
            count: 0,
            seed: 0x9e37_79b9,
        }
    }
}

impl Treap {
    fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn max_of(&self, i: u32) -> [u32; CLASSES] {
        if i == NIL {
            [0; CLASSES]
        } else {
            self.node(i).max
        }
    }

    /// Recomputes node `i`'s figures from its own range and its children;
    /// whether they changed (when they did not, no ancestor's can have).
    fn update(&mut self, i: u32) -> bool {
        let n = self.node(i);
        let (l, r) = (self.max_of(n.left), self.max_of(n.right));
        let mut m = n.own;
        let mut changed = false;
        for k in 0..CLASSES {
            m[k] = m[k].max(l[k]).max(r[k]);
            changed |= m[k] != n.max[k];
        }
        self.nodes[i as usize].max = m;
        changed
    }

    /// xorshift32: deterministic, so two runs of a plan build the same tree.
    fn next_prio(&mut self) -> u32 {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.seed = x;
        x
    }

    /// Splits `t` into the keys below `key` and those at or above it.
    fn split(&mut self, t: u32, key: u64) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.node(t).start < key {
            let (l, r) = self.split(self.node(t).right, key);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.node(t).left, key);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    /// Joins two trees, every key of `a` below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.node(a).prio > self.node(b).prio {
            let r = self.merge(self.node(a).right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.node(b).left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    /// Adds a range; its start must not be present.
    pub fn insert(&mut self, start: u64, len: u64) {
        let prio = self.next_prio();
        let own = own_room(start, len);
        let node = Node {
            start,
            len,
            own,
            max: own,
            prio,
            left: NIL,
            right: NIL,
        };
        let i = match self.spare.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.root = self.insert_in(self.root, i);
        self.count += 1;
    }

    /// Puts node `i` into subtree `t`: down to where its priority ranks
    /// it (the figures above only grow by its own), where the subtree is
    /// split around it.
    fn insert_in(&mut self, t: u32, i: u32) -> u32 {
        if t == NIL {
            return i;
        }
        let (start, prio, own) = {
            let n = self.node(i);
            (n.start, n.prio, n.own)
        };
        if prio > self.node(t).prio {
            let (l, r) = self.split(t, start);
            let n = &mut self.nodes[i as usize];
            n.left = l;
            n.right = r;
            self.update(i);
            return i;
        }
        let n = &mut self.nodes[t as usize];
        for (m, o) in n.max.iter_mut().zip(own) {
            *m = (*m).max(o);
        }
        if start < n.start {
            let l = self.insert_in(self.node(t).left, i);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.insert_in(self.node(t).right, i);
            self.nodes[t as usize].right = r;
        }
        t
    }

    /// Removes the range starting at `start`; its length, if present.
    pub fn remove(&mut self, start: u64) -> Option<u64> {
        let (root, found, _) = self.remove_in(self.root, start);
        self.root = root;
        found
    }

    /// The subtree `t` without the range at `start`, the range's length,
    /// and whether the subtree's figures changed.
    fn remove_in(&mut self, t: u32, start: u64) -> (u32, Option<u64>, bool) {
        if t == NIL {
            return (NIL, None, false);
        }
        let n = self.node(t);
        let (n_start, n_len, n_left, n_right, before) = (n.start, n.len, n.left, n.right, n.max);
        if n_start == start {
            self.spare.push(t);
            self.count -= 1;
            let merged = self.merge(n_left, n_right);
            let after = self.max_of(merged);
            let changed = (0..CLASSES).any(|k| after[k] != before[k]);
            return (merged, Some(n_len), changed);
        }
        let (found, changed) = if start < n_start {
            let (l, f, c) = self.remove_in(n_left, start);
            self.nodes[t as usize].left = l;
            (f, c)
        } else {
            let (r, f, c) = self.remove_in(n_right, start);
            self.nodes[t as usize].right = r;
            (f, c)
        };
        (t, found, changed && self.update(t))
    }

    /// Gives the range starting at `old` a new start and length in place:
    /// one descent instead of a removal and an insertion. The new start
    /// must keep the order (no other range between `old` and `start`),
    /// which holds when a range shrinks or grows into free space next to
    /// it. `false` when no range starts at `old`.
    pub fn reshape(&mut self, old: u64, start: u64, len: u64) -> bool {
        self.reshape_in(self.root, old, start, len).is_some()
    }

    /// `None` when subtree `t` has no range at `old`, else whether its
    /// figures changed (an ancestor is recomputed only then).
    fn reshape_in(&mut self, t: u32, old: u64, start: u64, len: u64) -> Option<bool> {
        if t == NIL {
            return None;
        }
        let n = self.node(t);
        let changed = if old == n.start {
            let node = &mut self.nodes[t as usize];
            node.start = start;
            node.len = len;
            node.own = own_room(start, len);
            true
        } else if old < n.start {
            self.reshape_in(n.left, old, start, len)?
        } else {
            self.reshape_in(n.right, old, start, len)?
        };
        Some(changed && self.update(t))
    }

    /// The range with the largest start at or below `at`.
    pub fn at_or_before(&self, at: u64) -> Option<(u64, u64)> {
        let mut t = self.root;
        let mut best = None;
        while t != NIL {
            let n = self.node(t);
            if n.start <= at {
                best = Some((n.start, n.len));
                t = n.right;
            } else {
                t = n.left;
            }
        }
        best
    }

    /// The range with the smallest start above `at`.
    pub fn after(&self, at: u64) -> Option<(u64, u64)> {
        let mut t = self.root;
        let mut best = None;
        while t != NIL {
            let n = self.node(t);
            if n.start > at {
                best = Some((n.start, n.len));
                t = n.left;
            } else {
                t = n.right;
            }
        }
        best
    }

    /// [`RangeIndex::lowest`] (or, `from_top`, [`RangeIndex::highest`])
    /// among the tree's ranges.
    fn first(
        &self,
        size: u64,
        align: u64,
        from_top: bool,
        accept: &mut impl FnMut(u64, u64) -> bool,
    ) -> Option<(u64, u64)> {
        let block = Wanted {
            size,
            align,
            class: class_of(align),
            units: units(size),
        };
        self.first_in(self.root, &block, from_top, accept)
    }

    /// The first range of subtree `t`, in address order or (`from_top`)
    /// its reverse, that holds the block and that `accept` takes; subtrees
    /// whose largest aligned room is too small are not entered.
    fn first_in(
        &self,
        t: u32,
        block: &Wanted,
        from_top: bool,
        accept: &mut impl FnMut(u64, u64) -> bool,
    ) -> Option<(u64, u64)> {
        if t == NIL || self.node(t).max[block.class] < block.units {
            return None;
        }
        let n = self.node(t);
        let (near, far) = if from_top {
            (n.right, n.left)
        } else {
            (n.left, n.right)
        };
        if let Some(hit) = self.first_in(near, block, from_top, accept) {
            return Some(hit);
        }
        if room(n.start, n.len, block.align) >= block.size && accept(n.start, n.len) {
            return Some((n.start, n.len));
        }
        self.first_in(far, block, from_top, accept)
    }

    /// The range with the largest start.
    fn highest_range(&self) -> Option<(u64, u64)> {
        self.at_or_before(u64::MAX)
    }

    /// The longest range's length (0 when nothing is free): found under
    /// the nodes whose rounded figure is the root's, the only ones that
    /// can hold it.
    pub fn longest(&self) -> u64 {
        let top = self.max_of(self.root)[0];
        let mut best = 0;
        let mut stack = vec![self.root];
        while let Some(t) = stack.pop() {
            if t == NIL || self.node(t).max[0] < top {
                continue;
            }
            let n = self.node(t);
            best = best.max(room(n.start, n.len, FIRST_ALIGN));
            stack.extend([n.left, n.right]);
        }
        best
    }

    /// Every range in address order.
    #[cfg(test)]
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.count);
        let mut stack = Vec::new();
        let mut t = self.root;
        while t != NIL || !stack.is_empty() {
            while t != NIL {
                stack.push(t);
                t = self.node(t).left;
            }
            let Some(top) = stack.pop() else { break };
            let n = self.node(top);
            out.push((n.start, n.len));
            t = n.right;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every query against a plain ordered map under a long random mix of
    /// insertions and removals: the index answers what a walk would.
    #[test]
    fn the_index_answers_as_a_walk_over_an_ordered_map() {
        let mut idx = RangeIndex::default();
        let mut map: BTreeMap<u64, u64> = BTreeMap::new();
        let mut x: u64 = 12345;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..20_000 {
            let start = rnd(4000) * 16 * FIRST_ALIGN;
            if rnd(5) == 0 {
                // Shrink a range from either end, in place.
                if let Some((&s, &l)) = map.range(start..).next() {
                    let (ns, nl) = if rnd(2) == 0 {
                        (s, l.saturating_sub(FIRST_ALIGN))
                    } else {
                        (s + FIRST_ALIGN, l.saturating_sub(FIRST_ALIGN))
                    };
                    // The order holds: no other start between the old and
                    // the new one (the allocator's ranges are disjoint).
                    if nl > 0 && (ns == s || map.range(s + 1..=ns).next().is_none()) {
                        assert!(idx.reshape(s, ns, nl));
                        map.remove(&s);
                        map.insert(ns, nl);
                    }
                }
            } else if rnd(3) == 0 {
                if let Some(&s) = map.range(start..).next().map(|(s, _)| s) {
                    assert_eq!(idx.remove(s), map.remove(&s));
                } else {
                    assert_eq!(idx.remove(start), None);
                }
            } else if let std::collections::btree_map::Entry::Vacant(e) = map.entry(start) {
                let len = (1 + rnd(200)) * FIRST_ALIGN;
                idx.insert(start, len);
                e.insert(len);
            }
            let probe = rnd(70_000 * FIRST_ALIGN);
            let min = 1 + rnd(220);
            assert_eq!(
                idx.at_or_before(probe),
                map.range(..=probe).next_back().map(|(&s, &l)| (s, l))
            );
            assert_eq!(
                idx.after(probe),
                map.range(probe + 1..).next().map(|(&s, &l)| (s, l))
            );
            // Sizes and alignments in 4 KiB units, some alignments past
            // the last class.
            let align = FIRST_ALIGN << rnd(14);
            let size = min * FIRST_ALIGN;
            let fits = |s: u64, l: u64| {
                let at = s.div_ceil(align) * align;
                at + size <= s + l
            };
            let odd = |s: u64| s % (32 * FIRST_ALIGN) == 16 * FIRST_ALIGN;
            assert_eq!(
                idx.lowest(size, align, &mut |s, _| odd(s)),
                map.iter()
                    .find(|(&s, &l)| fits(s, l) && odd(s))
                    .map(|(&s, &l)| (s, l))
            );
            assert_eq!(
                idx.highest(size, align, &mut |_, _| true),
                map.iter()
                    .rev()
                    .find(|(&s, &l)| fits(s, l))
                    .map(|(&s, &l)| (s, l))
            );
            assert_eq!(idx.len(), map.len());
            assert_eq!(idx.longest(), map.values().copied().max().unwrap_or(0));
        }
        assert_eq!(idx.ranges(), map.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn the_largest_key_can_be_removed() {
        let mut idx = RangeIndex::default();
        idx.insert(u64::MAX, 1);
        idx.insert(5, 1);
        assert_eq!(idx.remove(u64::MAX), Some(1));
        assert_eq!(idx.ranges(), [(5, 1)]);
    }
}
