//! The CUDA driver side: a device's primary context and stream, opened
//! through `cudarc` with its panics caught.

use std::ffi::c_int;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

/// One CUDA device: its primary context and the stream kcache uses on it.
pub struct CudaDevice {
    pub(super) stream: Arc<CudaStream>,
    pub(super) context: Arc<CudaContext>,
    pub(super) index: usize,
    pub(super) name: String,
    pub(super) capability: (i32, i32),
}

impl CudaDevice {
    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The compute capability, e.g. `(9, 0)`.
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The device's primary context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("capability", &self.capability)
            .finish()
    }
}

/// Runs a driver call, turning a `cudarc` panic (a missing library or
/// symbol) into an error: the backend must never panic on a machine without
/// CUDA.
pub(super) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            Err(format!("{what}: {message}"))
        }
    }
}

/// Whether the driver library is present, and how many devices it has.
pub(super) fn device_count() -> Result<usize, String> {
    // SAFETY: only tries to dlopen the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so.1 not found)".into());
    }
    guarded("the CUDA driver", || {
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| format!("no CUDA device (cuInit: {e})"))
    })
}

/// `NVIDIA H200 (sm_90)`, without creating a context.
pub(super) fn describe_device(index: usize) -> Result<String, String> {
    use cudarc::driver::result::device;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let fail = |e: cudarc::driver::DriverError| format!("device {index}: {e}");
    let dev = device::get(index as c_int).map_err(fail)?;
    let name = device::get_name(dev).map_err(fail)?;
    // SAFETY: `dev` is a valid device handle from cuDeviceGet.
    let (major, minor) = unsafe {
        (
            device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(fail)?,
            device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(fail)?,
        )
    };
    Ok(format!("{name} (sm_{major}{minor})"))
}

pub(super) fn open_device(index: usize) -> Result<CudaDevice, String> {
    let count = device_count()?;
    if index >= count {
        return Err(format!("no CUDA device {index} (there are {count})"));
    }
    guarded("the CUDA driver", || {
        let context = CudaContext::new(index).map_err(|e| format!("device {index}: {e}"))?;
        let name = context.name().map_err(|e| format!("device {index}: {e}"))?;
        let capability = context
            .compute_capability()
            .map_err(|e| format!("device {index}: {e}"))?;
        let stream = context
            .new_stream()
            .map_err(|e| format!("device {index}: cannot create a stream: {e}"))?;
        Ok(CudaDevice {
            stream,
            context,
            index,
            name,
            capability,
        })
    })
}

// ---------------------------------------------------------- architecture ---
