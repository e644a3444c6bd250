//! What a cc key takes from outside the kernel's text, split in two: the
//! part every kernel compiled under one option list shares (the *base*:
//! the flags' search path, forced includes, the prelude's closure, the
//! files the compiler reads on its own, the link inputs, the predefined
//! macros), computed once per option list and process and re-validated by
//! stat; and the kernel's own includes (see `includes.rs`).
//!
//! The base asks the compiler itself twice: `-E -dM -MD` on the prelude,
//! under the compile's exact flags, lists every macro defined before the
//! first kernel (predefined, from `-D`, `-imacros`, `-include`, the
//! prelude's headers) and every file that read (the implicit
//! `stdc-predef.h` too); `-###` shows the link line, whose objects,
//! archives and `-l` libraries (resolved in its `-L` directories as the
//! linker does) are digested by content, a GNU ld script with the files it
//! names. A `-l` no directory holds is refused. With a cache directory the
//! two answers and what the link reads are kept across processes where
//! that is sound (see `probe_cache.rs`); the contents digests are then
//! trusted on the files' stats.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::compiler::resolve_link_line;
use super::includes::memo::{self, StatId, Validation};
use super::includes::{self, Closure, Search};
use super::macros;
use super::options::Flags;
use super::probe_cache;
use crate::backend::BackendError;
use crate::key::{Digest, PartsHasher};

/// The kernel-independent part of a key under one option list.
#[derive(Debug)]
pub(crate) struct Base {
    pub search: Search,
    /// Over the native-option expansion, the forced includes', prelude's,
    /// implicit files' and link inputs' digests.
    pub digest: Digest,
    /// Every file covered, canonical.
    pub files: Vec<PathBuf>,
    /// Every macro defined before the first kernel, and the options' names.
    pub defines: Arc<macros::Seed>,
    pub uncacheable: Option<String>,
    /// Whether a flag asks for debug information (see
    /// [`crate::backend::records_names`]), read over the whole flag list:
    /// the compiler's own arguments and the default flags count too.
    pub records_names: Option<String>,
    parts: Vec<Arc<Closure>>,
    validation: Validation,
}

impl Base {
    /// Whether nothing the base was computed from changed.
    pub(crate) fn holds(&self) -> bool {
        self.validation.holds() && self.parts.iter().all(|c| c.holds())
    }

    /// Whether every file it read is as it was, by stats taken now.
    pub(crate) fn files_hold_now(&self) -> bool {
        self.validation.files_hold_now() && self.parts.iter().all(|c| c.files_hold_now())
    }
}

/// What the base of a compile needs from the backend.
pub(crate) struct Inputs<'a> {
    pub compiler: &'a super::compiler::Compiler,
    /// The compile's flags but its files, in order.
    pub flag_list: Vec<String>,
    pub flags: Flags,
    pub source_dir: &'a Path,
    pub prelude: &'a str,
    pub prelude_label: &'a str,
    /// A directory for scratch files, made only if a probe runs.
    pub scratch: &'a crate::backend::workdir::LazyDir,
    /// The expansion of machine-dependent options, when there are any.
    pub native: Option<Digest>,
    /// Whether the compile links: its link line's inputs are keyed.
    pub link: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackendError + '_ {
    move |source| BackendError::Io {
        backend: super::FAMILY,
        path: path.to_path_buf(),
        source,
    }
}

/// Runs the `-dM -MD` probe: the listing and the files it read, or why
/// there are none (an `Err` only when no scratch file can be made).
fn predefined(inputs: &Inputs<'_>) -> Result<Result<(String, Vec<PathBuf>), String>, BackendError> {
    let deps = tempfile::Builder::new()
        .prefix(".deps-")
        .tempfile_in(inputs.scratch.path().map_err(io(inputs.scratch.base()))?)
        .map_err(io(inputs.scratch.base()))?;
    Ok(inputs.compiler.predefined(
        &inputs.flag_list,
        inputs.source_dir,
        inputs.prelude,
        deps.path(),
    ))
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Computes the base for `inputs` (see the module docs).
pub(crate) fn base(inputs: Inputs<'_>) -> Result<Base, BackendError> {
    let clock = memo::now();
    let search = Search::new(
        &inputs.flags,
        inputs.source_dir,
        &inputs.compiler.include_dirs,
    )
    .kept_in(inputs.compiler.probe_cache.as_ref().map(|(d, _)| d.clone()));
    let forced = includes::scan_forced(&search, &inputs.flags).map_err(super::scan_error)?;
    let prelude = includes::scan_text(
        &search,
        inputs.prelude_label,
        inputs.prelude.as_bytes(),
        false,
    )
    .map_err(super::scan_error)?;
    let mut h = PartsHasher::new();
    h.part("kcache-cc-base");
    if let Some(n) = inputs.native {
        h.part(n.as_bytes());
    }
    h.part(forced.digest.as_bytes())
        .part(prelude.closure.digest.as_bytes());
    let mut files: Vec<PathBuf> = forced.files.clone();
    files.extend(prelude.closure.files.iter().cloned());
    let mut defines = macros::option_defines(&inputs.flag_list);
    defines.extend(forced.defines.iter().cloned());
    defines.extend(prelude.defines);
    defines.extend(prelude.closure.defines.iter().cloned());
    let mut uncacheable = forced
        .uncacheable
        .clone()
        .or_else(|| prelude.closure.uncacheable.clone());
    if let Some(m) = inputs
        .flag_list
        .iter()
        .find_map(|o| includes::time_macro(o.as_bytes()))
    {
        uncacheable.get_or_insert(format!("an option uses {m}"));
    }
    let mut watch: Vec<(PathBuf, Option<StatId>)> = Vec::new();

    // The compiler's own account of the preprocessing before the kernels,
    // and its link line: kept across processes where that is sound.
    let asked = probe_cache::Asked {
        flag_list: &inputs.flag_list,
        flags: &inputs.flags,
        cwd: inputs.source_dir,
        prelude: inputs.prelude,
        scanned: &[forced.digest, prelude.closure.digest],
    };
    let mut session = probe_cache::Session::open(inputs.compiler, &asked);
    let (mut predefined, link, kept) = match session.take_answers() {
        Some(a) => (
            Ok((a.defines, a.read)),
            (a.link_line, a.linked, a.unlinked),
            true,
        ),
        None => (
            predefined(&inputs)?.map(|(listing, read)| {
                (macros::Predefined::from(macros::parse_dm(&listing)), read)
            }),
            link_plan(&inputs)?,
            false,
        ),
    };
    let mut seed = macros::Predefined::default();
    match &mut predefined {
        Ok((listed, read)) => {
            if kept {
                // Nothing keeps them again: moved, not copied.
                seed = std::mem::take(listed);
            } else {
                seed = listed.clone();
            }
            for path in read.iter() {
                let c = canonical(path);
                if files.contains(&c) {
                    continue;
                }
                // Read on the compiler's own account (`stdc-predef.h`).
                let (info, id) = match session.watched(path) {
                    Some(Some(id)) => memo::read_as_of(path, id),
                    _ => memo::read(path),
                }
                .map_err(io(path))?;
                h.part("implicit")
                    .part(path.as_os_str().as_encoded_bytes())
                    .part(&info.contents);
                for d in info.directives().iter().flatten() {
                    defines.extend(d.0.define.clone());
                }
                if let Some(m) = includes::time_macro(&info.contents) {
                    uncacheable.get_or_insert(format!("{} uses {m}", path.display()));
                }
                watch.push((path.clone(), Some(id)));
                files.push(c);
            }
        }
        Err(e) => {
            // The compile's own -MD report still guards what this missed.
            tracing::debug!(error = %e, "cc could not list the predefined macros");
        }
    }
    // A file that appears in a searched directory can change what the
    // compiler reads on its own: every directory of the chain is watched.
    for d in search.dirs() {
        let id = session.watched(d).unwrap_or_else(|| StatId::of(d));
        watch.push((d.to_path_buf(), id));
    }

    let (line, linked, unlinked) = link;
    for path in &linked {
        let (d, id) = session.digest(path).map_err(io(path))?;
        h.part("link")
            .part(path.as_os_str().as_encoded_bytes())
            .part(d.as_bytes());
        watch.push((path.clone(), Some(id)));
    }
    if let (false, Ok((listed, read))) = (kept, predefined) {
        let answers = probe_cache::Answers {
            defines: listed,
            read,
            link_line: line,
            linked,
            unlinked,
        };
        let bracket: Vec<PathBuf> = search.bracket_dirs().map(Path::to_path_buf).collect();
        session.save(inputs.compiler, &asked, &answers, &bracket);
    }

    Ok(Base {
        digest: h.finish(),
        files,
        defines: Arc::new(macros::Seed::with_predefined(seed, defines)),
        uncacheable,
        records_names: crate::backend::records_names(super::FAMILY, &inputs.flag_list),
        parts: vec![forced, prelude.closure],
        validation: Validation::new(watch, clock),
        search,
    })
}

/// What a group's compile reads, for its handle-cache key and the check of
/// the compiler's own report against it.
pub(crate) struct GroupExtras {
    pub digests: Vec<Digest>,
    /// Every file a key covers, canonical.
    pub files: std::collections::HashSet<PathBuf>,
    pub uncacheable: Option<String>,
    /// The base and the kernels' closures the digests come from: checked
    /// again by stat once the compile is done (see [`GroupExtras::changed`]).
    pub rests_on: Option<(Arc<Base>, Vec<Arc<Closure>>)>,
}

impl GroupExtras {
    /// Why the compile just done may not be kept, when a file its keys
    /// digested changed since (review 2026-12-02: a header edited while the
    /// compiler ran was stored under the key of its old contents, and served
    /// once the header was back). ccache's rule, by stat identity.
    pub(crate) fn changed(&self) -> Option<String> {
        let (base, closures) = self.rests_on.as_ref()?;
        let holds = base.files_hold_now() && closures.iter().all(|c| c.files_hold_now());
        (!holds).then(|| "a file its key digested changed while it compiled".into())
    }
}

/// Why a compile whose compiler reported reading `report` (`None`: no
/// report) is uncacheable, when it read a file outside `covered`.
pub(crate) fn unkeyed_read(
    report: Option<&[PathBuf]>,
    covered: &std::collections::HashSet<PathBuf>,
) -> Option<String> {
    let Some(report) = report else {
        return Some("the compiler wrote no report of the files it read".into());
    };
    report.iter().find_map(|p| {
        let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        (!covered.contains(&c)).then(|| {
            format!(
                "the compiler read {}, which the key does not cover",
                p.display()
            )
        })
    })
}

/// The link line's words, what the link reads, what ld scripts name that
/// is absent.
type LinkPlan = (Vec<String>, Vec<PathBuf>, Vec<PathBuf>);

/// What the link reads, from the driver's link line: the line, every file
/// it names or a `-l` resolves to and every file a GNU ld script among them
/// names, in the order they are digested, and the files a script names
/// that are absent. A `-l` no directory holds is refused.
fn link_plan(inputs: &Inputs<'_>) -> Result<LinkPlan, BackendError> {
    if !inputs.link {
        // A keys-only backend links nothing: its identity says so.
        return Ok(Default::default());
    }
    let line = inputs
        .compiler
        .link_line(&inputs.flag_list, inputs.source_dir)
        .map_err(|log| BackendError::Refused {
            backend: super::FAMILY,
            input: inputs.flag_list.join(" "),
            reason: format!("the compiler would not show its link line: {log}"),
        })?;
    let link = resolve_link_line(&line, inputs.source_dir);
    if let Some(l) = link.missing.first() {
        return Err(BackendError::Refused {
            backend: super::FAMILY,
            input: l.clone(),
            reason: "names a library kcache cannot find in the link line's -L directories, \
                     so it cannot key its contents"
                .into(),
        });
    }
    let mut linked = link.files;
    let mut absent = Vec::new();
    let mut i = 0;
    while i < linked.len() {
        let named = ld_script_inputs(&linked[i]);
        i += 1;
        let (present, gone): (Vec<PathBuf>, Vec<PathBuf>) =
            named.into_iter().partition(|p| p.is_file());
        linked.extend(present);
        absent.extend(gone);
    }
    Ok((line, linked, absent))
}

/// The absolute paths a GNU ld script (`libc.so` on glibc) names, or none
/// for a real library.
fn ld_script_inputs(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Vec::new();
    };
    if meta.len() > 64 * 1024 {
        return Vec::new();
    }
    let Ok(text) = std::fs::read(path) else {
        return Vec::new();
    };
    if text.starts_with(b"\x7fELF") || text.starts_with(b"!<arch>") {
        return Vec::new();
    }
    String::from_utf8_lossy(&text)
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|w| w.starts_with('/') && !w.starts_with("/*"))
        .map(PathBuf::from)
        .collect()
}
