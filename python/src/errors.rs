//! kcache's errors as Python exceptions: the compiler's log travels as the
//! exception's `log` attribute, and nothing kcache reports ever panics
//! across the boundary.

use kcache::backend::BackendError;
use kcache::resolve::ResolveError;
use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;

pyo3::create_exception!(
    kcache,
    KcacheError,
    PyException,
    "Any error kcache reports."
);
pyo3::create_exception!(
    kcache,
    StoreError,
    PyOSError,
    "A store could not be opened, read or written."
);
pyo3::create_exception!(
    kcache,
    CompileError,
    KcacheError,
    "The compiler rejected a kernel; `log` holds its diagnostics."
);
pyo3::create_exception!(
    kcache,
    BackendUnavailableError,
    KcacheError,
    "The backend's compiler, library or device is missing."
);
pyo3::create_exception!(
    kcache,
    RefusedError,
    KcacheError,
    "kcache will not key or compile this (an option with side effects, an input the key cannot see)."
);

/// An error and its sources, joined by `: `, each said once.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

pub fn store_error(e: &kcache::store::StoreError) -> PyErr {
    StoreError::new_err(chain(e))
}

/// A backend's error as the exception it is.
pub fn backend_error(py: Python<'_>, e: &BackendError, kernels: &[String]) -> PyErr {
    match e {
        BackendError::Unavailable { .. } => BackendUnavailableError::new_err(chain(e)),
        BackendError::Refused { .. } => RefusedError::new_err(chain(e)),
        BackendError::Compile { backend, log, .. } => {
            let names: Vec<String> = kernels.iter().map(|k| format!("`{k}`")).collect();
            let log = log.trim_end();
            let sep = if log.is_empty() { "" } else { ":\n" };
            let err = CompileError::new_err(format!(
                "compile of {} failed ({backend}){sep}{log}",
                names.join(", ")
            ));
            with_attrs(py, err, log, kernels)
        }
        _ => KcacheError::new_err(chain(e)),
    }
}

fn with_attrs(py: Python<'_>, err: PyErr, log: &str, kernels: &[String]) -> PyErr {
    let value = err.value(py);
    // Attributes on a fresh exception instance cannot fail but for memory.
    let _ = value.setattr("log", log);
    let _ = value.setattr("kernels", kernels.to_vec());
    err
}

pub fn resolve_error(py: Python<'_>, e: &ResolveError) -> PyErr {
    match e {
        ResolveError::Compile {
            kernels, source, ..
        } => backend_error(py, source, kernels),
        ResolveError::Key { symbol, source } => match source {
            BackendError::Refused { .. } | BackendError::Unavailable { .. } => {
                backend_error(py, source, std::slice::from_ref(symbol))
            }
            _ => KcacheError::new_err(chain(e)),
        },
        ResolveError::Panicked { .. } => KcacheError::new_err(chain(e)),
    }
}
