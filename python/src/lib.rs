//! `kcache._kcache`: the Rust side of the Python package `kcache` (see
//! `python/kcache/__init__.pyi` for the API as Python sees it).
//!
//! Every call that compiles or touches a store releases the GIL
//! (`Python::detach`), so Python threads run while kcache works.

use pyo3::prelude::*;

mod canon;
mod capture;
mod errors;
mod resolver;
mod store;

#[pymodule]
fn _kcache(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KcacheError", py.get_type::<errors::KcacheError>())?;
    m.add("StoreError", py.get_type::<errors::StoreError>())?;
    m.add("CompileError", py.get_type::<errors::CompileError>())?;
    m.add(
        "BackendUnavailableError",
        py.get_type::<errors::BackendUnavailableError>(),
    )?;
    m.add("RefusedError", py.get_type::<errors::RefusedError>())?;
    m.add_function(wrap_pyfunction!(canon::canon, m)?)?;
    m.add_function(wrap_pyfunction!(canon::program_key, m)?)?;
    m.add_function(wrap_pyfunction!(canon::digest_parts, m)?)?;
    m.add_class::<canon::Canonical>()?;
    m.add_class::<store::Store>()?;
    m.add_class::<store::MemoryStore>()?;
    m.add_class::<store::FileStore>()?;
    m.add_class::<store::SqliteStore>()?;
    m.add_class::<store::RedisStore>()?;
    m.add_class::<store::TieredStore>()?;
    m.add_class::<store::Lease>()?;
    m.add_class::<resolver::Kernel>()?;
    m.add_class::<resolver::Resolver>()?;
    m.add_class::<resolver::Answer>()?;
    m.add_class::<resolver::Batch>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
