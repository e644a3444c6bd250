//! Split plans: how many programs a group of kernels compiles as, and which
//! kernels go into each.

/// A split configuration: a batch's kernels of one option list compile as up
/// to `max_programs` programs of at least `min_kernels` kernels each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Split {
    /// The most programs one option list's kernels compile as.
    pub max_programs: usize,
    /// The fewest kernels worth a program of their own.
    pub min_kernels: usize,
}

impl Split {
    /// Up to `max_programs` programs of at least one kernel each.
    pub fn new(max_programs: usize) -> Self {
        Split {
            max_programs,
            min_kernels: 1,
        }
    }
}

/// How many programs `n` kernels of one option list compile as:
/// `min(max_programs, n / min_kernels)`, at least 1, at most `n`.
pub fn programs_for(split: Split, n: usize) -> usize {
    let by_size = n.checked_div(split.min_kernels).unwrap_or(n);
    split.max_programs.min(by_size).max(1).min(n)
}

/// `idxs` cut into `k` contiguous runs balanced by count (run `t` is
/// `idxs[t * n / k .. (t + 1) * n / k]`), empty runs dropped.
pub fn chunks<T: Clone>(k: usize, idxs: &[T]) -> Vec<Vec<T>> {
    let n = idxs.len();
    let k = k.max(1);
    (0..k)
        .map(|t| idxs[t * n / k..(t + 1) * n / k].to_vec())
        .filter(|run| !run.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_for_is_bounded() {
        let s = Split {
            max_programs: 4,
            min_kernels: 8,
        };
        assert_eq!(programs_for(s, 0), 0);
        assert_eq!(programs_for(s, 1), 1);
        assert_eq!(programs_for(s, 15), 1);
        assert_eq!(programs_for(s, 16), 2);
        assert_eq!(programs_for(s, 1000), 4);
        assert_eq!(programs_for(Split::new(8), 3), 3);
        assert_eq!(
            programs_for(
                Split {
                    max_programs: 0,
                    min_kernels: 0
                },
                5
            ),
            1
        );
    }

    #[test]
    fn chunks_are_contiguous_and_balanced() {
        assert_eq!(
            chunks(3, &[1, 2, 3, 4, 5, 6, 7]),
            vec![vec![1, 2], vec![3, 4], vec![5, 6, 7]]
        );
        assert_eq!(chunks(4, &[1, 2]), vec![vec![1], vec![2]]);
        assert_eq!(chunks(2, &[] as &[u8]), Vec::<Vec<u8>>::new());
    }
}
