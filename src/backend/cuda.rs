//! CUDA
