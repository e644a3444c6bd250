//! `kcache tune`: the main job, an autotuning search through the cache.

use super::backend::{dispatch, BackendFlags, Job};
use super::cache::StoreFlags;
use super::{write_stdout, Failure};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use kcache::backend::Backend;
use kcache::tune::render::{search_space, Problem};
use kcache::tune::{compile_time_per_kernel, tune, Report, TuneError, TuneOptions};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// How many candidates to try (the search space has 36; more repeat it).
    #[arg(long, value_name = "N", default_value_t = search_space().len(), value_parser = parse_candidates)]
    candidates: usize,
    /// Candidates resolved per batch.
    #[arg(long, value_name = "N", default_value_t = 6)]
    batch: usize,
    /// The problem: M x K times K x N.
    #[arg(long, value_name = "MxKxN", default_value = "64x128x64", value_parser = parse_problem)]
    size: Problem,
    /// Timed runs per candidate (the median counts).
    #[arg(long, value_name = "N", default_value_t = 3)]
    reps: usize,
    /// Run the whole search this many times in this process (later rounds
    /// reuse every kernel).
    #[arg(long, value_name = "N", default_value_t = 1)]
    rounds: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    backend: BackendFlags,
    /// cc: where quoted includes resolve and the compiler runs [default: the
    /// current directory].
    #[arg(long, value_name = "DIR", help_heading = "Backend")]
    source_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    store: StoreFlags,
}

/// The most elements the three matrices of `--size` may hold together
/// (2^26 floats, 256 MiB): the kernels index them with C `int`s, and the
/// host allocates them (and a reference result) whole.
const MAX_ELEMENTS: usize = 1 << 26;

/// The most candidates one search tries (each is rendered and kept).
const MAX_CANDIDATES: usize = 1 << 20;

fn parse_candidates(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    if n > MAX_CANDIDATES {
        return Err(format!("at most {MAX_CANDIDATES} candidates"));
    }
    Ok(n)
}

fn parse_problem(s: &str) -> Result<Problem, String> {
    let dims: Vec<usize> = s
        .split(['x', 'X', ','])
        .map(|d| d.trim().parse::<usize>().map_err(|e| format!("`{d}`: {e}")))
        .collect::<Result<_, _>>()?;
    let [m, k, n] = dims[..] else {
        return Err("expected three positive sizes, MxKxN".into());
    };
    if m == 0 || k == 0 || n == 0 {
        return Err("expected three positive sizes, MxKxN".into());
    }
    let total = m
        .checked_mul(k)
        .zip(k.checked_mul(n))
        .zip(m.checked_mul(n))
        .and_then(|((a, b), c)| a.checked_add(b)?.checked_add(c));
    match total {
        Some(t) if t <= MAX_ELEMENTS => Ok(Problem { m, k, n }),
        _ => Err(format!(
            "{m}x{k}x{n} is too large: the matrices may hold at most {MAX_ELEMENTS} elements together"
        )),
    }
}

pub fn tune_command(args: TuneArgs) -> Result<ExitCode, Failure> {
    let mut flags = args.backend.clone();
    flags.source_dir = args.source_dir.clone();
    dispatch(&flags, TuneJob(args))
}

struct TuneJob(TuneArgs);

impl Job for TuneJob {
    fn run<B: Backend + 'static>(self, backend: Arc<B>) -> Result<ExitCode, Failure> {
        let args = self.0;
        if !args.backend.compile_only && !backend.can_run() {
            return Err(Failure(format!(
                "the {} backend cannot run kernels here; pass --compile-only to compile every candidate and run none",
                backend.family()
            )));
        }
        let store = args.store.open(None)?;
        let identity = backend.describe();
        let resolver = args.backend.resolver(backend).with_store(store);
        let options = TuneOptions {
            problem: args.size,
            candidates: args.candidates,
            batch: args.batch,
            reps: args.reps,
            compile_only: args.backend.compile_only,
            seed: 42,
        };
        let mut reports = Vec::new();
        for round in 0..args.rounds.max(1) {
            let bar = progress_bar(options.candidates, args.json, round, args.rounds);
            let report = tune(&resolver, &options, |done| bar.set_position(done as u64)).map_err(
                |e| match e {
                    TuneError::Resolve(e) => super::resolve_failure(&e),
                    e => Failure(super::error_chain(&e)),
                },
            )?;
            bar.finish_and_clear();
            reports.push(report);
        }
        let out = if args.json {
            format!("{}\n", json(&reports, &options, &identity))
        } else {
            table(&reports, &options, &identity)
        };
        write_stdout(out.as_bytes())?;
        if resolver.store_errors() > 0 {
            eprintln!(
                "kcache: {} store operations failed; those programs were compiled without the store",
                resolver.store_errors()
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn progress_bar(len: usize, json: bool, round: usize, rounds: usize) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    let label = if rounds > 1 {
        format!("round {}/{rounds} ", round + 1)
    } else {
        String::new()
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label}{{bar:40}} {{pos}}/{{len}} {} {{elapsed}}",
            if len == 1 { "candidate" } else { "candidates" }
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn plural(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn table(reports: &[Report], o: &TuneOptions, identity: &str) -> String {
    let mut s = String::new();
    let p = o.problem;
    for (i, r) in reports.iter().enumerate() {
        let c = &r.census;
        if reports.len() > 1 {
            s.push_str(&format!("round {}\n", i + 1));
        }
        s.push_str(&format!(
            "search      {} on {} ({identity}), problem {}x{}x{}\n",
            plural(r.trials.len() as u64, "candidate"),
            r.backend,
            p.m,
            p.k,
            p.n
        ));
        match &r.best {
            Some(b) => s.push_str(&format!(
                "best        {}  {}  (max error {:.1e})\n",
                b.config,
                ms(b.time.unwrap_or_default()),
                b.max_error.unwrap_or_default()
            )),
            None => s.push_str("best        none (compile only: nothing ran)\n"),
        }
        s.push_str(&format!(
            "kernels     requested {}  compiled {}  reused {}  stored {}\n",
            c.kernels_requested, c.kernels_compiled, c.kernels_reused, c.kernels_stored
        ));
        if c.kernels_shared > 0 {
            s.push_str(&format!(
                "            shared {} (of the stored: another machine compiled them, via Redis)\n",
                c.kernels_shared
            ));
        }
        if c.kernels_uncacheable > 0 {
            s.push_str(&format!(
                "            uncacheable {} (compiled every time)\n",
                c.kernels_uncacheable
            ));
        }
        s.push_str(&format!(
            "programs    compiled {}  loaded {}\n",
            c.programs_compiled, c.programs_loaded
        ));
        match compile_time_per_kernel(reports) {
            Some(per) => s.push_str(&format!(
                "compile     spent {:.2} s  saved ~{:.2} s ({} not compiled, at {:.0} ms each)\n",
                c.compile_time.as_secs_f64(),
                r.compile_time_saved(per).as_secs_f64(),
                plural(c.kernels_reused + c.kernels_stored, "kernel"),
                per.as_secs_f64() * 1e3
            )),
            None => s.push_str(&format!(
                "compile     spent 0 s: {} compiled\n",
                match c.kernels_requested {
                    1 => "the kernel was not".to_string(),
                    n => format!("none of the {n} kernels"),
                }
            )),
        }
        s.push_str(&format!("wall        {:.2} s\n", r.wall.as_secs_f64()));
    }
    s
}

fn json(reports: &[Report], o: &TuneOptions, identity: &str) -> serde_json::Value {
    let sum = |f: fn(&Report) -> u64| reports.iter().map(f).sum::<u64>();
    let best = reports
        .iter()
        .filter_map(|r| r.best.clone())
        .min_by_key(|t| t.time);
    serde_json::json!({
        "backend": reports.first().map(|r| r.backend.clone()),
        "compiler": identity,
        "problem": o.problem,
        "candidates": sum(|r| r.trials.len() as u64),
        "kernels_requested": sum(|r| r.census.kernels_requested),
        "kernels_compiled": sum(|r| r.census.kernels_compiled),
        "programs_compiled": sum(|r| r.census.programs_compiled),
        "kernels_reused": sum(|r| r.census.kernels_reused),
        "kernels_stored": sum(|r| r.census.kernels_stored),
        "kernels_shared": sum(|r| r.census.kernels_shared),
        "kernels_uncacheable": sum(|r| r.census.kernels_uncacheable),
        "kernels_waited": sum(|r| r.census.kernels_waited),
        "programs_loaded": sum(|r| r.census.programs_loaded),
        "compile_seconds": reports.iter().map(|r| r.census.compile_time.as_secs_f64()).sum::<f64>(),
        "compile_saved_seconds": compile_time_per_kernel(reports)
            .map(|per| reports.iter().map(|r| r.compile_time_saved(per).as_secs_f64()).sum::<f64>()),
        "wall_seconds": reports.iter().map(|r| r.wall.as_secs_f64()).sum::<f64>(),
        "best": best.map(|b| serde_json::json!({
            "config": b.config,
            "time_seconds": b.time.map(|t| t.as_secs_f64()),
            "max_error": b.max_error,
        })),
        "rounds": reports.iter().map(|r| serde_json::json!({
            "candidates": r.trials.len(),
            "kernels_requested": r.census.kernels_requested,
            "kernels_compiled": r.census.kernels_compiled,
            "programs_compiled": r.census.programs_compiled,
            "kernels_reused": r.census.kernels_reused,
            "kernels_stored": r.census.kernels_stored,
            "kernels_shared": r.census.kernels_shared,
            "compile_seconds": r.census.compile_time.as_secs_f64(),
            "wall_seconds": r.wall.as_secs_f64(),
        })).collect::<Vec<_>>(),
    })
}
