//! Vulkan
