//! kcache's stores in Python: bytes in, bytes out. `Store` is the common
//! base; `MemoryStore`, `FileStore` and `SqliteStore` open one.

use crate::errors::store_error;
use kcache::store::{
    FileStore as RsFile, FileStoreOptions, MemoryStore as RsMemory, SqliteOptions,
    SqliteStore as RsSqlite, Store as RsStore, DEFAULT_MAX_BYTES,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString};
use std::path::PathBuf;
use std::sync::Arc;

/// Key or value bytes: `bytes`, `bytearray` or (for keys) `str`, UTF-8
/// encoded; values may also be a `memoryview`.
pub fn key_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "key must be bytes, bytearray or str, not {}",
        obj.get_type().name()?
    )))
}

fn value_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let b = obj.call_method0("tobytes")?;
        return Ok(b.cast::<PyBytes>()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "value must be bytes, bytearray or memoryview, not {}",
        obj.get_type().name()?
    )))
}

fn max_bytes(max_bytes: Option<u64>) -> PyResult<u64> {
    match max_bytes {
        Some(0) => Err(PyValueError::new_err("max_bytes must be positive")),
        Some(n) => Ok(n),
        None => Ok(DEFAULT_MAX_BYTES),
    }
}

/// A store of compiled programs (the base of every store class).
#[pyclass(subclass, frozen, module = "kcache")]
pub struct Store {
    pub inner: Arc<dyn RsStore>,
    /// Whether calls release the GIL: a persistent store does I/O; for the
    /// in-memory one, releasing and taking back the GIL would cost more
    /// than the lookup.
    pub detach: bool,
}

impl Store {
    fn run<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&dyn RsStore) -> T + Send) -> T {
        let inner = &*self.inner;
        if self.detach {
            py.detach(|| f(inner))
        } else {
            f(inner)
        }
    }
}

#[pymethods]
impl Store {
    /// The value under `key`, or None. A corrupt entry is a miss (and removed).
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = key_bytes(key)?;
        let value = self
            .run(py, |inner| inner.get(&key))
            .map_err(|e| store_error(&e))?;
        Ok(value.map(|v| PyBytes::new(py, &v)))
    }

    /// Stores `value` under `key`, replacing any entry.
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = key_bytes(key)?;
        let value = value_bytes(value)?;
        self.run(py, |inner| inner.put(&key, &value))
            .map_err(|e| store_error(&e))
    }

    /// Removes `key`; whether it was there.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = key_bytes(key)?;
        self.run(py, |inner| inner.remove(&key))
            .map_err(|e| store_error(&e))
    }

    /// Removes every entry.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |inner| inner.clear())
            .map_err(|e| store_error(&e))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.run(py, |inner| inner.len())
            .map_err(|e| store_error(&e))
    }

    /// Writes out what the store buffers.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |inner| inner.flush())
            .map_err(|e| store_error(&e))
    }

    /// Entries, bytes, hits, misses, evictions, errors, corrupt.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .run(py, |inner| inner.stats())
            .map_err(|e| store_error(&e))?;
        let d = PyDict::new(py);
        d.set_item("entries", s.entries)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        d.set_item("evictions", s.evictions)?;
        d.set_item("errors", s.errors)?;
        d.set_item("corrupt", s.corrupt)?;
        Ok(d)
    }

    /// Checks every entry, removing corrupt ones: (checked, [reasons]).
    fn verify(&self, py: Python<'_>) -> PyResult<(u64, Vec<String>)> {
        let r = self
            .run(py, |inner| inner.verify())
            .map_err(|e| store_error(&e))?;
        let corrupt = r
            .corrupt
            .into_iter()
            .map(|c| format!("{}: {}", c.location, c.reason))
            .collect();
        Ok((r.checked, corrupt))
    }

    /// Evicts least recently used entries down to `max_bytes`; how many.
    fn prune(&self, py: Python<'_>, max_bytes: u64) -> PyResult<u64> {
        let r = self
            .run(py, |inner| inner.prune(max_bytes))
            .map_err(|e| store_error(&e))?;
        Ok(r.removed)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn __repr__(&self) -> String {
        format!("<kcache store: {}>", self.inner.describe())
    }
}

/// An in-process LRU store with a byte cap.
#[pyclass(extends = Store, frozen, module = "kcache")]
pub struct MemoryStore;

#[pymethods]
impl MemoryStore {
    #[new]
    #[pyo3(signature = (max_bytes=None))]
    fn new(max_bytes: Option<u64>) -> PyResult<PyClassInitializer<Self>> {
        let store = RsMemory::new(self::max_bytes(max_bytes)?);
        Ok(PyClassInitializer::from(Store {
            inner: Arc::new(store),
            detach: false,
        })
        .add_subclass(MemoryStore))
    }
}

/// One checksummed file per entry under `root`, safe across processes.
#[pyclass(extends = Store, frozen, module = "kcache")]
pub struct FileStore;

#[pymethods]
impl FileStore {
    #[new]
    #[pyo3(signature = (root, max_bytes=None))]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        max_bytes: Option<u64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let opts = FileStoreOptions {
            max_bytes: self::max_bytes(max_bytes)?,
            ..FileStoreOptions::default()
        };
        let store = py
            .detach(|| RsFile::open_with(&root, opts))
            .map_err(|e| store_error(&e))?;
        Ok(PyClassInitializer::from(Store {
            inner: Arc::new(store),
            detach: true,
        })
        .add_subclass(FileStore))
    }
}

/// One SQLite database (WAL) under `root`.
#[pyclass(extends = Store, frozen, module = "kcache")]
pub struct SqliteStore;

#[pymethods]
impl SqliteStore {
    #[new]
    #[pyo3(signature = (root, max_bytes=None))]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        max_bytes: Option<u64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let opts = SqliteOptions {
            max_bytes: self::max_bytes(max_bytes)?,
            ..SqliteOptions::default()
        };
        let store = py
            .detach(|| RsSqlite::open_with(&root, opts))
            .map_err(|e| store_error(&e))?;
        Ok(PyClassInitializer::from(Store {
            inner: Arc::new(store),
            detach: true,
        })
        .add_subclass(SqliteStore))
    }
}
