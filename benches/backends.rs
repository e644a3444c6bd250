//! What does a GPU backend's compile cost per kernel, and what does loading a
//! program from its bytes cost instead?
//!
//! For each backend available here: compile a group of 8 small kernels
//! (throughput is reported per kernel), and load the group's program from its
//! bytes as a fresh process would. OpenCL also measures a load followed by
//! the first launch of one kernel, since PoCL finishes code generation at a
//! kernel's first launch. The drivers' own caches are off (`POCL_KERNEL_CACHE=0`,
//! `MESA_SHADER_CACHE_DISABLE=true`), or they would hide the compile, and so
//! is the backend's own handle cache (cleared before every compile or load,
//! untimed); `compile_cached` measures what that cache answers instead.
//!
//! ```text
//! cargo bench --bench backends -- --warm-up-time 1 --measurement-time 3
//! ```

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use kcache::backend::cuda::{Cuda, CudaConfig};
use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::{Backend, BackendError, CompileJob, KernelSource, Launch};

const KERNELS: usize = 8;

/// Kernel `i` of the group in one language: `y[j] = x[j] * i + FACTOR`.
fn texts(language: &str) -> Vec<(String, String)> {
    (0..KERNELS)
        .map(|i| {
            let symbol = format!("k{i}");
            let text = match language {
                "opencl" => format!(
                    "__kernel void {symbol}(__global float* y, __global const float* x, int n) {{
    int j = get_global_id(0);
    if (j < n) y[j] = x[j] * {i}.0f + FACTOR;
}}"
                ),
                "cuda" => format!(
                    "extern \"C\" __global__ void {symbol}(float* y, const float* x, int n) {{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) y[j] = x[j] * {i}.0f + FACTOR;
}}"
                ),
                _ => format!(
                    "#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Y {{ float y[]; }};
layout(std430, binding = 1) buffer X {{ float x[]; }};
layout(push_constant) uniform S {{ int n; }};
void {symbol}() {{
    uint j = gl_GlobalInvocationID.x;
    if (j < uint(n)) y[j] = x[j] * {i}.0 + FACTOR;
}}
"
                ),
            };
            (symbol, text)
        })
        .collect()
}

fn bench_backend<B: Backend>(c: &mut Criterion, name: &str, backend: Result<B, BackendError>) {
    let backend = match backend {
        Ok(backend) => backend,
        Err(err) => {
            eprintln!("{name}: skipped: {err}");
            return;
        }
    };
    let texts = texts(name);
    let kernels: Vec<KernelSource<'_>> = texts
        .iter()
        .map(|(symbol, text)| KernelSource { symbol, text })
        .collect();
    let symbols: Vec<&str> = texts.iter().map(|(s, _)| s.as_str()).collect();
    let options = vec!["-DFACTOR=1.0f".to_string()];
    let job = CompileJob {
        kernels: &kernels,
        options: &options,
        group: 0,
        n_groups: 1,
        fresh: false,
    };
    let binary = backend.compile(&job).expect("the group compiles").binary;

    let mut group = c.benchmark_group("backends");
    group.sample_size(10);
    group.throughput(Throughput::Elements(KERNELS as u64));
    // The backend's handle cache would answer a repeated compile or load:
    // each timed call starts from an empty one.
    let clear = || backend.clear_cache().expect("the cache clears");
    group.bench_function(BenchmarkId::new("compile_8_kernels", name), |b| {
        b.iter_batched(
            clear,
            |()| backend.compile(&job).expect("the group compiles"),
            BatchSize::PerIteration,
        )
    });
    group.bench_function(BenchmarkId::new("compile_cached", name), |b| {
        b.iter(|| backend.compile(&job).expect("the group compiles"))
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("load_program", name), |b| {
        b.iter_batched(
            clear,
            |()| backend.load(&binary, &symbols).expect("the program loads"),
            BatchSize::PerIteration,
        )
    });
    if backend.can_run() && name == "opencl" {
        group.bench_function(BenchmarkId::new("load_and_first_launch", name), |b| {
            b.iter_batched(
                clear,
                |()| {
                    let program = backend.load(&binary, &symbols).expect("the program loads");
                    let mut launch = Launch {
                        buffers: vec![vec![0.0; 256], vec![1.0; 256]],
                        scalars: vec![256],
                        global: [256, 1, 1],
                        local: [1, 1, 1],
                    };
                    backend.launch(&program, "k3", &mut launch).expect("runs");
                    launch
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn main() {
    // Before any driver loads: their own caches would hide the compile.
    std::env::set_var("POCL_KERNEL_CACHE", "0");
    std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
    let mut c = Criterion::default().configure_from_args();
    bench_backend(&mut c, "opencl", OpenCl::new(&OpenClConfig::default()));
    bench_backend(&mut c, "cuda", Cuda::new(&CudaConfig::default()));
    bench_backend(&mut c, "vulkan", Vulkan::new(&VulkanConfig::default()));
    c.final_summary();
}
