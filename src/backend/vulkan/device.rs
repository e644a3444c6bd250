//! Opening a Vulkan device: the instance, the logical device and its
//! compute queue.

use std::sync::Mutex;

use ash::vk;

/// One Vulkan device: the instance, the logical device and its compute
/// queue. Shared by the backend and every program built on it.
pub struct VulkanDevice {
    pub(super) device: ash::Device,
    pub(super) instance: ash::Instance,
    pub(super) queue: Mutex<vk::Queue>,
    pub(super) queue_family: u32,
    pub(super) memory: vk::PhysicalDeviceMemoryProperties,
    pub(super) limits: vk::PhysicalDeviceLimits,
    pub(super) vendor_id: u32,
    pub(super) device_id: u32,
    pub(super) cache_uuid: [u8; vk::UUID_SIZE],
    pub(super) index: usize,
    pub(super) name: String,
    pub(super) driver: String,
    // Keeps the loader library loaded while anything above lives.
    pub(super) _entry: ash::Entry,
}

impl VulkanDevice {
    /// The device's name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver, e.g. `llvmpipe Mesa 22.3.6 (LLVM 15.0.6)`.
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// The device's index (see [`VulkanConfig::device`](super::VulkanConfig::device)).
    pub fn index(&self) -> usize {
        self.index
    }

    pub(super) fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.memory.memory_type_count).find(|&i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[i as usize]
                    .property_flags
                    .contains(flags)
        })
    }

    /// Whether pipeline-cache data's header names this device and driver.
    pub(super) fn accepts_cache(&self, data: &[u8]) -> bool {
        let word = |at: usize| {
            data.get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        data.len() > PIPELINE_CACHE_HEADER
            && word(0) == Some(PIPELINE_CACHE_HEADER as u32)
            && word(4) == Some(vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32)
            && word(8) == Some(self.vendor_id)
            && word(12) == Some(self.device_id)
            && data[16..32] == self.cache_uuid
    }
}

/// `VkPipelineCacheHeaderVersionOne`: 4 `u32`s and a UUID. Data no longer
/// than this holds no pipelines.
pub(super) const PIPELINE_CACHE_HEADER: usize = 16 + vk::UUID_SIZE;

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        // SAFETY: every program holds this device by Arc, so none is left;
        // waiting idle first lets in-flight work finish.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

impl std::fmt::Debug for VulkanDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("driver", &self.driver)
            .finish()
    }
}

pub(super) fn c_str_field(
    field: Result<&std::ffi::CStr, std::ffi::FromBytesUntilNulError>,
) -> String {
    field
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The loader and an instance; the caller destroys the instance.
pub(super) fn instance() -> Result<(ash::Entry, ash::Instance, u32), String> {
    // SAFETY: loading the Vulkan loader runs its initializers, which have no
    // preconditions.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| {
        format!(
            "the Vulkan loader (libvulkan.so.1) was not found ({e}); install it and a driver, \
             e.g. `libvulkan1 mesa-vulkan-drivers`"
        )
    })?;
    // SAFETY: a plain query.
    let loader = unsafe { entry.try_enumerate_instance_version() }
        .ok()
        .flatten()
        .unwrap_or(vk::API_VERSION_1_0);
    let api = loader.min(vk::API_VERSION_1_3);
    let app = vk::ApplicationInfo::default()
        .application_name(c"kcache")
        .api_version(api);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: a valid create info with no extensions or layers.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => format!(
            "no Vulkan driver (vkCreateInstance: {e}); install one, e.g. `mesa-vulkan-drivers` (lavapipe)"
        ),
        e => format!("vkCreateInstance: {e}"),
    })?;
    Ok((entry, instance, api))
}

/// A physical device's name and driver, without creating a logical device.
pub(super) fn describe(
    instance: &ash::Instance,
    api: u32,
    physical: vk::PhysicalDevice,
) -> (String, String) {
    // SAFETY: `physical` came from this instance.
    let properties = unsafe { instance.get_physical_device_properties(physical) };
    let name = c_str_field(properties.device_name_as_c_str());
    let mut driver = format!(
        "driver version {:#x}, Vulkan {}.{}.{}",
        properties.driver_version,
        vk::api_version_major(properties.api_version),
        vk::api_version_minor(properties.api_version),
        vk::api_version_patch(properties.api_version)
    );
    if api >= vk::API_VERSION_1_1 && properties.api_version >= vk::API_VERSION_1_2 {
        let mut ids = vk::PhysicalDeviceDriverProperties::default();
        let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut ids);
        // SAFETY: Vulkan 1.2 devices report driver properties; the
        // instance is 1.1 or later, so the call exists.
        unsafe { instance.get_physical_device_properties2(physical, &mut properties2) };
        driver = format!(
            "{} {}, {driver}",
            c_str_field(ids.driver_name_as_c_str()),
            c_str_field(ids.driver_info_as_c_str())
        );
    }
    (name, driver)
}

pub(super) fn open_device(index: usize) -> Result<VulkanDevice, String> {
    let (entry, instance, api) = instance()?;
    // Destroys the instance on every early return below.
    struct InstanceGuard(Option<ash::Instance>);
    impl Drop for InstanceGuard {
        fn drop(&mut self) {
            if let Some(instance) = self.0.take() {
                // SAFETY: nothing created from it survives.
                unsafe { instance.destroy_instance(None) };
            }
        }
    }
    let mut guard = InstanceGuard(Some(instance));
    let instance = guard.0.as_ref().expect("set above");

    // SAFETY: plain queries on a live instance.
    let physicals = unsafe { instance.enumerate_physical_devices() }
        .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))?;
    let count = physicals.len();
    let physical = *physicals
        .get(index)
        .ok_or_else(|| format!("no Vulkan device {index} (there are {count})"))?;
    let (name, driver) = describe(instance, api, physical);
    // SAFETY: plain queries on a device of this instance.
    let (properties, families, memory) = unsafe {
        (
            instance.get_physical_device_properties(physical),
            instance.get_physical_device_queue_family_properties(physical),
            instance.get_physical_device_memory_properties(physical),
        )
    };
    let queue_family = families
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or_else(|| format!("{name} has no compute queue"))? as u32;
    let priorities = [1.0f32];
    let queue_info = vk::DeviceQueueCreateInfo::default()
        .queue_family_index(queue_family)
        .queue_priorities(&priorities);
    let device_info =
        vk::DeviceCreateInfo::default().queue_create_infos(std::slice::from_ref(&queue_info));
    // SAFETY: a valid create info for a device of this instance.
    let device = unsafe { instance.create_device(physical, &device_info, None) }
        .map_err(|e| format!("vkCreateDevice on {name}: {e}"))?;
    // SAFETY: the family was requested with one queue.
    let queue = unsafe { device.get_device_queue(queue_family, 0) };
    Ok(VulkanDevice {
        device,
        instance: guard.0.take().expect("set above"),
        queue: Mutex::new(queue),
        queue_family,
        memory,
        limits: properties.limits,
        vendor_id: properties.vendor_id,
        device_id: properties.device_id,
        cache_uuid: properties.pipeline_cache_uuid,
        index,
        name,
        driver,
        _entry: entry,
    })
}
