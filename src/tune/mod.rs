//! The built-in autotuning search: candidates of a kernel family (see
//! [`render`](mod@render)) are rendered, resolved through the cache a batch at a time,
//! run on real data, checked against a reference, and timed.
//!
//! Like a real search, most candidates change only some segments, so even one
//! search reuses most kernels, and a second search in the same process (or,
//! with a persistent store, in another process) reuses all of them.

pub mod render;

use crate::backend::{Backend, BackendError};
use crate::resolve::census::Census;
use crate::resolve::{Outcome, ResolveError, Resolver};
use render::{render, search_space, Buffer, Candidate, Config, Data, Problem};
use std::time::{Duration, Instant};

/// What to search.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TuneOptions {
    /// The problem's sizes.
    pub problem: Problem,
    /// How many candidates (the first of [`search_space`], cycled if more).
    pub candidates: usize,
    /// Candidates resolved per batch.
    pub batch: usize,
    /// Timed runs per candidate (the median counts).
    pub reps: usize,
    /// Compile every candidate and run none.
    pub compile_only: bool,
    /// Seed of the input data.
    pub seed: u64,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            problem: Problem {
                m: 64,
                k: 128,
                n: 64,
            },
            candidates: search_space().len(),
            batch: 6,
            reps: 3,
            compile_only: false,
            seed: 42,
        }
    }
}

/// One candidate's result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Trial {
    /// The point of the search space.
    pub config: Config,
    /// Median run time (None when not run).
    #[serde(serialize_with = "opt_seconds")]
    pub time: Option<Duration>,
    /// Largest absolute difference from the reference (None when not run).
    pub max_error: Option<f32>,
    /// How each of its kernels was answered.
    pub outcomes: Vec<Outcome>,
}

/// What a search did and found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// The backend's family.
    pub backend: String,
    /// Every candidate, in search order.
    pub trials: Vec<Trial>,
    /// The fastest candidate that ran and matched the reference.
    pub best: Option<Trial>,
    /// What the resolves did.
    pub census: Census,
    /// Wall time of the whole search.
    #[serde(serialize_with = "seconds")]
    pub wall: Duration,
}

/// The mean compile time per compiled kernel over `reports`, if any
/// compiled: the price of a kernel that did not have to compile.
pub fn compile_time_per_kernel(reports: &[Report]) -> Option<Duration> {
    let compiled: u64 = reports.iter().map(|r| r.census.kernels_compiled).sum();
    let time: Duration = reports.iter().map(|r| r.census.compile_time).sum();
    (compiled > 0).then(|| time / compiled as u32)
}

impl Report {
    /// Compile time the reused and stored kernels did not cost, at
    /// `per_kernel` each ([`compile_time_per_kernel`]).
    pub fn compile_time_saved(&self, per_kernel: Duration) -> Duration {
        per_kernel * (self.census.kernels_reused + self.census.kernels_stored) as u32
    }
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn opt_seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Why a search stopped.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A batch failed to resolve.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A kernel failed to run.
    #[error("candidate {config}: {source}")]
    Run {
        /// The candidate.
        config: Config,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A candidate's result does not match the reference.
    #[error("candidate {config} computes a wrong result (max error {error})")]
    Wrong {
        /// The candidate.
        config: Config,
        /// Largest absolute difference from the reference.
        error: f32,
    },
}

/// The tolerance against the f64 reference (the softmax's outputs are in 0..1).
const TOLERANCE: f32 = 1e-4;

/// Runs the search over `resolver`'s backend; `progress` is told how many
/// candidates are done after each batch.
pub fn tune<B: Backend + 'static>(
    resolver: &Resolver<B>,
    options: &TuneOptions,
    mut progress: impl FnMut(usize),
) -> Result<Report, TuneError> {
    let start = Instant::now();
    let language = resolver.backend().language();
    let space = search_space();
    let configs: Vec<Config> = (0..options.candidates)
        .map(|i| space[i % space.len()])
        .collect();
    let data = Data::new(options.problem, options.seed);
    let reference = data.reference(options.problem);
    let run = !options.compile_only && resolver.backend().can_run();
    let mut census = Census::default();
    let trials = (|| -> Result<Vec<Trial>, TuneError> {
        let mut trials = Vec::new();
        for batch in configs.chunks(options.batch.max(1)) {
            let candidates: Vec<Candidate> = batch
                .iter()
                .map(|c| render(*c, options.problem, language))
                .collect();
            let kernels: Vec<_> = candidates.iter().flat_map(|c| c.kernels.clone()).collect();
            let counted = resolver.resolve_counted(&kernels)?;
            census.add(&counted.census);
            let resolved = counted.answers;
            let mut at = 0;
            for candidate in &candidates {
                let mine = &resolved[at..at + candidate.kernels.len()];
                at += candidate.kernels.len();
                let mut trial = Trial {
                    config: candidate.config,
                    time: None,
                    max_error: None,
                    outcomes: mine.iter().map(|r| r.outcome).collect(),
                };
                if run {
                    let (time, error) =
                        time_candidate(resolver, candidate, mine, &data, &reference, options)?;
                    trial.time = Some(time);
                    trial.max_error = Some(error);
                }
                trials.push(trial);
            }
            progress(trials.len());
        }
        Ok(trials)
    })();
    let trials = trials?;
    let best = trials
        .iter()
        .filter(|t| t.time.is_some())
        .min_by_key(|t| t.time)
        .cloned();
    Ok(Report {
        backend: resolver.backend().family().to_string(),
        trials,
        best,
        census,
        wall: start.elapsed(),
    })
}

/// Runs a candidate's steps `reps` times on fresh copies of the data, checks
/// the result, and answers the median time and the error.
fn time_candidate<B: Backend + 'static>(
    resolver: &Resolver<B>,
    candidate: &Candidate,
    resolved: &[crate::resolve::Resolved<B::Program>],
    data: &Data,
    reference: &[f32],
    options: &TuneOptions,
) -> Result<(Duration, f32), TuneError> {
    let backend = resolver.backend();
    let mut times = Vec::new();
    let mut error = 0.0f32;
    for _ in 0..options.reps.max(1) {
        let mut data = data.clone();
        let start = Instant::now();
        for (step, r) in candidate.steps.iter().zip(resolved) {
            let mut launch = step.launch(&data);
            backend
                .launch(&r.program, &r.symbol, &mut launch)
                .map_err(|source| TuneError::Run {
                    config: candidate.config,
                    source,
                })?;
            // Only `Y` is written; it is always the first buffer.
            debug_assert_eq!(step.buffers[0], Buffer::Y);
            data.y = std::mem::take(&mut launch.buffers[0]);
        }
        times.push(start.elapsed());
        error = data
            .y
            .iter()
            .zip(reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        if error > TOLERANCE || error.is_nan() {
            return Err(TuneError::Wrong {
                config: candidate.config,
                error,
            });
        }
    }
    times.sort();
    Ok((times[times.len() / 2], error))
}
