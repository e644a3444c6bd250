//! The Vulkan backend: GLSL compute shaders compiled to SPIR-V by glslang,
//! run through `ash` (the Vulkan loader opened at run time).
//!
//! # Kernels
//!
//! A kernel is a complete GLSL compute shader: its `#version` (450 or later),
//! its `layout(local_size_x = ...) in;`, and an entry function named by the
//! kernel's symbol (`void saxpy() { ... }`, not `main`). It follows the crate's
//! [`Launch`] convention: its `f32` buffers are `std430` storage buffers at
//! bindings `0..n` of set 0, in order, and its `i32` scalars are the members
//! of one `push_constant` block, in order. The launch must match the shader
//! exactly (so many buffers, so many scalars), which the backend checks.
//! The work-group size is the shader's `local_size_*`, so [`Launch::local`]
//! is used only by a shader that leaves it to specialization; the number of
//! work-groups is `ceil(global / local_size)`, and the shader guards its
//! index.
//!
//! # Compiling
//!
//! Each kernel is compiled on its own by `glslangValidator` (found on `PATH`,
//! or configured), all of a group's kernels at once, one process each. The
//! entry function keeps its name: the backend adds `#define <symbol> main`
//! after the `#version` line (with a `#line` directive, so diagnostics keep
//! their line numbers) and asks glslang for the entry point `<symbol>`
//! (`-e <symbol> --source-entrypoint main`); glslang's GLSL front end accepts
//! no other source entry point name. The option list goes to glslang; only
//! options that do not change where its input or output go are accepted
//! (`-D`, `-U`, `-O`, `-g`, `--target-env`, ...; see [`GLSLANG_OPTIONS`]).
//!
//! # Validation
//!
//! lavapipe does not validate SPIR-V, and invalid SPIR-V can crash a driver,
//! so every module is checked before a driver sees it: by `spirv-val` (from
//! SPIRV-Tools, when it is on `PATH`) at compile time, for the target
//! environment compiled for; and always, at compile and at load, by a
//! structural check of kcache's own: the SPIR-V header, every instruction's
//! length, a `GLCompute` entry point named by the symbol, and bindings and
//! push constants that follow the calling convention.
//!
//! # The program's bytes
//!
//! A small versioned container with a digest (see `Container`): the driver's
//! pipeline-cache data, when it holds more than its 32-byte header
//! (lavapipe's never does), then each kernel's symbol and SPIR-V. On load,
//! damaged bytes are refused before any driver call, and cache data is offered
//! to the driver only when its header names this device and driver.
//!
//! # Benchmarks
//!
//! Mesa keeps its own on-disk shader cache, which makes a cold pipeline build
//! look warm: set `MESA_SHADER_CACHE_DISABLE=true` when measuring.
//!
//! # Ownership
//!
//! A [`VulkanDevice`] owns the instance and the logical device. Every
//! [`VulkanProgram`] holds it by `Arc` and destroys its pipelines, layouts,
//! shader modules and pipeline cache in its own `drop`, so the device is
//! destroyed only after the last program built on it.
//!
//! # Teardown
//!
//! Programs live in a per-device handle cache
//! ([`KernelCache`], see
//! [`Vulkan::kernel_cache`]): compiling the same group, or loading the same
//! bytes, twice in a process answers the same program (the same pipelines).
//! The cache listens for device destroys of `vulkan` on the [`Hooks`] the
//! backend was built with ([`Vulkan::with_hooks`]; [`Vulkan::new`] uses the
//! process's). [`Backend::clear_cache`] clears it inside `around_clear`.
//!
//! [`Vulkan::destroy_device`] notifies device-destroy listeners of
//! `("vulkan", index)` first (evicting this device's programs here and the
//! memo of the layers above), then the backend lets go of its device. The
//! logical device and the instance are destroyed (`vkDeviceWaitIdle`,
//! `vkDestroyDevice`, `vkDestroyInstance`) when the last program handed out is
//! dropped, each program having destroyed its own pipelines first; until then
//! those programs stay usable. The backend compiles and loads nothing
//! afterwards.
//!
//! [`Backend::clear_cache`]: crate::backend::Backend::clear_cache
//! [`Hooks`]: crate::cache::hooks::Hooks
//! [`KernelCache`]: crate::cache::guarded::KernelCache

use std::path::PathBuf;
use std::sync::Arc;

use super::gpu::{self, Driver, GpuBackend, Opened, Toolchain};
use super::workdir;
use super::{BackendError, BackendInfo, CompileJob, Compiled, Language, Launch};

mod container;
mod device;
mod glslang;
mod launch;
mod program;
mod spirv;

use container::Container;
pub use device::VulkanDevice;
use device::{describe, instance, open_device};
use glslang::{check_options, compile_kernel, Tools};
use launch::run;
pub use program::VulkanProgram;

const FAMILY: &str = "vulkan";

/// The target environment glslang compiles for unless the options name one.
pub const DEFAULT_TARGET_ENV: &str = "vulkan1.0";

/// glslang options the backend passes through: flags (matched as prefixes
/// where they carry their value, like `-DNAME=1`), and options that take the
/// next element of the option list as their value. Everything else is refused,
/// since it could redirect glslang's input or output.
pub const GLSLANG_OPTIONS: GlslangOptions = GlslangOptions {
    prefixes: &["-D", "-U", "-O", "-g"],
    flags: &[
        "-g",
        "-R",
        "-w",
        "--suppress-warnings",
        "-r",
        "--relaxed-errors",
        "--nan-clamp",
        "--keep-uncalled",
        "--ku",
        "--enhanced-msgs",
        "--no-storage-format",
        "--nsf",
    ],
    with_value: &[
        "--target-env",
        "--glsl-version",
        "--define-macro",
        "--undef-macro",
        "--D",
        "--U",
    ],
};

/// See [`GLSLANG_OPTIONS`].
#[derive(Clone, Copy, Debug)]
pub struct GlslangOptions {
    /// Flags matched by prefix (their value is attached).
    pub prefixes: &'static [&'static str],
    /// Flags matched exactly.
    pub flags: &'static [&'static str],
    /// Options whose value is the next element of the list.
    pub with_value: &'static [&'static str],
}

/// How the Vulkan backend is set up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VulkanConfig {
    /// The device's index in the order the Vulkan loader enumerates them.
    pub device: usize,
    /// `glslangValidator`; `None` looks on `PATH`.
    pub glslang: Option<PathBuf>,
    /// `spirv-val`; `None` looks on `PATH`, and without one only the
    /// structural check runs.
    pub spirv_val: Option<PathBuf>,
}

// ------------------------------------------------------------- container ---

// ---------------------------------------------------------------- glslang ---

// ----------------------------------------------------------------- device ---

// ---------------------------------------------------------------- program ---

// ----------------------------------------------------------------- launch ---

// ---------------------------------------------------------------- backend ---

/// The Vulkan backend: [`VulkanDriver`] under the generic GPU backend.
pub type Vulkan = GpuBackend<VulkanDriver>;

/// Vulkan's side of [`GpuBackend`]: the tools that compile GLSL.
#[derive(Debug)]
pub struct VulkanDriver {
    tools: Tools,
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    gpu::unavailable(FAMILY, reason)
}

/// What `kcache backends` shows for Vulkan. Never panics; needs no GPU.
/// Available when the loader, a device and glslang are all present.
pub fn probe() -> BackendInfo {
    let mut info = gpu::info(FAMILY);
    let tools = Tools::find(&VulkanConfig::default());
    let devices = instance().and_then(|(_entry, instance, api)| {
        // SAFETY: plain queries on a live instance, destroyed right after.
        let found = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))
            .map(|physicals| {
                physicals
                    .into_iter()
                    .map(|p| {
                        let (name, driver) = describe(&instance, api, p);
                        format!("{name} ({driver})")
                    })
                    .collect::<Vec<_>>()
            });
        // SAFETY: nothing created from the instance survives.
        unsafe { instance.destroy_instance(None) };
        found
    });
    let mut reasons = Vec::new();
    match devices {
        Ok(devices) if devices.is_empty() => reasons.push(
            "no Vulkan device: install a driver, e.g. `mesa-vulkan-drivers` (lavapipe)".to_string(),
        ),
        Ok(devices) => info.devices = devices,
        Err(reason) => reasons.push(reason),
    }
    match &tools {
        Ok(tools) => {
            info.version = Some(tools.glslang_version.clone());
            if tools.spirv_val.is_none() && reasons.is_empty() {
                info.reason = Some(
                    "spirv-val not found (SPIRV-Tools): SPIR-V gets kcache's structural check only"
                        .into(),
                );
            }
        }
        Err(reason) => reasons.push(reason.clone()),
    }
    info.available = reasons.is_empty();
    if !reasons.is_empty() {
        info.reason = Some(reasons.join("; "));
    }
    info
}

impl Vulkan {
    /// Whether compiled SPIR-V goes through `spirv-val`.
    pub fn validates_with_spirv_val(&self) -> bool {
        self.driver().tools.spirv_val.is_some()
    }
}

impl VulkanDriver {
    /// Compiles a checked group's kernels to SPIR-V (one glslang process per
    /// kernel, all at once) and builds their pipelines on `device`.
    fn compile_on(
        &self,
        device: &Arc<VulkanDevice>,
        job: &CompileJob<'_>,
    ) -> Result<Compiled<VulkanProgram>, BackendError> {
        let fail = gpu::compile_error(FAMILY, job);
        let named_env = check_options(job.options).map_err(fail)?;
        let options_name_env = named_env.is_some();
        let target_env = named_env
            .clone()
            .unwrap_or_else(|| DEFAULT_TARGET_ENV.to_string());
        // Private (see `workdir`): glslang's input and output are read back.
        let dir = workdir::PrivateDir::create("glslang", None, false)
            .map_err(|e| fail(format!("cannot create a temporary directory: {e}")))?;
        let results: Vec<Result<Vec<u8>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = job
                .kernels
                .iter()
                .map(|kernel| {
                    let (tools, dir, env) = (&self.tools, dir.path(), target_env.as_str());
                    scope.spawn(move || {
                        compile_kernel(
                            tools,
                            dir,
                            kernel.symbol,
                            kernel.text,
                            job.options,
                            env,
                            options_name_env,
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("the glslang thread panicked".into()))
                })
                .collect()
        });
        let mut logs = Vec::new();
        let mut kernels = Vec::new();
        for (kernel, result) in job.kernels.iter().zip(results) {
            match result {
                Ok(spirv) => kernels.push((kernel.symbol.to_string(), spirv)),
                Err(log) => logs.push(log),
            }
        }
        if !logs.is_empty() {
            return Err(fail(logs.join("\n")));
        }
        let program = VulkanProgram::build(device, &kernels, &[]).map_err(fail)?;
        let binary = Container {
            pipeline_cache: program.cache_data(),
            kernels,
        }
        .encode();
        Ok(Compiled {
            program: Arc::new(program),
            binary,
            uncacheable: None,
        })
    }
}

impl Driver for VulkanDriver {
    type Config = VulkanConfig;
    type Device = VulkanDevice;
    type Program = VulkanProgram;
    type Image<'a> = Container;

    const FAMILY: &'static str = FAMILY;
    const LANGUAGE: Language = Language::Glsl;
    const TOOLCHAIN: Toolchain = Toolchain::Vulkan;
    const KEY_VERSION: u32 = 1;
    /// glslang compiles each kernel of a group as a shader of its own (the
    /// concatenation is the group's source only for its key).
    const ISOLATES_KERNELS: bool = true;

    /// Finds glslang (and spirv-val) and opens the configured device.
    /// Returns [`BackendError::Unavailable`] without a loader, a device or
    /// glslang.
    fn open(config: &VulkanConfig) -> Result<Opened<Self>, BackendError> {
        let tools = Tools::find(config).map_err(unavailable)?;
        workdir::sweep_temp_root();
        let device = open_device(config.device).map_err(unavailable)?;
        let identity = format!(
            "vulkan;glslang={};device={};driver={};cache={}",
            tools.glslang_version,
            device.name,
            device.driver,
            device
                .cache_uuid
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Ok(Opened {
            driver: VulkanDriver { tools },
            device: Some(Arc::new(device)),
            index: config.device,
            identity,
        })
    }

    fn compile(
        &self,
        device: Option<Arc<VulkanDevice>>,
        job: &CompileJob<'_>,
        _source: &str,
    ) -> Result<Compiled<VulkanProgram>, BackendError> {
        self.compile_on(&gpu::opened(FAMILY, device)?, job)
    }

    fn check_binary(&self, binary: &[u8], symbols: &[&str]) -> Result<Container, BackendError> {
        let container = Container::decode(binary).map_err(load_error)?;
        if let Some(missing) = symbols
            .iter()
            .find(|s| !container.kernels.iter().any(|(k, _)| k == *s))
        {
            return Err(BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: missing.to_string(),
            });
        }
        Ok(container)
    }

    fn load(
        &self,
        device: Option<Arc<VulkanDevice>>,
        container: Container,
        _: &[&str],
    ) -> Result<Arc<VulkanProgram>, BackendError> {
        VulkanProgram::build(
            &gpu::opened(FAMILY, device)?,
            &container.kernels,
            &container.pipeline_cache,
        )
        .map(Arc::new)
        .map_err(load_error)
    }

    fn launch(
        &self,
        program: &VulkanProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let kernel = program
            .kernels
            .get(symbol)
            .ok_or_else(|| BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: symbol.to_string(),
            })?;
        run(&program.device, kernel, launch).map_err(gpu::launch_error(FAMILY, symbol))
    }
}

fn load_error(reason: String) -> BackendError {
    BackendError::Load {
        backend: FAMILY,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::glslang::entry_as_main;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_entry_is_renamed_after_the_version_line_keeping_line_numbers() {
        let text = "// header\n#version 450\nlayout(local_size_x = 1) in;\nvoid k() {}\n";
        assert_eq!(
            entry_as_main(text, "k").unwrap(),
            "// header\n#version 450\n#define k main\n#line 3\nlayout(local_size_x = 1) in;\nvoid k() {}\n"
        );
        // Before GLSL 3.30, `#line N` numbers the next line N + 1.
        let old = "#version 310 es\nvoid k() {}";
        assert!(entry_as_main(old, "k").unwrap().contains("#line 2\n"));
        let old = "#version 150\nvoid k() {}";
        assert!(entry_as_main(old, "k").unwrap().contains("#line 1\n"));
        // A #version line without a newline still gets one.
        assert_eq!(
            entry_as_main("  #  version 450", "k").unwrap(),
            "  #  version 450\n#define k main\n#line 2\n"
        );
        assert!(entry_as_main("void k() {}", "k").is_err());
    }

    #[test]
    fn options_are_checked_against_the_allowed_list() {
        let ok =
            |list: &[&str]| check_options(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(ok(&["-DX=1", "-Os", "-g", "-g0", "-w"]), Ok(None));
        assert_eq!(
            ok(&["--target-env", "vulkan1.2", "-UX"]),
            Ok(Some("vulkan1.2".to_string()))
        );
        for bad in [
            &["-D"][..],
            &["-o", "x"],
            &["--stdin"],
            &["-S", "comp"],
            &["--target-env"],
            &["file.comp"],
        ] {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
    }

    fn symbol() -> impl Strategy<Value = String> {
        "[a-z_][a-z0-9_]{0,12}"
    }

    proptest! {
        #[test]
        fn containers_round_trip(
            pipeline_cache in proptest::collection::vec(any::<u8>(), 0..64),
            kernels in proptest::collection::vec(
                (symbol(), proptest::collection::vec(any::<u8>(), 0..64)),
                0..5,
            ),
        ) {
            let container = Container { pipeline_cache, kernels };
            let bytes = container.encode();
            prop_assert_eq!(Container::decode(&bytes), Ok(container));
            // Every truncation is an error, never a panic or a shorter program.
            for len in 0..bytes.len() {
                prop_assert!(Container::decode(&bytes[..len]).is_err());
            }
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(Container::decode(&longer).is_err());
        }

        #[test]
        fn reflection_never_panics_on_garbage(words in proptest::collection::vec(any::<u32>(), 0..64)) {
            let _ = spirv::reflect(&words, "k");
            let mut with_header = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
            with_header.extend(words);
            let _ = spirv::reflect(&with_header, "k");
        }
    }

    #[test]
    fn spirv_words_need_whole_words() {
        assert_eq!(spirv::words(&[3, 2, 35, 7]), Some(vec![0x0723_0203]));
        assert_eq!(spirv::words(&[1, 2, 3]), None);
        assert!(spirv::reflect(&[0x0723_0203, 0x10000, 0, 1], "k").is_err());
        assert!(spirv::reflect(&[0xdead_beef, 0x10000, 0, 1, 0], "k").is_err());
        // A header with no entry point.
        let err = spirv::reflect(&[0x0723_0203, 0x10000, 0, 1, 0], "k").unwrap_err();
        assert!(err.contains("no compute entry point named `k`"), "{err}");
    }
}
