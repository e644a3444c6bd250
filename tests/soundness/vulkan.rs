//! vulkan
