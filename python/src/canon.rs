//! `kcache.canon`, `kcache.program_key`, `kcache.digest_parts`.

use kcache::canon::{CanonOptions, Canonical as RsCanonical, Derivation, Renamer};
use kcache::key::{program_key as rs_program_key, Digest, ProgramKeyInput};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Text Python passed as `str` or `bytes`.
pub fn text_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be str or bytes, not {}",
        obj.get_type().name()?
    )))
}

/// A list of names: a sequence of str (a lone str is refused, since it
/// would read as its characters).
pub fn names(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Vec<String>> {
    let Some(obj) = obj else {
        return Ok(Vec::new());
    };
    if obj.is_none() {
        return Ok(Vec::new());
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a sequence of str, not a str"
        )));
    }
    let mut out = Vec::new();
    for item in obj
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a sequence of str")))?
    {
        let item = item?;
        let s = item
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("{what} must be a sequence of str")))?;
        out.push(s.to_str()?.to_string());
    }
    Ok(out)
}

/// The renamer options of the keyword arguments every entry point shares.
#[allow(clippy::too_many_arguments)]
pub fn canon_options(
    kernel_name: Option<String>,
    bound: Option<&Bound<'_, PyAny>>,
    keep: Option<&Bound<'_, PyAny>>,
    free: Option<&Bound<'_, PyAny>>,
    derivations: Option<&Bound<'_, PyAny>>,
    symbols: bool,
    scope_locals: bool,
    infer: bool,
) -> PyResult<CanonOptions> {
    let derivations = names(derivations, "derivations")?
        .iter()
        .map(|d| {
            Derivation::parse(d).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "derivation `{d}` is not PREFIX*SUFFIX with exactly one `*`"
                ))
            })
        })
        .collect::<PyResult<_>>()?;
    let nonempty = |v: Vec<String>| v.into_iter().filter(|s| !s.is_empty()).collect();
    Ok(CanonOptions {
        kernel_name,
        bound: nonempty(names(bound, "bound")?),
        keep: nonempty(names(keep, "keep")?),
        free: nonempty(names(free, "free")?),
        derivations,
        symbols,
        scope_locals,
        infer,
    })
}

/// A kernel's canonical form (what `kcache canon --json` prints).
#[pyclass(frozen, module = "kcache")]
pub struct Canonical {
    inner: RsCanonical,
}

#[pymethods]
impl Canonical {
    /// The canonical text, byte for byte.
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.text)
    }
    /// The canonical text as str (lossy where the kernel was not UTF-8).
    #[getter]
    fn canonical(&self) -> String {
        self.inner.text_lossy().into_owned()
    }
    #[getter]
    fn kernel_token(&self) -> Option<String> {
        self.inner.kernel_token.clone()
    }
    #[getter]
    fn renamed(&self) -> Vec<(String, String)> {
        self.inner.renamed.clone()
    }
    #[getter]
    fn bound_renamed(&self) -> bool {
        self.inner.bound_renamed
    }
    #[getter]
    fn reason(&self) -> Option<String> {
        self.inner.reason.clone()
    }
    #[getter]
    fn raw(&self) -> Option<String> {
        self.inner.raw.clone()
    }
    #[getter]
    fn uncacheable(&self) -> Option<String> {
        self.inner.uncacheable.clone()
    }
    #[getter]
    fn inferred(&self) -> Vec<String> {
        self.inner.inferred.clone()
    }
    #[getter]
    fn kept(&self) -> Vec<(String, String)> {
        self.inner.kept.clone()
    }
    #[getter]
    fn given_up(&self) -> Option<String> {
        self.inner.given_up.clone()
    }
    #[getter]
    fn unparsed(&self) -> Vec<(usize, usize)> {
        self.inner.unparsed.clone()
    }
    fn __str__(&self) -> String {
        self.canonical()
    }
    fn __repr__(&self) -> String {
        format!(
            "Canonical(kernel_token={:?}, renamed={}, bound_renamed={}, raw={:?})",
            self.inner.kernel_token,
            self.inner.renamed.len(),
            self.inner.bound_renamed,
            self.inner.raw
        )
    }
}

/// The canonical text of a kernel, with the CLI's `kcache canon` options.
#[pyfunction]
#[pyo3(signature = (text, *, kernel_name=None, bound=None, keep=None, free=None,
    derivations=None, symbols=true, scope_locals=true, infer=false))]
#[allow(clippy::too_many_arguments)]
pub fn canon(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    kernel_name: Option<String>,
    bound: Option<&Bound<'_, PyAny>>,
    keep: Option<&Bound<'_, PyAny>>,
    free: Option<&Bound<'_, PyAny>>,
    derivations: Option<&Bound<'_, PyAny>>,
    symbols: bool,
    scope_locals: bool,
    infer: bool,
) -> PyResult<Canonical> {
    let text = text_bytes(text, "text")?;
    let options = canon_options(
        kernel_name,
        bound,
        keep,
        free,
        derivations,
        symbols,
        scope_locals,
        infer,
    )?;
    let inner = py.detach(|| Renamer::new(&options).canonicalize(&text));
    Ok(Canonical { inner })
}

/// The program key (32 bytes) over everything that decides a compiled
/// program's bytes: kcache's own key function, as the resolver and the
/// stores use it.
#[pyfunction]
#[pyo3(signature = (*, backend, identity, canonical, options=None, kernel_token=None,
    extra=None, backend_key_version=0))]
#[allow(clippy::too_many_arguments)]
pub fn program_key<'py>(
    py: Python<'py>,
    backend: String,
    identity: String,
    canonical: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyAny>>,
    kernel_token: Option<String>,
    extra: Option<&Bound<'py, PyAny>>,
    backend_key_version: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let canonical = text_bytes(canonical, "canonical")?;
    let options = names(options, "options")?;
    let mut digests = Vec::new();
    if let Some(extra) = extra.filter(|e| !e.is_none()) {
        for item in extra.try_iter()? {
            let item = item?;
            let b = item.cast::<PyBytes>().map_err(|_| {
                PyTypeError::new_err("extra must be a sequence of 32-byte digests (bytes)")
            })?;
            let d: [u8; 32] = b.as_bytes().try_into().map_err(|_| {
                PyValueError::new_err("extra must be a sequence of 32-byte digests (bytes)")
            })?;
            digests.push(Digest(d));
        }
    }
    let key = rs_program_key(&ProgramKeyInput {
        backend: &backend,
        backend_key_version,
        identity: &identity,
        options: &options,
        canonical: &canonical,
        kernel_token: kernel_token.as_deref(),
        extra: &digests,
    });
    Ok(PyBytes::new(py, key.as_bytes()))
}

/// The hex blake3 digest of length-prefixed parts (`kcache digest`).
#[pyfunction]
pub fn digest_parts(parts: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut all = Vec::new();
    for item in parts.try_iter()? {
        all.push(text_bytes(&item?, "each part")?);
    }
    Ok(kcache::key::digest_parts(&all))
}
