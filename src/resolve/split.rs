//! Split plans: how many programs a group of kernels compiles as, and which
//! kernels go into each, by count or from the measured cost of a program.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use super::Resolver;
use crate::backend::Backend;

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

/// What one program's compile is measured to cost: a fixed part every
/// program pays (the compiler's start, its headers, the assembler and the
/// link for the C backend) and a part per kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// The fixed cost of a program.
    pub per_program: Duration,
    /// The cost each kernel adds.
    pub per_kernel: Duration,
}

/// The most recent program compiles the fit is taken over.
const WINDOW: usize = 64;

/// Program compiles as they were measured: `(kernels, seconds)`, the last
/// [`WINDOW`], fitted to [`Fit`] by least squares.
#[derive(Debug, Default)]
pub(crate) struct Costs {
    samples: Mutex<VecDeque<(usize, f64)>>,
}

impl Costs {
    /// Records a compile of `kernels` kernels that took `took`.
    pub(crate) fn record(&self, kernels: usize, took: Duration) {
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() == WINDOW {
            s.pop_front();
        }
        s.push_back((kernels, took.as_secs_f64()));
    }

    /// The fit, once programs of at least two sizes were measured and the
    /// per-kernel cost came out positive (else no fit to plan with).
    pub(crate) fn fit(&self) -> Option<Fit> {
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        fit(s.iter().copied())
    }
}

/// The least-squares line through `(kernels, seconds)` samples.
fn fit(samples: impl Iterator<Item = (usize, f64)> + Clone) -> Option<Fit> {
    let n = samples.clone().count() as f64;
    let (sx, sy) = samples
        .clone()
        .fold((0.0, 0.0), |(x, y), (k, t)| (x + k as f64, y + t));
    let (mx, my) = (sx / n, sy / n);
    let (sxx, sxy) = samples.fold((0.0, 0.0), |(xx, xy), (k, t)| {
        let dx = k as f64 - mx;
        (xx + dx * dx, xy + dx * (t - my))
    });
    if sxx <= 0.0 {
        return None;
    }
    let per_kernel = sxy / sxx;
    if !per_kernel.is_finite() || per_kernel <= 0.0 {
        return None;
    }
    let per_program = (my - per_kernel * mx).max(0.0);
    Some(Fit {
        per_program: Duration::from_secs_f64(per_program),
        per_kernel: Duration::from_secs_f64(per_kernel),
    })
}

/// How many programs `n` kernels compile as on `workers` cores, given the
/// measured `fit`: at most [`programs_for`], and the count with the least
/// predicted cost, fewer on a tie. The cost of `p` programs is the wall
/// time of compiling them `workers` at a time (`ceil(p / workers)` rounds of
/// `per_program + ceil(n / p) × per_kernel`) plus the CPU time the extra
/// programs' fixed parts take from the other cores' work, spread over them
/// (`(p - 1) × per_program / workers`): a program is split off only when
/// the time it saves is worth the compile it adds. Without a fit, the
/// count-based plan capped at the cores.
pub fn programs_measured(split: Split, n: usize, workers: usize, fit: Option<Fit>) -> usize {
    let most = programs_for(split, n);
    let workers = workers.max(1);
    let Some(fit) = fit else {
        return most.min(workers);
    };
    if most == 0 {
        return 0;
    }
    let (f, k) = (fit.per_program.as_secs_f64(), fit.per_kernel.as_secs_f64());
    let cost = |p: usize| {
        let rounds = p.div_ceil(workers) as f64;
        rounds * (f + n.div_ceil(p) as f64 * k) + (p - 1) as f64 * f / workers as f64
    };
    (1..=most).fold(1, |best, p| if cost(p) < cost(best) { p } else { best })
}

impl<B: Backend + 'static> Resolver<B> {
    /// Picks a split's program count from the measured cost of this
    /// resolver's compiles ([`programs_measured`], on the machine's cores)
    /// rather than from the kernel count alone; the split's counts stay the
    /// bounds.
    pub fn with_measured_split(mut self, measured: bool) -> Self {
        self.measured_split = measured;
        self
    }

    /// The fixed and per-kernel cost this resolver's program compiles were
    /// measured at, once programs of two sizes compiled.
    pub fn compile_costs(&self) -> Option<Fit> {
        self.costs.fit()
    }

    /// How many programs `n` kernels of one option list compile as.
    pub(super) fn programs(&self, split: Split, n: usize) -> usize {
        if !self.measured_split {
            return programs_for(split, n);
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        programs_measured(split, n, cores, self.costs.fit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(per_program: u64, per_kernel: u64) -> Option<Fit> {
        Some(Fit {
            per_program: Duration::from_millis(per_program),
            per_kernel: Duration::from_millis(per_kernel),
        })
    }

    #[test]
    fn the_fit_recovers_a_line_and_needs_two_sizes() {
        let c = Costs::default();
        c.record(4, Duration::from_millis(50));
        c.record(4, Duration::from_millis(50));
        assert_eq!(c.fit(), None, "one size cannot separate the parts");
        c.record(16, Duration::from_millis(110));
        let f = c.fit().expect("two sizes");
        assert!((f.per_kernel.as_secs_f64() - 0.005).abs() < 1e-9, "{f:?}");
        assert!((f.per_program.as_secs_f64() - 0.030).abs() < 1e-9, "{f:?}");
        // Larger programs measured faster: no plan from that.
        let c = Costs::default();
        c.record(1, Duration::from_millis(50));
        c.record(8, Duration::from_millis(40));
        assert_eq!(c.fit(), None);
    }

    #[test]
    fn the_window_keeps_the_latest_compiles() {
        let c = Costs::default();
        for _ in 0..WINDOW {
            c.record(1, Duration::from_millis(900));
        }
        for i in 0..WINDOW {
            let n = 1 + i % 2 * 7;
            c.record(n, Duration::from_millis(30 + 5 * n as u64));
        }
        let f = c.fit().expect("two sizes");
        assert!((f.per_program.as_secs_f64() - 0.030).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn a_measured_plan_never_oversubscribes_equal_kernels() {
        let s = Split::new(4);
        for n in [8, 32, 128] {
            assert_eq!(programs_measured(s, n, 2, ms(30, 5)), 2, "{n}");
        }
        for n in [32, 128] {
            assert_eq!(programs_measured(s, n, 4, ms(30, 5)), 4, "{n}");
        }
        // 8 kernels on 4 cores: the third and fourth programs' fixed costs
        // outweigh the 10 ms each saves.
        assert_eq!(programs_measured(s, 8, 4, ms(30, 5)), 2);
        // Without a fit: the count-based plan, capped at the cores.
        assert_eq!(programs_measured(s, 32, 2, None), 2);
        assert_eq!(programs_measured(s, 3, 8, None), 3);
        assert_eq!(programs_measured(s, 0, 2, None), 0);
        assert_eq!(programs_measured(s, 0, 2, ms(30, 5)), 0);
    }

    #[test]
    fn a_measured_plan_splits_only_what_pays_for_its_fixed_cost() {
        let s = Split::new(2);
        // On 2 cores a second program costs per_program / 2 and saves
        // about n × per_kernel / 2: split when n × per_kernel exceeds
        // per_program (a tie stays whole).
        assert_eq!(programs_measured(s, 4, 2, ms(30, 5)), 1);
        assert_eq!(programs_measured(s, 6, 2, ms(30, 5)), 1);
        assert_eq!(programs_measured(s, 8, 2, ms(30, 5)), 2);
        // A cheaper program splits smaller batches.
        assert_eq!(programs_measured(s, 4, 2, ms(10, 5)), 2);
        // Never past the split's bounds.
        let bounded = Split {
            max_programs: 4,
            min_kernels: 16,
        };
        assert_eq!(programs_measured(bounded, 20, 4, ms(1, 5)), 1);
    }

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
