//! opencl
