//! Block scopes in the order the binder sweeps them, found without sorting.
//!
//! The grammar records a scope when it closes it, so a text's scopes come in
//! postorder (inner before outer, left before right). Properly nested or
//! disjoint, as scopes from one parse are, they are turned into preorder
//! (by start, the longer first where two start together: what a sort would
//! give) in one walk with a stack. Anything else (which no parse records)
//! is left to the sort.

use crate::canon::scratch;

const NONE: u32 = u32::MAX;

/// `scopes` (postorder, properly nested or disjoint, each non-empty) in
/// preorder, or `None` when they are not so.
pub fn preorder(scopes: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
    if scopes.len() >= NONE as usize {
        return None;
    }
    // Each subtree done so far as a list threaded through `next`: its root
    // (the outermost scope, first in preorder) and its last element.
    // The lists are the thread's kept ones (see `crate::canon::scratch`).
    let mut next_list: Vec<u32> = scratch::take(scopes.len());
    next_list.resize(scopes.len(), NONE);
    // Its length where the compiler sees it: no check per scope.
    let next = &mut next_list[..scopes.len()];
    // At most one entry per scope: sized once, since growing it was a
    // handful of reallocations per text.
    let mut done: Vec<(u32, u32)> = scratch::take(scopes.len());
    for (i, &(l, r)) in scopes.iter().enumerate() {
        if l >= r {
            return None;
        }
        // The subtrees inside this scope are its children: on top of the
        // stack, met right to left, so each is put before the ones after it.
        let mut head = NONE;
        let mut tail = i as u32;
        while let Some(&(root, last)) = done.last() {
            let (cl, cr) = scopes[root as usize];
            if cl < l || cr > r {
                break;
            }
            done.pop();
            if head == NONE {
                tail = last;
            } else {
                next[last as usize] = head;
            }
            head = root;
        }
        // What is left of the stack must lie wholly before this scope.
        if done
            .last()
            .is_some_and(|&(root, _)| scopes[root as usize].1 > l)
        {
            return None;
        }
        next[i] = head;
        done.push((i as u32, tail));
    }
    let mut out = scratch::take(scopes.len());
    for &(root, _) in &done {
        let mut k = root;
        while k != NONE {
            out.push(scopes[k as usize]);
            k = next[k as usize];
        }
    }
    scratch::give(next_list);
    scratch::give(done);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order a sort gives: by start, the longer first.
    fn sorted(scopes: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let mut v = scopes.to_vec();
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        v
    }

    #[test]
    fn nested_scopes_in_postorder_come_out_as_a_sort_orders_them() {
        // for (...) { for (...) { } }  twice, in a body, then a sibling body.
        let post = [
            (30, 40),
            (20, 40),
            (12, 41),
            (10, 41),
            (60, 70),
            (50, 70),
            (42, 71),
            (42, 71),
            (5, 80),
            (80, 90),
            (85, 86),
        ];
        // The last two are not in postorder (a scope inside one closed
        // before it): no preorder is claimed.
        assert_eq!(preorder(&post), None);
        let post = &post[..10];
        assert_eq!(preorder(post), Some(sorted(post)));
        // Touching siblings, and an outer scope starting with its child.
        let post = [(1, 3), (3, 5), (1, 5), (0, 9)];
        assert_eq!(preorder(&post), Some(sorted(&post)));
    }

    #[test]
    fn overlapping_or_empty_scopes_are_left_to_the_sort() {
        assert_eq!(preorder(&[(0, 5), (3, 8)]), None);
        assert_eq!(preorder(&[(3, 8), (0, 5)]), None);
        assert_eq!(preorder(&[(2, 2)]), None);
        assert_eq!(preorder(&[]), Some(vec![]));
    }
}
