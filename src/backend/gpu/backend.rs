//! The one [`Backend`] implementation every GPU API shares, over a small
//! [`Driver`] trait: what differs between OpenCL, CUDA and Vulkan is how a
//! device is opened, how a group compiles and a program loads on it, and how
//! a kernel launches. Checking jobs, keying, the per-device handle cache and
//! the teardown contract ([`Lifecycle`]) are written once, here.

use std::sync::Arc;

use super::keys::{self, Toolchain};
use super::{check_job, concatenate, Lifecycle};
use crate::backend::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, Language, Launch,
};
use crate::cache::guarded::KernelCache;
use crate::cache::hooks::{self, Hooks};

/// What a GPU API brings to [`GpuBackend`].
pub trait Driver: Send + Sync + Sized + 'static {
    /// How the backend is configured (which device, which tools).
    type Config;
    /// One opened device, shared by the backend and every program on it.
    type Device: Send + Sync + 'static;
    /// A loaded program.
    type Program: Send + Sync + 'static;
    /// A program's bytes once checked, ready to load on a device.
    type Image<'a>;

    /// The family name: `opencl`, `cuda`, `vulkan`.
    const FAMILY: &'static str;
    /// The language kernels are written in.
    const LANGUAGE: Language;
    /// Where the compiler looks for includes and what it predefines.
    const TOOLCHAIN: Toolchain;
    /// See [`Backend::isolates_kernels`].
    const ISOLATES_KERNELS: bool = false;
    /// See [`Backend::key_version`]; each driver keeps its own.
    const KEY_VERSION: u32;

    /// Opens the configured device (where the API needs one to compile).
    fn open(config: &Self::Config) -> Result<Opened<Self>, BackendError>;

    /// Refuses a job's options before any compile or cache lookup.
    fn check_options(&self, _job: &CompileJob<'_>) -> Result<(), BackendError> {
        Ok(())
    }

    /// Compiles a checked `job`, whose kernels concatenated are `source`,
    /// on `device` (`None` where the backend runs compile only, or once its
    /// device was destroyed).
    fn compile(
        &self,
        device: Option<Arc<Self::Device>>,
        job: &CompileJob<'_>,
        source: &str,
    ) -> Result<Compiled<Self::Program>, BackendError>;

    /// Checks `binary` before any driver sees it; `symbols` must be in it.
    fn check_binary<'a>(
        &self,
        binary: &'a [u8],
        symbols: &[&str],
    ) -> Result<Self::Image<'a>, BackendError>;

    /// Loads a checked image on `device`.
    fn load(
        &self,
        device: Option<Arc<Self::Device>>,
        image: Self::Image<'_>,
        symbols: &[&str],
    ) -> Result<Arc<Self::Program>, BackendError>;

    /// Checks a program the handle cache answered (loaded once for other
    /// symbols, perhaps) holds `symbols`.
    fn check_symbols(
        &self,
        _program: &Self::Program,
        _symbols: &[&str],
    ) -> Result<(), BackendError> {
        Ok(())
    }

    /// Runs `symbol` from `program` on `launch`'s data.
    fn launch(
        &self,
        program: &Self::Program,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError>;
}

/// What [`Driver::open`] found.
pub struct Opened<D: Driver> {
    /// The driver's own state (tools, libraries, target).
    pub driver: D,
    /// The device, where one is open.
    pub device: Option<Arc<D::Device>>,
    /// The device's index, as the configuration named it.
    pub index: usize,
    /// See [`Backend::identity`].
    pub identity: String,
}

/// A GPU backend: a [`Driver`] bound to one device.
pub struct GpuBackend<D: Driver> {
    driver: D,
    lifecycle: Lifecycle<D::Device, D::Program>,
    identity: String,
}

impl<D: Driver> std::fmt::Debug for GpuBackend<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBackend")
            .field("family", &D::FAMILY)
            .field("identity", &self.identity)
            .field("lifecycle", &self.lifecycle)
            .finish()
    }
}

impl<D: Driver> GpuBackend<D> {
    /// Opens the configured device; the handle cache listens to the
    /// process's hooks ([`hooks::global`]). Returns
    /// [`BackendError::Unavailable`] when the API's library, tools or device
    /// are missing (CUDA without a device runs compile only instead).
    pub fn new(config: &D::Config) -> Result<Self, BackendError> {
        Self::with_hooks(config, hooks::global())
    }

    /// [`GpuBackend::new`], with the handle cache's device-destroy listener
    /// registered on `hooks` (and teardown notifications sent there).
    pub fn with_hooks(config: &D::Config, hooks: &Hooks) -> Result<Self, BackendError> {
        let Opened {
            driver,
            device,
            index,
            identity,
        } = D::open(config)?;
        Ok(GpuBackend {
            driver,
            lifecycle: Lifecycle::new(D::FAMILY, index, device, hooks),
            identity,
        })
    }

    /// The driver's own state.
    pub(crate) fn driver(&self) -> &D {
        &self.driver
    }

    /// The device this backend compiles for and runs on; `None` without one
    /// (compile only) and once [`GpuBackend::destroy_device`] ran.
    pub fn device(&self) -> Option<Arc<D::Device>> {
        self.lifecycle.current()
    }

    /// The per-device handle cache of loaded programs (for inspection; the
    /// backend fills and empties it). A compiled group's entry holds its
    /// bytes; a loaded program's holds none.
    pub fn kernel_cache(&self) -> &KernelCache<Compiled<D::Program>> {
        self.lifecycle.kernels()
    }

    /// Tears the device down as the teardown contract asks: notifies
    /// device-destroy listeners of `(family, index)` first (this backend's
    /// cache evicts the device's programs, the layers above forget theirs),
    /// then lets go of the device, and only then reports a listener failure
    /// ([`BackendError::Teardown`]). Programs handed out stay usable and keep
    /// their device alive until the last is dropped; the backend compiles
    /// and loads nothing afterwards. Calling it again only notifies again.
    pub fn destroy_device(&self) -> Result<(), BackendError> {
        self.lifecycle.destroy_device()
    }
}

impl<D: Driver> Backend for GpuBackend<D> {
    type Program = D::Program;

    fn family(&self) -> &'static str {
        D::FAMILY
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        keys::key_extras(D::FAMILY, D::TOOLCHAIN, kernel, options)
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<D::Program>, BackendError> {
        check_job(D::FAMILY, job)?;
        self.driver.check_options(job)?;
        let source = concatenate(job);
        // The handle cache keys on what the program key covers besides the
        // text (the headers the group reads), so a changed header misses.
        let (extras, uncacheable) = keys::group_key_part(D::FAMILY, D::TOOLCHAIN, job);
        let keyed = format!("{source}{extras}");
        let mut compiled = self.lifecycle.compile(job, &keyed, |device| {
            self.driver.compile(device, job, &source)
        })?;
        compiled.uncacheable = uncacheable;
        Ok(compiled)
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<D::Program>, BackendError> {
        let image = self.driver.check_binary(binary, symbols)?;
        let program = self
            .lifecycle
            .load(binary, |device| self.driver.load(device, image, symbols))?;
        self.driver.check_symbols(&program, symbols)?;
        Ok(program)
    }

    fn language(&self) -> Language {
        D::LANGUAGE
    }

    fn key_version(&self) -> u32 {
        D::KEY_VERSION
    }

    fn device_index(&self) -> usize {
        self.lifecycle.index()
    }

    fn isolates_kernels(&self) -> bool {
        D::ISOLATES_KERNELS
    }

    fn can_run(&self) -> bool {
        self.device().is_some()
    }

    fn launch(
        &self,
        program: &D::Program,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        self.driver.launch(program, symbol, launch)
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.lifecycle.clear()
    }
}
