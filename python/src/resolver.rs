//! `kcache.Resolver`: a batch of kernels answered through the code cache,
//! a store and one of kcache's backends.

use crate::canon::{canon_options, names};
use crate::capture::{capture, ProgramBytes};
use crate::errors::{backend_error, resolve_error};
use crate::store::Store;
use kcache::backend::cc::CcBackend;
use kcache::backend::cuda::{Cuda, CudaConfig, CudaTarget};
use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::KernelSource;
use kcache::backend::{Backend, BackendError};
use kcache::canon::dialect::option_macros;
use kcache::canon::{CanonOptions, Renamer};
use kcache::resolve::census::Census;
use kcache::resolve::split::Split;
use kcache::resolve::{Kernel as RsKernel, Outcome, ResolveError, Resolver as RsResolver, Threads};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// One kernel of a batch.
#[pyclass(frozen, module = "kcache")]
#[derive(Clone)]
pub struct Kernel {
    pub inner: RsKernel,
}

#[pymethods]
impl Kernel {
    #[new]
    #[pyo3(signature = (text, symbol, bound=None, options=None, *, keep=None, free=None,
        derivations=None, symbols=true, scope_locals=true, infer=false, exact=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        text: String,
        symbol: String,
        bound: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
        keep: Option<&Bound<'_, PyAny>>,
        free: Option<&Bound<'_, PyAny>>,
        derivations: Option<&Bound<'_, PyAny>>,
        symbols: bool,
        scope_locals: bool,
        infer: bool,
        exact: bool,
    ) -> PyResult<Self> {
        let options = names(options, "options")?;
        if exact {
            // Keyed on its text as written: nothing renamed, not even its own
            // name, for callers whose compiled bytes carry every name.
            if !names(bound, "bound")?.is_empty() || infer {
                return Err(PyValueError::new_err(
                    "exact=True renames nothing: it takes no bound names and no infer",
                ));
            }
            let canon = CanonOptions {
                kernel_name: None,
                symbols: false,
                scope_locals: false,
                ..CanonOptions::default()
            };
            return Ok(Kernel {
                inner: RsKernel::new(symbol, text).canon(canon).options(options),
            });
        }
        let canon = canon_options(
            Some(symbol.clone()),
            bound,
            keep,
            free,
            derivations,
            symbols,
            scope_locals,
            infer,
        )?;
        Ok(Kernel {
            inner: RsKernel::new(symbol, text).canon(canon).options(options),
        })
    }
    #[getter]
    fn text(&self) -> &str {
        &self.inner.text
    }
    #[getter]
    fn symbol(&self) -> &str {
        &self.inner.symbol
    }
    #[getter]
    fn options(&self) -> Vec<String> {
        self.inner.options.clone()
    }
    #[getter]
    fn bound(&self) -> Vec<String> {
        self.inner.canon.bound.clone()
    }
    fn __repr__(&self) -> String {
        format!(
            "Kernel(symbol={:?}, {} bytes)",
            self.inner.symbol,
            self.inner.text.len()
        )
    }
}

/// A batch item: a `Kernel`, or a tuple `(text, symbol[, bound[, options]])`.
fn kernel_of(item: &Bound<'_, PyAny>) -> PyResult<RsKernel> {
    if let Ok(k) = item.cast::<Kernel>() {
        return Ok(k.get().inner.clone());
    }
    let bad = || {
        PyTypeError::new_err(
            "a batch item must be a kcache.Kernel or a tuple (text, symbol[, bound[, options]])",
        )
    };
    let t = item.cast::<PyTuple>().map_err(|_| bad())?;
    if !(2..=4).contains(&t.len()) {
        return Err(bad());
    }
    let s = |i: usize| -> PyResult<String> {
        let v = t.get_item(i)?;
        let s = v.cast::<PyString>().map_err(|_| bad())?;
        Ok(s.to_str()?.to_string())
    };
    let (text, symbol) = (s(0)?, s(1)?);
    let bound = if t.len() > 2 {
        Some(t.get_item(2)?)
    } else {
        None
    };
    let options = if t.len() > 3 {
        Some(t.get_item(3)?)
    } else {
        None
    };
    let k = Kernel::new(
        text,
        symbol,
        bound.as_ref(),
        options.as_ref(),
        None,
        None,
        None,
        true,
        true,
        false,
        false,
    )?;
    Ok(k.inner)
}

/// One kernel's answer, without the GIL's types.
struct RawAnswer {
    program: Arc<dyn ProgramBytes>,
    symbol: String,
    outcome: Outcome,
    key: [u8; 32],
}

/// A resolver over any backend whose programs Python can read.
trait AnyResolver: Send + Sync {
    fn resolve(&self, batch: &[RsKernel]) -> Result<(Vec<RawAnswer>, Census), ResolveError>;
    fn key(&self, kernel: &RsKernel) -> Result<[u8; 32], ResolveError>;
    fn uncacheable(&self, kernel: &RsKernel) -> Result<Option<String>, ResolveError>;
    fn family(&self) -> &'static str;
    fn identity(&self) -> String;
    fn describe(&self) -> String;
    fn store_errors(&self) -> u64;
    fn clear(&self);
}

impl<B> AnyResolver for RsResolver<B>
where
    B: Backend + 'static,
    B::Program: ProgramBytes,
{
    fn resolve(&self, batch: &[RsKernel]) -> Result<(Vec<RawAnswer>, Census), ResolveError> {
        let b = self.resolve_counted(batch)?;
        let answers = b
            .answers
            .into_iter()
            .map(|r| RawAnswer {
                program: r.program as Arc<dyn ProgramBytes>,
                symbol: r.symbol.to_string(),
                outcome: r.outcome,
                key: *r.key.as_bytes(),
            })
            .collect();
        Ok((answers, b.census))
    }
    fn key(&self, kernel: &RsKernel) -> Result<[u8; 32], ResolveError> {
        RsResolver::key(self, kernel).map(|d| *d.as_bytes())
    }
    fn uncacheable(&self, kernel: &RsKernel) -> Result<Option<String>, ResolveError> {
        // What the resolver's own keying finds uncacheable (it keeps the
        // reason to itself): the backend's extras, the options' macros, the
        // text's key form.
        let source = KernelSource {
            symbol: &kernel.symbol,
            text: &kernel.text,
        };
        let extras = self
            .backend()
            .key_extras(&source, &kernel.options)
            .map_err(|source| ResolveError::Key {
                symbol: kernel.symbol.clone(),
                source,
            })?;
        let (from_options, options_uncacheable) = option_macros(&kernel.options);
        let mut position = (*extras.position_macros).clone();
        position.extend(from_options.iter());
        let renamer = Renamer::new(&kernel.canon)
            .with_macros(extras.macros)
            .with_position_macros(Arc::new(position));
        let form = renamer.key_form(kernel.text.as_bytes());
        Ok(extras
            .uncacheable
            .or(options_uncacheable)
            .or(form.uncacheable))
    }
    fn family(&self) -> &'static str {
        self.backend().family()
    }
    fn identity(&self) -> String {
        self.backend().identity().to_string()
    }
    fn describe(&self) -> String {
        self.backend().describe()
    }
    fn store_errors(&self) -> u64 {
        RsResolver::store_errors(self)
    }
    fn clear(&self) {
        RsResolver::clear(self)
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Reused => "reused",
        Outcome::Stored => "stored",
        Outcome::Shared => "shared",
        Outcome::Compiled => "compiled",
        Outcome::Uncacheable => "uncacheable",
    }
}

fn census_dict<'py>(py: Python<'py>, c: &Census) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kernels_requested", c.kernels_requested)?;
    d.set_item("keys_derived", c.keys_derived)?;
    d.set_item("kernels_compiled", c.kernels_compiled)?;
    d.set_item("programs_compiled", c.programs_compiled)?;
    d.set_item("kernels_reused", c.kernels_reused)?;
    d.set_item("kernels_stored", c.kernels_stored)?;
    d.set_item("kernels_shared", c.kernels_shared)?;
    d.set_item("kernels_uncacheable", c.kernels_uncacheable)?;
    d.set_item("kernels_waited", c.kernels_waited)?;
    d.set_item("programs_loaded", c.programs_loaded)?;
    d.set_item("compile_seconds", c.compile_time.as_secs_f64())?;
    d.set_item("load_seconds", c.load_time.as_secs_f64())?;
    Ok(d)
}

/// One kernel's answer: the symbol to look it up by, how it was answered,
/// and the program's bytes (plus, for cc, the loaded shared object's path).
#[pyclass(frozen, module = "kcache")]
pub struct Answer {
    raw: RawAnswer,
    backend: &'static str,
    target: &'static str,
}

#[pymethods]
impl Answer {
    #[getter]
    fn symbol(&self) -> &str {
        &self.raw.symbol
    }
    /// "compiled", "reused", "stored", "shared" (from the Redis tier: most
    /// likely another machine's compile) or "uncacheable".
    #[getter]
    fn outcome(&self) -> &'static str {
        outcome_name(self.raw.outcome)
    }
    /// The kernel's program key (32 bytes).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.raw.key)
    }
    /// The program's bytes as the backend loads them back (for CUDA: the
    /// cubin or PTX NVRTC wrote; for cc: the shared object).
    #[getter]
    fn binary<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.raw.program.bytes())
    }
    /// cc: the loaded shared object (for `ctypes.CDLL`), which exists for as
    /// long as this answer does; None for the other backends.
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.raw.program.path().map(PathBuf::from)
    }
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend
    }
    /// CUDA: the program as a `cuda.core.ObjectCode` (needs cuda-core).
    fn object_code<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.backend != "cuda" {
            return Err(PyValueError::new_err(format!(
                "object_code() is for CUDA programs; this one is {}",
                self.backend
            )));
        }
        let object_code = py.import("cuda.core")?.getattr("ObjectCode")?;
        let ctor = if self.target == "ptx" {
            "from_ptx"
        } else {
            "from_cubin"
        };
        object_code.call_method1(ctor, (self.binary(py),))
    }
    fn __repr__(&self) -> String {
        format!(
            "Answer(symbol={:?}, outcome={:?}, {} bytes)",
            self.raw.symbol,
            self.outcome(),
            self.raw.program.bytes().len()
        )
    }
}

/// A resolved batch: one answer per kernel, in batch order, and the census.
#[pyclass(frozen, module = "kcache")]
pub struct Batch {
    answers: Vec<Py<Answer>>,
    census: Py<PyDict>,
}

#[pymethods]
impl Batch {
    #[getter]
    fn answers(&self, py: Python<'_>) -> Vec<Py<Answer>> {
        self.answers.iter().map(|a| a.clone_ref(py)).collect()
    }
    /// What the resolve did: kernels_compiled, programs_compiled,
    /// kernels_reused, kernels_stored, kernels_shared, kernels_uncacheable,
    /// kernels_waited, ...
    #[getter]
    fn census(&self, py: Python<'_>) -> Py<PyDict> {
        self.census.clone_ref(py)
    }
    fn __len__(&self) -> usize {
        self.answers.len()
    }
    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<Answer>> {
        let n = self.answers.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if !(0..n).contains(&j) {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "batch index out of range",
            ));
        }
        Ok(self.answers[j as usize].clone_ref(py))
    }
}

/// kcache's resolver over one backend, a code cache and an optional store.
#[pyclass(frozen, module = "kcache")]
pub struct Resolver {
    inner: Arc<dyn AnyResolver>,
    target: &'static str,
    totals: Mutex<Census>,
}

fn wrap<B>(
    backend: B,
    store: Option<Arc<dyn kcache::store::Store>>,
    split: Option<Split>,
    threads: Threads,
) -> Arc<dyn AnyResolver>
where
    B: Backend + 'static,
    B::Program: ProgramBytes,
{
    Arc::new(
        RsResolver::new(Arc::new(backend))
            .with_store(store)
            .with_split(split)
            .with_threads(threads),
    )
}

const BACKENDS: [&str; 4] = ["cc", "opencl", "cuda", "vulkan"];

#[pymethods]
impl Resolver {
    #[new]
    #[pyo3(signature = (backend="cc", *, store=None, split=None, min_kernels=1, threads="rayon",
        device=0, arch=None, ptx=false, compile_only=false, source_dir=None,
        compilers_dir=None, compiler=None, default_flags=None, link_flags=None, keys_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        backend: &str,
        store: Option<&Bound<'_, Store>>,
        split: Option<usize>,
        min_kernels: usize,
        threads: &str,
        device: usize,
        arch: Option<String>,
        ptx: bool,
        compile_only: bool,
        source_dir: Option<PathBuf>,
        compilers_dir: Option<PathBuf>,
        compiler: Option<String>,
        default_flags: Option<&Bound<'_, PyAny>>,
        link_flags: Option<&Bound<'_, PyAny>>,
        keys_only: bool,
    ) -> PyResult<Self> {
        let cc_only = default_flags.is_some()
            || link_flags.is_some()
            || keys_only
            || compiler.is_some()
            || source_dir.is_some()
            || compilers_dir.is_some();
        if cc_only && backend != "cc" {
            return Err(PyValueError::new_err(
                "compiler, source_dir, compilers_dir, default_flags, link_flags and keys_only are cc settings",
            ));
        }
        let default_flags = default_flags
            .map(|f| names(Some(f), "default_flags"))
            .transpose()?;
        let link_flags = link_flags
            .map(|f| names(Some(f), "link_flags"))
            .transpose()?;
        let split = match split {
            Some(0) => return Err(PyValueError::new_err("split must be at least 1")),
            Some(max_programs) => Some(Split {
                max_programs,
                min_kernels,
            }),
            None => None,
        };
        let threads = match threads {
            "rayon" => Threads::Rayon,
            "os" => Threads::Os,
            other => {
                return Err(PyValueError::new_err(format!(
                    "threads must be \"rayon\" or \"os\", not {other:?}"
                )))
            }
        };
        let store = store.map(|s| Arc::clone(&s.get().inner));
        if !BACKENDS.contains(&backend) {
            return Err(PyValueError::new_err(format!(
                "backend must be one of \"cc\", \"opencl\", \"cuda\", \"vulkan\", not {backend:?}"
            )));
        }
        let target = if ptx { "ptx" } else { "cubin" };
        let backend_name = backend.to_string();
        let built: Result<Arc<dyn AnyResolver>, BackendError> = py.detach(|| {
            Ok(match backend_name.as_str() {
                "cc" => {
                    let mut b = CcBackend::builder();
                    if let Some(c) = &compiler {
                        b = b.compiler(c);
                    }
                    if let Some(d) = &source_dir {
                        b = b.source_dir(d);
                    }
                    if let Some(d) = &compilers_dir {
                        b = b.identity_cache(d);
                    }
                    if let Some(f) = &default_flags {
                        b = b.default_flags(f);
                    }
                    if let Some(f) = &link_flags {
                        b = b.link_flags(f);
                    }
                    if keys_only {
                        b = b.keys_only();
                    }
                    wrap(b.build()?, store, split, threads)
                }
                "opencl" => wrap(
                    capture(OpenCl::new(&OpenClConfig { device })?),
                    store,
                    split,
                    threads,
                ),
                "cuda" => wrap(
                    capture(Cuda::new(&CudaConfig {
                        device,
                        arch: arch.clone(),
                        target: if ptx {
                            CudaTarget::Ptx
                        } else {
                            CudaTarget::Cubin
                        },
                        nvrtc: None,
                        compile_only,
                    })?),
                    store,
                    split,
                    threads,
                ),
                "vulkan" => wrap(
                    capture(Vulkan::new(&VulkanConfig {
                        device,
                        ..VulkanConfig::default()
                    })?),
                    store,
                    split,
                    threads,
                ),
                _ => unreachable!("checked below"),
            })
        });
        let inner = built.map_err(|e| backend_error(py, &e, &[]))?;
        Ok(Resolver {
            inner,
            target,
            totals: Mutex::new(Census::default()),
        })
    }

    /// Answers every kernel of `batch` (`Kernel`s, or tuples
    /// `(text, symbol[, bound[, options]])`), compiling one representative
    /// per distinct key.
    fn resolve(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<Batch> {
        if batch.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "batch must be a sequence of kernels, not a str",
            ));
        }
        let kernels = batch
            .try_iter()
            .map_err(|_| PyTypeError::new_err("batch must be a sequence of kernels"))?
            .map(|item| kernel_of(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        let inner = Arc::clone(&self.inner);
        let (answers, census) = py
            .detach(|| inner.resolve(&kernels))
            .map_err(|e| resolve_error(py, &e))?;
        self.totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&census);
        let backend = self.inner.family();
        let answers = answers
            .into_iter()
            .map(|raw| {
                Py::new(
                    py,
                    Answer {
                        raw,
                        backend,
                        target: self.target,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Ok(Batch {
            answers,
            census: census_dict(py, &census)?.unbind(),
        })
    }

    /// The program key of one kernel (32 bytes): what the resolver and the
    /// store find its program under.
    fn key<'py>(
        &self,
        py: Python<'py>,
        kernel: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let kernel = kernel_of(kernel)?;
        let inner = Arc::clone(&self.inner);
        let key = py
            .detach(|| inner.key(&kernel))
            .map_err(|e| resolve_error(py, &e))?;
        Ok(PyBytes::new(py, &key))
    }

    /// The program key of one kernel and why it can never be cached (a
    /// `__TIME__` in its text, a header or an option), or None.
    fn key_info<'py>(
        &self,
        py: Python<'py>,
        kernel: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, Option<String>)> {
        let kernel = kernel_of(kernel)?;
        let inner = Arc::clone(&self.inner);
        let (key, why) = py
            .detach(|| Ok::<_, ResolveError>((inner.key(&kernel)?, inner.uncacheable(&kernel)?)))
            .map_err(|e| resolve_error(py, &e))?;
        Ok((PyBytes::new(py, &key), why))
    }

    /// Every resolve's census added up, since the resolver was made.
    fn totals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = *self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        census_dict(py, &t)
    }

    /// Empties the in-memory code cache (the store keeps its entries).
    fn clear(&self) {
        self.inner.clear()
    }

    #[getter]
    fn backend(&self) -> &'static str {
        self.inner.family()
    }
    /// Everything outside a kernel's text that decides its bytes (compiler,
    /// version, target): part of every key.
    #[getter]
    fn identity(&self) -> String {
        self.inner.identity()
    }
    /// A short line naming the compiler.
    fn describe(&self) -> String {
        self.inner.describe()
    }
    /// Store operations that failed (each logged, then compiled past).
    #[getter]
    fn store_errors(&self) -> u64 {
        self.inner.store_errors()
    }
    fn __repr__(&self) -> String {
        format!(
            "<kcache.Resolver {}: {}>",
            self.inner.family(),
            self.inner.describe()
        )
    }
}
