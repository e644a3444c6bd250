//! One launch: buffers, descriptor sets, a command buffer and a fence.

use ash::vk;

use super::device::VulkanDevice;
use super::program::Kernel;
use crate::backend::{gpu, Launch};

/// Everything one launch creates, destroyed when it goes out of scope (after
/// the launch's fence signalled, or before anything was submitted).
pub(super) struct LaunchResources<'a> {
    pub(super) device: &'a VulkanDevice,
    pub(super) buffers: Vec<(vk::Buffer, vk::DeviceMemory, *mut f32)>,
    pub(super) descriptor_pool: vk::DescriptorPool,
    pub(super) command_pool: vk::CommandPool,
    pub(super) fence: vk::Fence,
}

impl Drop for LaunchResources<'_> {
    fn drop(&mut self) {
        let d = &self.device.device;
        // SAFETY: created on this device; the launch either waited for its
        // fence or never submitted; null handles are ignored.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.command_pool, None);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            for &(buffer, memory, _) in &self.buffers {
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
            }
        }
    }
}

pub(super) fn run(
    device: &VulkanDevice,
    kernel: &Kernel,
    launch: &mut Launch,
) -> Result<(), String> {
    let d = &device.device;
    let reflection = &kernel.reflection;
    if launch.buffers.len() != reflection.buffers as usize
        || launch.scalars.len() != reflection.scalars as usize
    {
        return Err(format!(
            "the shader takes {} buffers and {} scalars, the launch gives {} and {}",
            reflection.buffers,
            reflection.scalars,
            launch.buffers.len(),
            launch.scalars.len()
        ));
    }
    let local = match reflection.local_size {
        Some(size) => size.map(|s| s.max(1) as usize),
        None => gpu::local_size(launch).unwrap_or([1, 1, 1]),
    };
    let groups = gpu::group_count(gpu::global_size(launch), local);
    let limit = device.limits.max_compute_work_group_count;
    let mut group_counts = [0u32; 3];
    for dim in 0..3 {
        group_counts[dim] = u32::try_from(groups[dim])
            .ok()
            .filter(|&g| g <= limit[dim])
            .ok_or_else(|| {
                format!(
                    "{} work-groups in dimension {dim}; {} allows {}",
                    groups[dim], device.name, limit[dim]
                )
            })?;
    }

    let mut resources = LaunchResources {
        device,
        buffers: Vec::new(),
        descriptor_pool: vk::DescriptorPool::null(),
        command_pool: vk::CommandPool::null(),
        fence: vk::Fence::null(),
    };
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    // SAFETY: every object is created on this device, recorded into a
    // command buffer of this launch, and destroyed by `resources` after the
    // fence signalled; mapped pointers cover `max(len, 1)` floats.
    unsafe {
        for data in &launch.buffers {
            // Vulkan refuses zero-sized buffers: an empty one gets one float.
            let len = data.len().max(1);
            let info = vk::BufferCreateInfo::default()
                .size((len * 4) as vk::DeviceSize)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
                .sharing_mode(vk::SharingMode::EXCLUSIVE);
            let buffer = d
                .create_buffer(&info, None)
                .map_err(|e| format!("vkCreateBuffer: {e}"))?;
            let requirements = d.get_buffer_memory_requirements(buffer);
            let Some(memory_type) = device.memory_type(requirements.memory_type_bits, host) else {
                d.destroy_buffer(buffer, None);
                return Err(format!(
                    "{} has no host-visible coherent memory for buffers",
                    device.name
                ));
            };
            let memory = match d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(requirements.size)
                    .memory_type_index(memory_type),
                None,
            ) {
                Ok(memory) => memory,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(format!("vkAllocateMemory: {e}"));
                }
            };
            resources
                .buffers
                .push((buffer, memory, std::ptr::null_mut()));
            d.bind_buffer_memory(buffer, memory, 0)
                .map_err(|e| format!("vkBindBufferMemory: {e}"))?;
            let mapped = d
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .map_err(|e| format!("vkMapMemory: {e}"))? as *mut f32;
            std::ptr::copy_nonoverlapping(data.as_ptr(), mapped, data.len());
            resources.buffers.last_mut().expect("pushed above").2 = mapped;
        }

        let mut descriptor_set = vk::DescriptorSet::null();
        if !launch.buffers.is_empty() {
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(reflection.buffers)];
            resources.descriptor_pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                )
                .map_err(|e| format!("vkCreateDescriptorPool: {e}"))?;
            let set_layouts = [kernel.set_layout];
            descriptor_set = d
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(resources.descriptor_pool)
                        .set_layouts(&set_layouts),
                )
                .map_err(|e| format!("vkAllocateDescriptorSets: {e}"))?[0];
            let infos: Vec<vk::DescriptorBufferInfo> = resources
                .buffers
                .iter()
                .map(|&(buffer, _, _)| {
                    vk::DescriptorBufferInfo::default()
                        .buffer(buffer)
                        .offset(0)
                        .range(vk::WHOLE_SIZE)
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .enumerate()
                .map(|(binding, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(descriptor_set)
                        .dst_binding(binding as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(std::slice::from_ref(info))
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
        }

        resources.command_pool = d
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(device.queue_family)
                    .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                None,
            )
            .map_err(|e| format!("vkCreateCommandPool: {e}"))?;
        let command_buffer = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(resources.command_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
            .map_err(|e| format!("vkAllocateCommandBuffers: {e}"))?[0];
        d.begin_command_buffer(
            command_buffer,
            &vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
        )
        .map_err(|e| format!("vkBeginCommandBuffer: {e}"))?;
        d.cmd_bind_pipeline(
            command_buffer,
            vk::PipelineBindPoint::COMPUTE,
            kernel.pipeline,
        );
        if descriptor_set != vk::DescriptorSet::null() {
            d.cmd_bind_descriptor_sets(
                command_buffer,
                vk::PipelineBindPoint::COMPUTE,
                kernel.layout,
                0,
                &[descriptor_set],
                &[],
            );
        }
        if !launch.scalars.is_empty() {
            let bytes: Vec<u8> = launch
                .scalars
                .iter()
                .flat_map(|s| s.to_le_bytes())
                .collect();
            d.cmd_push_constants(
                command_buffer,
                kernel.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                &bytes,
            );
        }
        d.cmd_dispatch(
            command_buffer,
            group_counts[0],
            group_counts[1],
            group_counts[2],
        );
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        d.cmd_pipeline_barrier(
            command_buffer,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        );
        d.end_command_buffer(command_buffer)
            .map_err(|e| format!("vkEndCommandBuffer: {e}"))?;

        resources.fence = d
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .map_err(|e| format!("vkCreateFence: {e}"))?;
        let command_buffers = [command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&command_buffers);
        {
            let queue = device.queue.lock().unwrap_or_else(|e| e.into_inner());
            d.queue_submit(*queue, &[submit], resources.fence)
                .map_err(|e| format!("vkQueueSubmit: {e}"))?;
        }
        // Once submitted, the resources may be released only after the fence
        // signalled: a failed wait leaves them to the device's teardown.
        if let Err(e) = d.wait_for_fences(&[resources.fence], true, u64::MAX) {
            std::mem::forget(resources);
            return Err(format!("vkWaitForFences: {e}"));
        }
        for (data, &(_, _, mapped)) in launch.buffers.iter_mut().zip(&resources.buffers) {
            std::ptr::copy_nonoverlapping(mapped, data.as_mut_ptr(), data.len());
        }
    }
    Ok(())
}
