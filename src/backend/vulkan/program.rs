//! A group's kernels as compute pipelines on one device.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;

use ash::vk;

use super::device::{VulkanDevice, PIPELINE_CACHE_HEADER};
use super::spirv;

/// One kernel's driver objects and interface.
pub(super) struct Kernel {
    pub(super) pipeline: vk::Pipeline,
    pub(super) layout: vk::PipelineLayout,
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) shader: vk::ShaderModule,
    pub(super) reflection: spirv::Reflection,
}

/// A group's kernels as compute pipelines on one device.
pub struct VulkanProgram {
    pub(super) kernels: HashMap<String, Kernel>,
    pub(super) pipeline_cache: vk::PipelineCache,
    // Last: the device outlives the objects destroyed in `drop`.
    pub(super) device: Arc<VulkanDevice>,
}

impl VulkanProgram {
    /// The device the program was built on.
    pub fn device(&self) -> &Arc<VulkanDevice> {
        &self.device
    }

    /// The program's kernels, sorted.
    pub fn symbols(&self) -> Vec<&str> {
        let mut symbols: Vec<&str> = self.kernels.keys().map(String::as_str).collect();
        symbols.sort_unstable();
        symbols
    }

    /// Builds the pipelines of `kernels` (symbol, SPIR-V), offering
    /// `cache_data` to the driver when it is this driver's.
    pub(super) fn build(
        device: &Arc<VulkanDevice>,
        kernels: &[(String, Vec<u8>)],
        cache_data: &[u8],
    ) -> Result<VulkanProgram, String> {
        let d = &device.device;
        let initial: &[u8] = if device.accepts_cache(cache_data) {
            cache_data
        } else {
            if !cache_data.is_empty() {
                tracing::debug!(
                    "vulkan: pipeline cache data is for another device or driver; ignored"
                );
            }
            &[]
        };
        let cache_info = vk::PipelineCacheCreateInfo::default().initial_data(initial);
        // SAFETY: a valid create info on a live device.
        let pipeline_cache = unsafe { d.create_pipeline_cache(&cache_info, None) }
            .map_err(|e| format!("vkCreatePipelineCache: {e}"))?;
        // From here on, `program`'s drop destroys whatever was created.
        let mut program = VulkanProgram {
            kernels: HashMap::new(),
            pipeline_cache,
            device: device.clone(),
        };
        for (symbol, spirv) in kernels {
            let kernel = program
                .kernel(symbol, spirv)
                .map_err(|e| format!("{symbol}: {e}"))?;
            program.kernels.insert(symbol.clone(), kernel);
        }
        Ok(program)
    }

    pub(super) fn kernel(&self, symbol: &str, spirv: &[u8]) -> Result<Kernel, String> {
        let device = &self.device;
        let d = &device.device;
        let words = spirv::words(spirv).ok_or("SPIR-V length is not whole words")?;
        let reflection = spirv::reflect(&words, symbol)?;
        let push_bytes = reflection.scalars * 4;
        if push_bytes > device.limits.max_push_constants_size {
            return Err(format!(
                "{} scalars need {push_bytes} bytes of push constants; {} allows {}",
                reflection.scalars, device.name, device.limits.max_push_constants_size
            ));
        }
        let entry = CString::new(symbol).map_err(|_| "symbol contains NUL")?;

        let mut kernel = Kernel {
            pipeline: vk::Pipeline::null(),
            layout: vk::PipelineLayout::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            shader: vk::ShaderModule::null(),
            reflection,
        };
        // Destroys what was created if a later step fails.
        let result = (|| -> Result<(), String> {
            // SAFETY: create infos built from live data on a live device;
            // the SPIR-V passed the structural check.
            unsafe {
                kernel.shader = d
                    .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
                    .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
                let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..kernel.reflection.buffers)
                    .map(|b| {
                        vk::DescriptorSetLayoutBinding::default()
                            .binding(b)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .descriptor_count(1)
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                    })
                    .collect();
                kernel.set_layout = d
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                        None,
                    )
                    .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
                let ranges: Vec<vk::PushConstantRange> = (push_bytes > 0)
                    .then(|| {
                        vk::PushConstantRange::default()
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                            .offset(0)
                            .size(push_bytes)
                    })
                    .into_iter()
                    .collect();
                let set_layouts = [kernel.set_layout];
                kernel.layout = d
                    .create_pipeline_layout(
                        &vk::PipelineLayoutCreateInfo::default()
                            .set_layouts(&set_layouts)
                            .push_constant_ranges(&ranges),
                        None,
                    )
                    .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(kernel.shader)
                    .name(&entry);
                let info = vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(kernel.layout);
                kernel.pipeline = d
                    .create_compute_pipelines(self.pipeline_cache, &[info], None)
                    .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(kernel),
            Err(e) => {
                self.destroy(&kernel);
                Err(e)
            }
        }
    }

    pub(super) fn destroy(&self, kernel: &Kernel) {
        let d = &self.device.device;
        // SAFETY: the objects were created on this device and are no longer
        // in use (launches wait for their fence); null handles are ignored.
        unsafe {
            d.destroy_pipeline(kernel.pipeline, None);
            d.destroy_pipeline_layout(kernel.layout, None);
            d.destroy_descriptor_set_layout(kernel.set_layout, None);
            d.destroy_shader_module(kernel.shader, None);
        }
    }

    /// The driver's pipeline-cache data, when it holds more than a header.
    pub(super) fn cache_data(&self) -> Vec<u8> {
        // SAFETY: the cache was created on this device.
        let data = unsafe {
            self.device
                .device
                .get_pipeline_cache_data(self.pipeline_cache)
        }
        .unwrap_or_default();
        if data.len() > PIPELINE_CACHE_HEADER {
            data
        } else {
            Vec::new()
        }
    }
}

impl Drop for VulkanProgram {
    fn drop(&mut self) {
        for kernel in self.kernels.values() {
            self.destroy(kernel);
        }
        // SAFETY: created on this device; no pipeline is being built.
        unsafe {
            self.device
                .device
                .destroy_pipeline_cache(self.pipeline_cache, None)
        };
    }
}

impl std::fmt::Debug for VulkanProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanProgram")
            .field("device", &self.device)
            .field("kernels", &self.symbols())
            .finish()
    }
}
