//! Choosing a backend on the command line, and running a job generic over it.

use super::Failure;
use clap::{Args, ValueEnum};
use kcache::backend::cuda::{Cuda, CudaConfig, CudaTarget};
use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::{Backend, BackendInfo};
use kcache::resolve::split::Split;
use kcache::resolve::{Resolver, Threads};
use std::process::ExitCode;
use std::sync::Arc;

/// The backends, as the command line names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Choice {
    /// The system C compiler (`$CC`, default `cc`).
    #[default]
    Cc,
    /// OpenCL (PoCL on a CPU).
    Opencl,
    /// CUDA through NVRTC.
    Cuda,
    /// Vulkan compute (GLSL through glslang).
    Vulkan,
}

/// Flags every command that compiles shares.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Backend")]
pub struct BackendFlags {
    /// Which compiler.
    #[arg(long, value_enum, default_value_t = Choice::Cc)]
    pub backend: Choice,
    /// The device's index among the backend's devices, as `kcache backends`
    /// lists them (OpenCL, CUDA, Vulkan; cc has one).
    #[arg(long, value_name = "INDEX", default_value_t = 0)]
    pub device: usize,
    /// The architecture (sm_90, compute_90, 90); default: the device's, else sm_80.
    #[arg(long, help_heading = "CUDA")]
    pub arch: Option<String>,
    /// Compile to PTX instead of cubin.
    #[arg(long, help_heading = "CUDA")]
    pub ptx: bool,
    /// Compile only; run nothing (CUDA without a GPU needs this).
    #[arg(long)]
    pub compile_only: bool,
    /// Compile each option list's kernels as up to N programs at once.
    #[arg(long, value_name = "N", help_heading = "Split")]
    pub split: Option<usize>,
    /// With --split: the fewest kernels worth a program of their own.
    #[arg(long, value_name = "M", default_value_t = 1, help_heading = "Split")]
    pub min_kernels: usize,
    /// With --split: where a batch's other programs compile.
    #[arg(long, value_enum, default_value_t = ThreadsChoice::Rayon, help_heading = "Split")]
    pub threads: ThreadsChoice,
    /// cc: where quoted includes resolve and the compiler runs; each command
    /// has its own `--source-dir` flag (its default differs) and sets this.
    #[arg(skip)]
    pub source_dir: Option<std::path::PathBuf>,
    /// Where the cc backend keeps its compilers' probe results (set by the
    /// command from the cache directory).
    #[arg(skip)]
    pub compilers_dir: Option<std::path::PathBuf>,
}

/// The flags' values when none is given, as clap's defaults above give
/// them (`kcache compile FILE` parsed without clap uses these; a test in
/// `mod.rs` holds the two together).
impl Default for BackendFlags {
    fn default() -> Self {
        BackendFlags {
            backend: Choice::Cc,
            device: 0,
            arch: None,
            ptx: false,
            compile_only: false,
            split: None,
            min_kernels: 1,
            threads: ThreadsChoice::Rayon,
            source_dir: None,
            compilers_dir: None,
        }
    }
}

/// Where a split batch's programs compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ThreadsChoice {
    /// rayon's pool.
    Rayon,
    /// Scoped OS threads.
    Os,
}

impl BackendFlags {
    /// The resolver's split configuration.
    pub fn split(&self) -> Option<Split> {
        self.split.map(|max_programs| Split {
            max_programs,
            min_kernels: self.min_kernels,
        })
    }

    /// The resolver's threads.
    pub fn threads(&self) -> Threads {
        match self.threads {
            ThreadsChoice::Rayon => Threads::Rayon,
            ThreadsChoice::Os => Threads::Os,
        }
    }

    /// A resolver over `backend` configured by these flags.
    pub fn resolver<B: Backend + 'static>(&self, backend: Arc<B>) -> Resolver<B> {
        Resolver::new(backend)
            .with_split(self.split())
            .with_threads(self.threads())
    }
}

/// Something to run with whichever backend the flags chose.
pub trait Job {
    /// Runs with `backend`.
    fn run<B: Backend + 'static>(self, backend: Arc<B>) -> Result<ExitCode, Failure>;
}

/// Builds the chosen backend and runs `job` with it.
pub fn dispatch(flags: &BackendFlags, job: impl Job) -> Result<ExitCode, Failure> {
    match flags.backend {
        Choice::Cc => {
            let mut builder = kcache::backend::cc::CcBackend::builder();
            if let Some(dir) = &flags.source_dir {
                builder = builder.source_dir(dir);
            }
            if let Some(dir) = &flags.compilers_dir {
                builder = builder.identity_cache(dir);
            }
            job.run(Arc::new(builder.build()?))
        }
        Choice::Opencl => job.run(Arc::new(OpenCl::new(&OpenClConfig {
            device: flags.device,
        })?)),
        Choice::Cuda => job.run(Arc::new(Cuda::new(&CudaConfig {
            device: flags.device,
            arch: flags.arch.clone(),
            target: if flags.ptx {
                CudaTarget::Ptx
            } else {
                CudaTarget::Cubin
            },
            nvrtc: None,
            compile_only: flags.compile_only,
        })?)),
        Choice::Vulkan => job.run(Arc::new(Vulkan::new(&VulkanConfig {
            device: flags.device,
            ..VulkanConfig::default()
        })?)),
    }
}

/// Every backend's report, in the order the CLI names them.
pub fn probe_all() -> Vec<BackendInfo> {
    vec![
        kcache::backend::cc::CcBackend::probe(),
        kcache::backend::opencl::probe(),
        kcache::backend::cuda::probe(),
        kcache::backend::vulkan::probe(),
    ]
}
