//! The OpenCL backend (`opencl3`, the OpenCL runtime loaded at run time).
//!
//! A group of OpenCL C kernels is concatenated into one program source and
//! built with the option list as build options (joined by spaces, so an
//! option must not itself contain a space). The program's bytes are its
//! `CL_PROGRAM_BINARIES` for the device, sealed with a header and a digest
//! (`backend::gpu::seal`, magic `KCCLPROG`): PoCL aborts the whole process on
//! a truncated program binary, so [`Backend::load`] checks the bytes before
//! the driver sees them, then rebuilds the program from them, in this process
//! or a fresh one.
//!
//! Kernels take their [`Launch`] arguments in the crate's order: the `f32`
//! buffers as `__global float*` parameters, then the `i32` scalars as `int`
//! parameters. Work sizes follow the rules in `backend::gpu`: with an explicit
//! work-group size, the global size is rounded up to a multiple of it.
//!
//! # Benchmarks and PoCL
//!
//! PoCL keeps its own on-disk kernel cache (`~/.cache/pocl/kcache`), which
//! makes a "cold" compile look warm and hides what kcache's own store saves.
//! Set `POCL_KERNEL_CACHE=0` before the first OpenCL call when measuring.
//! PoCL also finishes code generation lazily, at a kernel's first launch for
//! a given work-group size, so a program loaded from its binary pays that on
//! its first launch.
//!
//! # Ownership
//!
//! An [`OpenClDevice`] owns the context and the command queue of one device;
//! every [`OpenClProgram`] holds it by `Arc`, so a device's context is
//! released only after the last program built in it (fields drop in
//! declaration order: kernels, then the program, then the device).
//!
//! # Teardown
//!
//! Programs live in a per-device handle cache
//! ([`KernelCache`], see
//! [`OpenCl::kernel_cache`]): compiling the same group, or loading the same
//! bytes, twice in a process answers the same program. The cache listens for
//! device destroys of `opencl` on the [`Hooks`] the backend was built with
//! ([`OpenCl::with_hooks`]; [`OpenCl::new`] uses the process's).
//! [`Backend::clear_cache`] clears it inside `around_clear`.
//!
//! OpenCL has no device-destroy call of its own; [`OpenCl::destroy_device`]
//! is kcache's: it notifies device-destroy listeners (evicting this device's
//! programs here and the memo of the layers above), then the backend lets go
//! of its device. The context and queue are released when the last program
//! handed out is dropped; until then those programs stay usable. The backend
//! compiles and loads nothing afterwards.
//!
//! [`Backend::clear_cache`]: crate::backend::Backend::clear_cache
//! [`Backend::load`]: crate::backend::Backend::load
//! [`Hooks`]: crate::cache::hooks::Hooks
//! [`KernelCache`]: crate::cache::guarded::KernelCache

use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::{ClError, CL_BUILD_PROGRAM_FAILURE, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE};
use opencl3::platform::{get_platforms, Platform};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, cl_mem, CL_BLOCKING};

use super::gpu::{self, Driver, GpuBackend, Opened, Toolchain};
use super::{BackendError, BackendInfo, CompileJob, Compiled, Language, Launch};

const FAMILY: &str = "opencl";
const MAGIC: &[u8; 8] = b"KCCLPROG";
const FORMAT_VERSION: u32 = 1;

/// Which OpenCL device the backend compiles for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenClConfig {
    /// The device's index among all devices of all platforms, in the order
    /// the ICD loader lists platforms and each platform lists its devices
    /// (the order `kcache backends` prints them in).
    pub device: usize,
}

/// Serializes what creates or releases a driver's device state: enumerating
/// platforms and devices, creating a context, releasing one. PoCL 3.1
/// initializes its devices lazily inside `clGetDeviceIDs`, and a second thread
/// can receive a device whose name is not yet set and crash reading it
/// (observed: SIGSEGV in `clGetDeviceInfo(CL_DEVICE_NAME)` while another thread
/// was still in `clGetDeviceIDs`).
static DEVICE_STATE: Mutex<()> = Mutex::new(());

fn device_state() -> std::sync::MutexGuard<'static, ()> {
    DEVICE_STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// One OpenCL device, with the context and the in-order queue kcache uses on
/// it. Shared by the backend and every program built on it.
pub struct OpenClDevice {
    // Released in `drop`, queue before context, under `DEVICE_STATE`.
    queue: ManuallyDrop<CommandQueue>,
    context: ManuallyDrop<Context>,
    id: cl_device_id,
    index: usize,
    name: String,
}

// SAFETY: OpenCL contexts, queues and device ids are thread-safe objects
// (OpenCL 1.1+ §A.2: all API calls are thread-safe except clSetKernelArg on
// one kernel, which kcache serializes per kernel).
unsafe impl Send for OpenClDevice {}
unsafe impl Sync for OpenClDevice {}

impl OpenClDevice {
    /// The device's name, as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's index (see [`OpenClConfig::device`]).
    pub fn index(&self) -> usize {
        self.index
    }
}

impl Drop for OpenClDevice {
    fn drop(&mut self) {
        let _serialized = device_state();
        // SAFETY: dropped once, here, and never used again.
        unsafe {
            ManuallyDrop::drop(&mut self.queue);
            ManuallyDrop::drop(&mut self.context);
        }
    }
}

impl std::fmt::Debug for OpenClDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .finish()
    }
}

/// A built OpenCL program and the kernels created from it so far.
pub struct OpenClProgram {
    // Declaration order is drop order: kernels, program, then the device.
    kernels: Mutex<HashMap<String, Arc<Mutex<Kernel>>>>,
    program: Program,
    device: Arc<OpenClDevice>,
}

impl OpenClProgram {
    fn new(program: Program, device: Arc<OpenClDevice>) -> Self {
        OpenClProgram {
            kernels: Mutex::new(HashMap::new()),
            program,
            device,
        }
    }

    /// The device the program was built for.
    pub fn device(&self) -> &Arc<OpenClDevice> {
        &self.device
    }

    /// The kernel `symbol`, created on first use. A kernel's arguments are
    /// state, so each kernel object is used by one launch at a time.
    fn kernel(&self, symbol: &str) -> Result<Arc<Mutex<Kernel>>, BackendError> {
        let mut kernels = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kernel) = kernels.get(symbol) {
            return Ok(kernel.clone());
        }
        let missing = || BackendError::MissingSymbol {
            backend: FAMILY,
            symbol: symbol.to_string(),
        };
        if !gpu::is_identifier(symbol) {
            return Err(missing());
        }
        let kernel = Kernel::create(&self.program, symbol).map_err(|_| missing())?;
        let kernel = Arc::new(Mutex::new(kernel));
        kernels.insert(symbol.to_string(), kernel.clone());
        Ok(kernel)
    }
}

impl std::fmt::Debug for OpenClProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClProgram")
            .field("device", &self.device)
            .field("kernels", &self.program.kernel_names())
            .finish()
    }
}

/// The OpenCL backend, bound to one device: [`OpenClDriver`] under the
/// generic GPU backend.
pub type OpenCl = GpuBackend<OpenClDriver>;

/// OpenCL's side of [`GpuBackend`]: it keeps nothing besides the device.
#[derive(Debug)]
pub struct OpenClDriver;

/// A device as enumerated, before a context exists.
struct Found {
    id: cl_device_id,
    name: String,
    platform: Platform,
}

/// Every device of every platform, in [`OpenClConfig::device`] order. The
/// caller holds `DEVICE_STATE`.
fn enumerate() -> Result<Vec<Found>, String> {
    let platforms = get_platforms().map_err(|e| {
        if e == ClError(DLOPEN_RUNTIME_LOAD_FAILED) {
            "the OpenCL runtime (libOpenCL.so.1, an ICD loader) was not found; \
             install one and a driver, e.g. `ocl-icd-libopencl1 pocl-opencl-icd`"
                .to_string()
        } else {
            format!("no OpenCL platform ({e}); install a driver (ICD), e.g. `pocl-opencl-icd`")
        }
    })?;
    let mut found = Vec::new();
    for platform in platforms {
        // A platform without devices answers CL_DEVICE_NOT_FOUND: skip it.
        for id in platform.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default() {
            let id = id as cl_device_id;
            let name = Device::new(id).name().unwrap_or_else(|e| format!("<{e}>"));
            found.push(Found {
                id,
                name,
                platform: Platform::new(platform.id()),
            });
        }
    }
    if found.is_empty() {
        return Err("no OpenCL device: the installed platforms list none".into());
    }
    Ok(found)
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    gpu::unavailable(FAMILY, reason)
}

/// What `kcache backends` shows for OpenCL. Never panics; needs no GPU.
pub fn probe() -> BackendInfo {
    let mut info = gpu::info(FAMILY);
    let _serialized = device_state();
    match enumerate() {
        Ok(found) => {
            info.available = true;
            let mut versions: Vec<String> = Vec::new();
            for device in &found {
                let version = device.platform.version().unwrap_or_default();
                if !versions.contains(&version) {
                    versions.push(version);
                }
                info.devices.push(device.name.clone());
            }
            info.version = Some(versions.join("; "));
        }
        Err(reason) => info.reason = Some(reason),
    }
    info
}

impl Driver for OpenClDriver {
    type Config = OpenClConfig;
    type Device = OpenClDevice;
    type Program = OpenClProgram;
    type Image<'a> = &'a [u8];

    const FAMILY: &'static str = FAMILY;
    const LANGUAGE: Language = Language::OpenCl;
    const TOOLCHAIN: Toolchain = Toolchain::OpenCl;
    const KEY_VERSION: u32 = 1;

    /// A context and an in-order queue on the configured device.
    fn open(config: &OpenClConfig) -> Result<Opened<Self>, BackendError> {
        let _serialized = device_state();
        let mut found = enumerate().map_err(unavailable)?;
        let count = found.len();
        if config.device >= count {
            return Err(unavailable(format!(
                "no OpenCL device {} (there are {count})",
                config.device
            )));
        }
        let Found { id, name, platform } = found.swap_remove(config.device);
        let cl_device = Device::new(id);
        let context = Context::from_device(&cl_device)
            .map_err(|e| unavailable(format!("cannot create a context on {name}: {e}")))?;
        let queue = CommandQueue::create_default_with_properties(&context, 0, 0)
            .map_err(|e| unavailable(format!("cannot create a queue on {name}: {e}")))?;
        let identity = format!(
            "opencl;platform={} {};device={};driver={};version={};c={};env={}",
            platform.name().unwrap_or_default(),
            platform.version().unwrap_or_default(),
            name,
            cl_device.driver_version().unwrap_or_default(),
            cl_device.version().unwrap_or_default(),
            cl_device.opencl_c_version().unwrap_or_default(),
            pocl_environment(),
        );
        let device = Arc::new(OpenClDevice {
            queue: ManuallyDrop::new(queue),
            context: ManuallyDrop::new(context),
            id,
            index: config.device,
            name,
        });
        Ok(Opened {
            driver: OpenClDriver,
            device: Some(device),
            index: config.device,
            identity,
        })
    }

    fn compile(
        &self,
        device: Option<Arc<OpenClDevice>>,
        job: &CompileJob<'_>,
        source: &str,
    ) -> Result<Compiled<OpenClProgram>, BackendError> {
        compile_on(&gpu::opened(FAMILY, device)?, job, source)
    }

    fn check_binary<'a>(&self, binary: &'a [u8], _: &[&str]) -> Result<&'a [u8], BackendError> {
        let fail = |reason: String| BackendError::Load {
            backend: FAMILY,
            reason,
        };
        let payload = gpu::unseal(MAGIC, FORMAT_VERSION, binary).map_err(fail)?;
        if payload.is_empty() {
            return Err(fail("empty program binary".into()));
        }
        Ok(payload)
    }

    fn load(
        &self,
        device: Option<Arc<OpenClDevice>>,
        payload: &[u8],
        _: &[&str],
    ) -> Result<Arc<OpenClProgram>, BackendError> {
        load_on(&gpu::opened(FAMILY, device)?, payload)
    }

    fn check_symbols(&self, program: &OpenClProgram, symbols: &[&str]) -> Result<(), BackendError> {
        for symbol in symbols {
            program.kernel(symbol)?;
        }
        Ok(())
    }

    fn launch(
        &self,
        program: &OpenClProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let fail = gpu::launch_error(FAMILY, symbol);
        let device = &program.device;
        let kernel = program.kernel(symbol)?;
        let kernel = kernel.lock().unwrap_or_else(|e| e.into_inner());

        let expected = kernel
            .num_args()
            .map_err(|e| fail(format!("cannot query the kernel's arguments: {e}")))?
            as usize;
        let given = launch.buffers.len() + launch.scalars.len();
        if expected != given {
            return Err(fail(format!(
                "the kernel takes {expected} arguments, the launch gives {given} ({} buffers, {} scalars)",
                launch.buffers.len(),
                launch.scalars.len()
            )));
        }

        // OpenCL refuses zero-sized buffers: an empty one is backed by one
        // element that is never read back.
        let mut buffers = Vec::with_capacity(launch.buffers.len());
        for (i, data) in launch.buffers.iter_mut().enumerate() {
            let mut one = [0f32];
            let host: &mut [f32] = if data.is_empty() { &mut one } else { data };
            // SAFETY: COPY_HOST_PTR reads `host.len()` floats from a live slice.
            let buffer = unsafe {
                Buffer::<f32>::create(
                    &device.context,
                    CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                    host.len(),
                    host.as_mut_ptr() as *mut c_void,
                )
            }
            .map_err(|e| fail(format!("cannot create buffer {i}: {e}")))?;
            buffers.push(buffer);
        }
        for (i, buffer) in buffers.iter().enumerate() {
            let mem: cl_mem = buffer.get();
            // SAFETY: argument i is a pointer parameter (the calling convention).
            unsafe { kernel.set_arg(i as u32, &mem) }
                .map_err(|e| fail(format!("argument {i} (buffer): {e}")))?;
        }
        for (j, scalar) in launch.scalars.iter().enumerate() {
            let i = buffers.len() + j;
            // SAFETY: argument i is an int parameter (the calling convention).
            unsafe { kernel.set_arg(i as u32, scalar) }
                .map_err(|e| fail(format!("argument {i} (scalar): {e}")))?;
        }

        let local = gpu::local_size(launch);
        let mut global = gpu::global_size(launch);
        if let Some(local) = local {
            let groups = gpu::group_count(global, local);
            global = [0, 1, 2].map(|d| groups[d] * local[d]);
        }
        let local_ptr = local.as_ref().map_or(std::ptr::null(), |l| l.as_ptr());
        // SAFETY: the pointers are to 3-element arrays that outlive the call.
        unsafe {
            device.queue.enqueue_nd_range_kernel(
                kernel.get(),
                3,
                std::ptr::null(),
                global.as_ptr(),
                local_ptr,
                &[],
            )
        }
        .map_err(|e| fail(format!("clEnqueueNDRangeKernel: {e}")))?;
        for (i, (buffer, data)) in buffers.iter().zip(launch.buffers.iter_mut()).enumerate() {
            if data.is_empty() {
                continue;
            }
            // SAFETY: a blocking read into a slice of the buffer's length.
            unsafe {
                device
                    .queue
                    .enqueue_read_buffer(buffer, CL_BLOCKING, 0, data, &[])
            }
            .map_err(|e| fail(format!("cannot read buffer {i} back: {e}")))?;
        }
        Ok(())
    }
}

fn build_log(device: &OpenClDevice, program: &Program) -> String {
    program
        .get_build_log(device.id)
        .unwrap_or_else(|e| format!("(no build log: {e})"))
}

/// Builds a group's program from source on `device`.
fn compile_on(
    device: &Arc<OpenClDevice>,
    job: &CompileJob<'_>,
    source: &str,
) -> Result<Compiled<OpenClProgram>, BackendError> {
    let fail = gpu::compile_error(FAMILY, job);
    let mut program = Program::create_from_source(&device.context, source)
        .map_err(|e| fail(format!("clCreateProgramWithSource: {e}")))?;
    if let Err(e) = program.build(&[device.id], &job.options.join(" ")) {
        let log = build_log(device, &program);
        return Err(fail(if e == ClError(CL_BUILD_PROGRAM_FAILURE) {
            log
        } else {
            format!("clBuildProgram: {e}\n{log}")
        }));
    }
    let binary = program
        .get_binaries()
        .map_err(|e| fail(format!("cannot read the program binary: {e}")))?
        .into_iter()
        .next()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| fail("the driver returned no program binary".into()))?;
    let program = OpenClProgram::new(program, device.clone());
    for kernel in job.kernels {
        program.kernel(kernel.symbol).map_err(|_| {
            fail(format!(
                "the program built but has no kernel `{}`; kernels: {}",
                kernel.symbol,
                program.program.kernel_names()
            ))
        })?;
    }
    Ok(Compiled {
        program: Arc::new(program),
        binary: gpu::seal(MAGIC, FORMAT_VERSION, &binary),
        uncacheable: None,
    })
}

/// Rebuilds a program from its (unsealed) driver binary on `device`.
fn load_on(device: &Arc<OpenClDevice>, binary: &[u8]) -> Result<Arc<OpenClProgram>, BackendError> {
    let fail = |reason: String| BackendError::Load {
        backend: FAMILY,
        reason,
    };
    // SAFETY: the device belongs to the context.
    let mut program =
        unsafe { Program::create_from_binary(&device.context, &[device.id], &[binary]) }
            .map_err(|e| fail(format!("clCreateProgramWithBinary: {e}")))?;
    if let Err(e) = program.build(&[device.id], "") {
        return Err(fail(format!(
            "clBuildProgram from the binary: {e}\n{}",
            build_log(device, &program)
        )));
    }
    Ok(Arc::new(OpenClProgram::new(program, device.clone())))
}

/// PoCL's build variables as the driver sees them (`POCL_EXTRA_BUILD_FLAGS`
/// adds options to every build: review 2026-12-02), for the identity: every
/// `POCL_` variable but those that only say where or whether PoCL keeps its
/// own cache or what it logs, sorted, one `NAME=VALUE` per line.
fn pocl_environment() -> String {
    const INERT: &[&str] = &[
        "POCL_KERNEL_CACHE",
        "POCL_CACHE_DIR",
        "POCL_DEBUG",
        "POCL_DEBUG_LLVM_PASSES",
    ];
    let mut vars: Vec<String> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            (k.starts_with("POCL_") && !INERT.contains(&k.as_str()))
                .then(|| format!("{k}={}", v.to_string_lossy()))
        })
        .collect();
    vars.sort();
    vars.join("\n")
}
