//! kcache's stores in Python: bytes in, bytes out. `Store` is the common
//! base; `MemoryStore`, `FileStore`, `SqliteStore` and `RedisStore` open
//! one, `TieredStore` composes them; `Lease` is a key's compile lease.

use crate::errors::store_error;
use kcache::store::{
    FileStore as RsFile, FileStoreOptions, Lease as RsLease, LeaseGrant, MemoryStore as RsMemory,
    RedisOptions, RedisStore as RsRedis, SqliteOptions, SqliteStore as RsSqlite, Store as RsStore,
    Tiered, DEFAULT_MAX_BYTES,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

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

    /// Takes `key`'s compile lease, waiting up to `wait` seconds while
    /// another process holds it (see `Lease`). Stores that cannot coordinate
    /// (the memory store) grant every lease at once; an error means the
    /// store cannot lease now, and the caller should compile anyway.
    #[pyo3(signature = (key, wait=60.0))]
    fn lease(&self, py: Python<'_>, key: &Bound<'_, PyAny>, wait: f64) -> PyResult<Lease> {
        let key = key_bytes(key)?;
        let wait = Duration::try_from_secs_f64(wait)
            .map_err(|_| PyValueError::new_err("wait must be a finite number of seconds >= 0"))?;
        // Always without the GIL: waiting for a lease may take seconds.
        let inner = &*self.inner;
        let grant = py
            .detach(|| inner.lease(&key, wait))
            .map_err(|e| store_error(&e))?;
        let (held, waited) = match grant {
            LeaseGrant::Free(l) => (Some(l), false),
            LeaseGrant::AfterWait(l) => (Some(l), true),
            LeaseGrant::TimedOut => (None, true),
        };
        Ok(Lease {
            timed_out: held.is_none(),
            held: Mutex::new(held),
            waited,
        })
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

/// A Redis server shared by many machines (see the README's Redis section).
/// Reads and writes never fail: an unreachable server is a miss, a skipped
/// write, and a lease the local tier of a `TieredStore` gives instead.
#[pyclass(extends = Store, frozen, module = "kcache")]
pub struct RedisStore;

#[pymethods]
impl RedisStore {
    #[new]
    #[pyo3(signature = (url=None, *, prefix=None, secret=None, ttl=None, timeout_ms=None,
        connect_timeout_ms=None, cooldown_ms=None, lease_ms=None, max_value=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        url: Option<String>,
        prefix: Option<String>,
        secret: Option<&Bound<'_, PyAny>>,
        ttl: Option<u64>,
        timeout_ms: Option<u64>,
        connect_timeout_ms: Option<u64>,
        cooldown_ms: Option<u64>,
        lease_ms: Option<u64>,
        max_value: Option<u64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        // No URL: the environment's whole configuration (KCACHE_REDIS_*);
        // a URL: the defaults, and only what the arguments say.
        let mut o = match url {
            Some(url) => RedisOptions::new(url),
            None => RedisOptions::from_env()
                .map_err(|e| store_error(&e))?
                .ok_or_else(|| {
                    PyValueError::new_err("no url given and KCACHE_REDIS_URL is unset")
                })?,
        };
        if let Some(p) = prefix {
            if p.is_empty() {
                return Err(PyValueError::new_err("prefix must not be empty"));
            }
            o.prefix = p;
        }
        if let Some(s) = secret {
            let s = key_bytes(s)?;
            if s.is_empty() {
                return Err(PyValueError::new_err("secret must not be empty"));
            }
            o = o.secret(&s);
        }
        if let Some(t) = ttl {
            o.ttl = (t > 0).then(|| Duration::from_secs(t));
        }
        let ms = |v: Option<u64>, name: &str, slot: &mut Duration| -> PyResult<()> {
            match v {
                Some(0) => Err(PyValueError::new_err(format!("{name} must be at least 1"))),
                Some(n) => {
                    *slot = Duration::from_millis(n);
                    Ok(())
                }
                None => Ok(()),
            }
        };
        ms(timeout_ms, "timeout_ms", &mut o.op_timeout)?;
        ms(
            connect_timeout_ms,
            "connect_timeout_ms",
            &mut o.connect_timeout,
        )?;
        ms(cooldown_ms, "cooldown_ms", &mut o.cooldown)?;
        ms(lease_ms, "lease_ms", &mut o.lease)?;
        if let Some(m) = max_value {
            o.max_value = self::max_bytes(Some(m))?;
        }
        let store = RsRedis::open(o).map_err(|e| store_error(&e))?;
        Ok(PyClassInitializer::from(Store {
            inner: Arc::new(store),
            detach: true,
        })
        .add_subclass(RedisStore))
    }
}

/// Stores composed fastest first (memory, file or SQLite, Redis): reads
/// ask each in turn and copy a hit into the faster ones; writes go to all;
/// leases are the last tier's.
#[pyclass(extends = Store, frozen, module = "kcache")]
pub struct TieredStore;

#[pymethods]
impl TieredStore {
    #[new]
    fn new(tiers: Vec<Bound<'_, Store>>) -> PyResult<PyClassInitializer<Self>> {
        if tiers.is_empty() {
            return Err(PyValueError::new_err(
                "a TieredStore needs at least one tier",
            ));
        }
        let detach = tiers.iter().any(|t| t.get().detach);
        let tiers = tiers.iter().map(|t| Arc::clone(&t.get().inner)).collect();
        Ok(PyClassInitializer::from(Store {
            inner: Arc::new(Tiered::new(tiers)),
            detach,
        })
        .add_subclass(TieredStore))
    }
}

/// A key's compile lease, from `Store.lease`: held until `release()` or
/// the end of its `with` block (or the process's death). `waited` says
/// another holder had it: read the store again before compiling.
/// `timed_out` says that holder kept it past the wait: compile without it.
#[pyclass(frozen, module = "kcache")]
pub struct Lease {
    held: Mutex<Option<Box<dyn RsLease>>>,
    waited: bool,
    timed_out: bool,
}

#[pymethods]
impl Lease {
    #[getter]
    fn waited(&self) -> bool {
        self.waited
    }
    #[getter]
    fn timed_out(&self) -> bool {
        self.timed_out
    }
    /// Whether the lease is still held.
    #[getter]
    fn held(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
    /// Lets the lease go (a no-op once released).
    fn release(&self, py: Python<'_>) {
        let taken = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Releasing a Redis lease is a call to the server.
        py.detach(move || drop(taken));
    }
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    fn __exit__(
        &self,
        py: Python<'_>,
        _ty: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.release(py);
        false
    }
    fn __repr__(&self) -> String {
        let state = if self.held() {
            "held"
        } else if self.timed_out {
            "timed out"
        } else {
            "released"
        };
        format!(
            "<kcache.Lease {state}{}>",
            if self.waited { ", waited" } else { "" }
        )
    }
}
