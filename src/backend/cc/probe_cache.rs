//! The two probes a key's base asks the compiler (`-E -dM -MD` on the
//! prelude, `-###` for the link line), kept in a small file per compiler
//! identity, flag list, directory, prelude and environment, so a later
//! process need not run the compiler before it can key a kernel.
//!
//! # What a kept answer rests on
//!
//! The file's name digests what the probes were asked: the identity key
//! (`identity_cache.rs`: the executable's path, contents and stat, its
//! arguments, `PATH`, the pinned environment), the compile's whole flag
//! list, the directory the compiler runs in, the prelude, the digests of
//! the forced includes' and prelude's closures as kcache's scanner found
//! them this time, and the whole environment the compiler would see.
//!
//! What the probes read without being asked is stat-ed and kept with the
//! answer, present or absent: every directory of the driver's program and
//! library search lists (`-print-search-dirs`) and of the bracket include
//! chain, with their real ancestors up to [`ANCESTORS`] levels (a
//! directory's times change when an entry appears, goes or is renamed in
//! it, so a startfile, `specs` file or header appearing in an earlier
//! directory, or a newer installation beside the one in use, shows); the
//! parts the driver would run or read in those directories (`cc1`,
//! `collect2`, `ld`, `as`, `lto-wrapper`, the LTO plugin, `specs`, Clang's
//! `*.cfg` files); every path the link line names; what the link reads (the
//! libraries its `-l` options resolve to, the files an ld script names);
//! every file the `-MD` report lists, and for each one the compiler found
//! on its own (`stdc-predef.h`) the same name under every other include
//! directory. An absent path is kept as its first missing component (what
//! lies under a missing directory stays missing while it does), so a
//! search list's many paths through one missing prefix cost one stat. A
//! kept answer is used only while every one of those stats is
//! unchanged and older than [`memo`]'s "too recent" window; the link
//! inputs' content digests are kept with the stat they were taken under,
//! which must be the watched one.
//!
//! The file itself is a compact record (see [`record`]), the listing
//! kept split into its definitions.
//!
//! # When nothing is kept
//!
//! Only flags whose whole effect is their text or a search kcache models
//! are allowed (see [`cacheable`]): anything else (an unknown option, a
//! machine-dependent one such as `-march=native`, an option with a file
//! argument kcache does not scan) probes every time, as does a compiler
//! whose search lists cannot be read. Files that cannot be read or written
//! only mean probing again: the cache never fails a compile.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use super::compiler::{Compiler, REMOVED_ENV};
use super::includes::memo::{self, StatId};
use super::macros::Predefined;
use super::options::Flags;
use crate::key::{Digest, PartsHasher};

mod record;

/// The file format, in every file's name: one of another version is never
/// read (and [`record`] refuses one under a wrong name). The definitions
/// are kept as [`super::macros::parse_dm`] split them: a change to what
/// it gives changes the format too (5: whether a body pastes).
const FORMAT: u32 = 5;

/// What the driver runs or reads from its program directories.
const PROGRAMS: &[&str] = &[
    "cc1",
    "collect2",
    "ld",
    "as",
    "lto-wrapper",
    "liblto_plugin.so",
    "specs",
];

/// What the driver reads from its library (startfile) directories, beyond
/// the startfiles the link line names.
const LIBRARY_FILES: &[&str] = &["specs"];

/// How many levels above a searched directory are watched: enough for a
/// driver that scans `<prefix>/lib/gcc/<triple>/<version>` for the newest
/// installation (Clang), and no further, so that a busy directory high up
/// (`/tmp`) does not invalidate every kept answer below it.
const ANCESTORS: usize = 4;

/// What the two probes said.
#[derive(Clone, Debug, Default)]
pub(crate) struct Answers {
    /// The definitions `-dM` listed ([`super::macros::parse_dm`]).
    pub defines: Predefined,
    /// The files `-MD` reported (the prelude's stdin, `-`, left out).
    pub read: Vec<PathBuf>,
    /// The link line `-###` showed, split into words.
    pub link_line: Vec<String>,
    /// What the link reads, resolved from the line (libraries found in its
    /// `-L` directories, the files ld scripts name), in digest order.
    pub linked: Vec<PathBuf>,
    /// Files an ld script names that are absent.
    pub unlinked: Vec<PathBuf>,
}

struct File {
    key: String,
    answers: Answers,
    watch: PathList<Option<StatId>>,
    digests: PathList<(StatId, [u8; 32])>,
}

/// Paths, each with a value, their bytes in one buffer: a kept file
/// watches some seventy paths, and one allocation each (and a free) was
/// a measurable part of a warm hit.
#[derive(Debug, Default, PartialEq, Eq)]
struct PathList<T> {
    bytes: Vec<u8>,
    items: Vec<(usize, usize, T)>,
}

impl<T> PathList<T> {
    fn with_capacity(n: usize) -> PathList<T> {
        PathList {
            // About 40 bytes a path (`/usr/lib/gcc/x86_64-linux-gnu/12/`).
            bytes: Vec::with_capacity(n * 40),
            items: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, path: &[u8], value: T) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(path);
        self.items.push((at, path.len(), value));
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&Path, &T)> + '_ {
        self.items.iter().map(|(at, len, v)| {
            let p = std::ffi::OsStr::from_bytes(&self.bytes[*at..at + len]);
            (Path::new(p), v)
        })
    }
}

impl<P: AsRef<Path>, T> FromIterator<(P, T)> for PathList<T> {
    fn from_iter<I: IntoIterator<Item = (P, T)>>(items: I) -> PathList<T> {
        let mut list = PathList::with_capacity(0);
        for (p, v) in items {
            list.push(p.as_ref().as_os_str().as_bytes(), v);
        }
        list
    }
}

/// One base's use of the cache: where its answers live, and what a kept
/// file said.
pub(crate) struct Session {
    place: Option<(PathBuf, Digest)>,
    kept: Option<File>,
    digested: Vec<(PathBuf, StatId, Digest)>,
}

/// What the key is computed from, besides the compiler's identity.
pub(crate) struct Asked<'a> {
    pub flag_list: &'a [String],
    pub flags: &'a Flags,
    pub cwd: &'a Path,
    pub prelude: &'a str,
    /// The scanner's digests of the forced includes and the prelude.
    pub scanned: &'a [Digest],
}

impl Session {
    /// Opens the cache for `asked`: a session that keeps nothing when the
    /// compiler has no cache directory or the flags are not [`cacheable`].
    pub(crate) fn open(compiler: &Compiler, asked: &Asked<'_>) -> Session {
        let place = compiler.probe_cache.as_ref().and_then(|(dir, identity)| {
            cacheable(asked.flag_list, asked.flags).then(|| (dir.clone(), key(identity, asked)))
        });
        let kept = place.as_ref().and_then(|(dir, key)| load(dir, key));
        Session {
            place,
            kept,
            digested: Vec::new(),
        }
    }

    /// The kept answers, when a sound file holds them, moved out (the
    /// session keeps what it watches and digests, for [`Session::watched`]
    /// and [`Session::digest`], and none of the answers: nothing keeps them
    /// again).
    pub(crate) fn take_answers(&mut self) -> Option<Answers> {
        self.kept.as_mut().map(|f| std::mem::take(&mut f.answers))
    }

    /// The identity `path` had when the kept file's stats were checked (on
    /// [`Session::open`], so after the clock of the base that opened it was
    /// read), where the kept file watches that very path: stat-ing it again
    /// for the base would only repeat that.
    pub(crate) fn watched(&self, path: &Path) -> Option<Option<StatId>> {
        let f = self.kept.as_ref()?;
        f.watch
            .iter()
            .find(|(p, _)| p.as_os_str() == path.as_os_str())
            .map(|(_, id)| *id)
    }

    /// `path`'s contents digest and identity: the kept one (every linked
    /// file is watched, so a kept file's stats were checked on load), else
    /// read (and memoized in-process).
    pub(crate) fn digest(&mut self, path: &Path) -> std::io::Result<(Digest, StatId)> {
        // Compared as bytes, not as `Path`s (component by component, from
        // the end, for every unequal pair): the kept names are the ones this
        // same resolution spelled, and a name spelled otherwise is only read.
        let kept = self.kept.as_ref().and_then(|f| {
            let (_, (id, d)) = f
                .digests
                .iter()
                .find(|(p, _)| p.as_os_str() == path.as_os_str())?;
            Some((Digest(*d), *id))
        });
        let (d, id) = match kept {
            Some(k) => k,
            None => memo::digest(path)?,
        };
        self.digested.push((path.to_path_buf(), id, d));
        Ok((d, id))
    }

    /// Keeps freshly probed `answers` (a kept file's answers are not kept
    /// again). `compiler` runs once more (`-print-search-dirs`) to learn
    /// where the driver looks; `include_dirs` is the bracket include chain.
    pub(crate) fn save(
        self,
        compiler: &Compiler,
        asked: &Asked<'_>,
        answers: &Answers,
        include_dirs: &[PathBuf],
    ) {
        if self.kept.is_some() {
            return;
        }
        let Some((dir, key)) = &self.place else {
            return;
        };
        let Some(lists) = compiler.search_lists(asked.flag_list, asked.cwd) else {
            return;
        };
        let watch = watch_list(&lists, answers, include_dirs, asked.cwd);
        let fresh = |id: &Option<StatId>| !id.is_some_and(|i| i.is_recent());
        // A kept digest is trusted on its file's watched stat: the file must
        // not have changed between its digest and the watch.
        let unchanged =
            |p: &PathBuf, id: &StatId| watch.iter().any(|(w, wid)| w == p && *wid == Some(*id));
        if !watch.iter().all(|(_, id)| fresh(id))
            || !self
                .digested
                .iter()
                .all(|(p, id, _)| fresh(&Some(*id)) && unchanged(p, id))
        {
            return;
        }
        let file = File {
            key: key.to_hex(),
            answers: answers.clone(),
            watch: watch.into_iter().collect(),
            digests: self
                .digested
                .into_iter()
                .map(|(p, id, d)| (p, (id, d.0)))
                .collect(),
        };
        super::identity_cache::write_private(dir, &key.to_hex(), &record::encode(&file));
    }
}

/// Whether every flag's effect on the probes is its text or a search the
/// kept stats cover: `-O`, `-g`, `-W` (no pass-through), `-m` (not
/// `native`), `-f` without a value (or with a known harmless one), `-std=`,
/// `-D`, `-U`, `-l`, the include-path options, forced includes (scanned),
/// and a few exact flags. Everything else probes every time.
pub(crate) fn cacheable(flag_list: &[String], flags: &Flags) -> bool {
    const EXACT: &[&str] = &[
        "-shared",
        "-fPIC",
        "-fpic",
        "-pthread",
        "-w",
        "-ansi",
        "-pedantic",
        "-pedantic-errors",
        "-nostdinc",
        "-static-libgcc",
    ];
    const SEPARATE: &[&str] = &[
        "-D",
        "-U",
        "-I",
        "-iquote",
        "-isystem",
        "-idirafter",
        "-include",
        "-imacros",
        "-l",
    ];
    const F_VALUES: &[&str] = &[
        "-fvisibility=",
        "-ffp-contract=",
        "-fexcess-precision=",
        "-fmax-errors=",
        "-ftls-model=",
        "-fdiagnostics-color=",
        "-fmessage-length=",
        "-fcf-protection=",
        "-fvect-cost-model=",
        "-fsimd-cost-model=",
        "-fsanitize=",
        "-fno-sanitize=",
        "-fstack-protector",
    ];
    if !flags.native.is_empty() {
        return false;
    }
    let mut words = flag_list.iter();
    while let Some(w) = words.next() {
        let w = w.as_str();
        if EXACT.contains(&w) {
            continue;
        }
        if SEPARATE.contains(&w) {
            if words.next().is_none() {
                return false;
            }
            continue;
        }
        let ok = if SEPARATE[..4].iter().any(|p| w.starts_with(p))
            || w.starts_with("-iquote")
            || w.starts_with("-isystem")
            || w.starts_with("-idirafter")
        {
            true
        } else if let Some(rest) = w.strip_prefix("-f") {
            !rest.starts_with("plugin")
                && !rest.starts_with("use-ld")
                && !rest.starts_with("profile")
                && (!rest.contains('=') || F_VALUES.iter().any(|p| w.starts_with(p)))
        } else if let Some(rest) = w.strip_prefix("-W") {
            !rest.contains(',')
        } else if let Some(rest) = w.strip_prefix("-m") {
            !rest.contains('/') && !rest.contains("native")
        } else {
            w.starts_with("-O")
                || w.starts_with("-g")
                || w.starts_with("-std=")
                || (w.starts_with("-l") && !w.contains('/'))
        };
        if !ok {
            return false;
        }
    }
    true
}

/// The name a kept file goes by (see the module docs).
fn key(identity: &Digest, asked: &Asked<'_>) -> Digest {
    let mut h = PartsHasher::new();
    h.part("kcache-cc-probes")
        .part(FORMAT.to_le_bytes())
        .part(identity.as_bytes())
        .part(asked.flag_list.join("\0"))
        .part(asked.cwd.as_os_str().as_bytes())
        .part(asked.prelude);
    for d in asked.scanned {
        h.part(d.as_bytes());
    }
    // The environment the compiler sees: every variable but those its
    // command removes and `LC_ALL` (which it sets).
    h.part("environment");
    for (k, v) in super::identity_cache::environment() {
        if k != "LC_ALL" && !REMOVED_ENV.iter().any(|r| k == *r) {
            h.part(k.as_bytes()).part(v.as_bytes());
        }
    }
    h.finish()
}

fn load(dir: &Path, key: &Digest) -> Option<File> {
    let hex = key.to_hex();
    let text = super::identity_cache::read_private(&dir.join(&hex))?;
    let file = record::decode(&text)?;
    if file.key != hex {
        return None;
    }
    let holds = file
        .watch
        .iter()
        .all(|(p, id)| StatId::of(p) == *id && !id.is_some_and(|i| i.is_recent()));
    holds.then_some(file)
}

/// What the driver's `-print-search-dirs` lists.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SearchLists {
    pub programs: Vec<PathBuf>,
    pub libraries: Vec<PathBuf>,
}

/// The `programs:` and `libraries:` lists of `-print-search-dirs`, or
/// `None` when either is missing.
pub(crate) fn parse_search_lists(text: &str) -> Option<SearchLists> {
    let list = |name: &str| -> Option<Vec<PathBuf>> {
        let line = text.lines().find_map(|l| l.strip_prefix(name))?;
        let line = line.trim_start();
        let line = line.strip_prefix('=').unwrap_or(line);
        Some(
            line.split(':')
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect(),
        )
    };
    Some(SearchLists {
        programs: list("programs:")?,
        libraries: list("libraries:")?,
    })
}

/// Every path whose stat a kept answer rests on (see the module docs).
fn watch_list(
    lists: &SearchLists,
    answers: &Answers,
    include_dirs: &[PathBuf],
    cwd: &Path,
) -> Vec<(PathBuf, Option<StatId>)> {
    let mut w = Watch::default();
    for (dirs, names) in [
        (&lists.programs, PROGRAMS),
        (&lists.libraries, LIBRARY_FILES),
    ] {
        for d in dirs {
            w.dir(d);
            // An absent part's appearance shows in its directory's times.
            for n in names {
                let part = d.join(n);
                if StatId::of(&part).is_some() {
                    w.path(&part);
                }
            }
        }
    }
    // Clang reads configuration files (`clang.cfg`, `<triple>-clang.cfg`)
    // from its own directory: every one there is watched.
    for d in &lists.programs {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            if e.file_name().as_bytes().ends_with(b".cfg") {
                w.path(&e.path());
            }
        }
    }
    for d in include_dirs {
        w.dir(d);
    }
    for word in &answers.link_line {
        let value = word.rsplit_once('=').map_or(word.as_str(), |(_, v)| v);
        let value = value.strip_prefix("-L").unwrap_or(value);
        // A named path that is absent is one of the driver's temporary
        // files, different every run; `/dev` entries change as they are
        // written.
        if value.starts_with('/') {
            let p = Path::new(value);
            if !p.starts_with("/dev") && StatId::of(p).is_some() {
                w.path(p);
            }
        } else if word.starts_with("-L") {
            w.dir(&cwd.join(value));
        }
    }
    // The plan's own inputs: an edited ld script names other files.
    for file in answers.linked.iter().chain(&answers.unlinked) {
        w.path(file);
    }
    for file in &answers.read {
        w.path(file);
        // Found under one include directory: the same name under every
        // other one could have been found first.
        for d in include_dirs {
            if let Ok(rel) = file.strip_prefix(d) {
                for other in include_dirs {
                    w.path(&other.join(rel));
                }
            }
        }
    }
    prune_absent(&mut w.entries);
    w.entries
}

/// Drops each absent path that lies under another absent path (the other's
/// components lead its own): the walk to it goes through the other, so it
/// stays absent while the other does, and the other's appearance shows in
/// its own stat and its nearest existing ancestor's, both still kept. A
/// driver's search list repeats one missing prefix many times over
/// (`<gcc>/../../../../<triple>/bin/<triple>/12/`, `.../lib/...`, ...).
fn prune_absent(entries: &mut Vec<(PathBuf, Option<StatId>)>) {
    let absent: Vec<PathBuf> = entries
        .iter()
        .filter(|(_, id)| id.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    entries.retain(|(p, id)| {
        id.is_some()
            || !absent
                .iter()
                .any(|a| p.starts_with(a) && p.components().count() > a.components().count())
    });
}

#[derive(Default)]
struct Watch {
    seen: HashSet<PathBuf>,
    walked: HashSet<PathBuf>,
    entries: Vec<(PathBuf, Option<StatId>)>,
}

impl Watch {
    fn add(&mut self, p: &Path) -> Option<StatId> {
        let id = StatId::of(p);
        if self.seen.insert(p.to_path_buf()) {
            self.entries.push((p.to_path_buf(), id));
        }
        id
    }

    /// A file: its own stat; when absent, where its creation would show.
    fn path(&mut self, p: &Path) {
        match self.add(p) {
            Some(id) if id.is_dir() => self.ancestors(p),
            Some(_) => {}
            None => self.nearest(p),
        }
    }

    /// A directory searched: its stat, and its real ancestors'.
    fn dir(&mut self, d: &Path) {
        match self.add(d) {
            Some(_) => self.ancestors(d),
            None => self.nearest(d),
        }
    }

    fn nearest(&mut self, p: &Path) {
        let mut up = p.parent();
        while let Some(u) = up {
            if self.add(u).is_some() {
                self.ancestors(u);
                return;
            }
            up = u.parent();
        }
    }

    fn ancestors(&mut self, p: &Path) {
        let Ok(real) = std::fs::canonicalize(p) else {
            return;
        };
        for a in real.ancestors().take(ANCESTORS + 1) {
            if !self.walked.insert(a.to_path_buf()) {
                break;
            }
            self.add(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn flags_of(list: &[String]) -> Flags {
        super::super::options::parse(list, Path::new("/")).unwrap()
    }

    #[test]
    fn only_modelled_flags_are_cacheable() {
        for ok in [
            "-shared -fPIC -O2 -iquote /src -lm",
            "-O3 -g -Wall -Wno-unused -march=x86-64-v3 -std=c11 -DN=4 -D M -U X",
            "-I /inc -I/inc2 -isystem /sys -include h.h -ffast-math -fvisibility=hidden",
        ] {
            let l = words(ok);
            assert!(cacheable(&l, &flags_of(&l)), "{ok}");
        }
        for bad in [
            "-O2 -march=native",
            "-O2 --param=max-unroll-times=4",
            "-O2 -frecord-gcc-switches=x",
            "-O2 -fsanitize-ignorelist=list.txt",
            "-O2 -m/x",
            "-O2 -Xunknown",
            "-O2 -D",
        ] {
            let l = words(bad);
            let f = super::super::options::parse(&l, Path::new("/")).unwrap_or_default();
            assert!(!cacheable(&l, &f), "{bad}");
        }
    }

    #[test]
    fn search_lists_are_parsed() {
        let text = "install: /usr/lib/gcc/x/12/\nprograms: =/a/:/b\nlibraries: =/c:/d/\n";
        assert_eq!(
            parse_search_lists(text),
            Some(SearchLists {
                programs: vec!["/a/".into(), "/b".into()],
                libraries: vec!["/c".into(), "/d/".into()],
            })
        );
        assert_eq!(parse_search_lists("programs: =/a\n"), None);
    }

    #[test]
    fn an_absent_directory_is_watched_where_it_would_appear() {
        let t = tempfile::tempdir().unwrap();
        let absent = t.path().join("no/such/dir");
        let lists = SearchLists {
            programs: vec![],
            libraries: vec![absent.clone()],
        };
        let answers = Answers {
            defines: Predefined::default(),
            read: vec![],
            link_line: vec![],
            linked: vec![],
            unlinked: vec![],
        };
        let w = watch_list(&lists, &answers, &[], Path::new("/"));
        // Through its first missing component (the rest lie under it).
        assert!(w.contains(&(t.path().join("no"), None)));
        assert!(!w.iter().any(|(p, _)| p == &absent));
        let real = std::fs::canonicalize(t.path()).unwrap();
        assert!(w.iter().any(|(p, id)| p == t.path() && id.is_some()));
        assert!(w.iter().any(|(p, _)| p == &real));
    }

    #[test]
    fn a_kept_digest_is_used_by_its_own_spelling_without_a_stat() {
        let t = tempfile::tempdir().unwrap();
        let lib = t.path().join("libfoo.so");
        std::fs::write(&lib, "GROUP ( x.o )\n").unwrap();
        let id = StatId::of(&lib).unwrap();
        let mut s = Session {
            place: None,
            kept: Some(File {
                key: String::new(),
                answers: Answers {
                    defines: Predefined::default(),
                    read: vec![],
                    link_line: vec![],
                    linked: vec![],
                    unlinked: vec![],
                },
                watch: PathList::default(),
                digests: [(lib.clone(), (id, [7; 32]))].into_iter().collect(),
            }),
            digested: Vec::new(),
        };
        let stats = || memo::test_hooks::STATS.with(|n| n.get());
        let before = stats();
        assert_eq!(s.digest(&lib).unwrap(), (Digest([7; 32]), id));
        assert_eq!(stats(), before, "a kept digest was stat-ed");
        // Another spelling of the same file is not the kept name: read.
        let other = t.path().join(".//libfoo.so");
        assert_ne!(s.digest(&other).unwrap().0, Digest([7; 32]));
        assert!(stats() > before);
    }

    #[test]
    fn an_absent_path_under_another_is_not_stat_ed_yet_its_appearance_shows() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("gcc/../no");
        let deeper = [
            missing.join("bin/x86_64-linux-gnu/12/"),
            missing.join("bin"),
            missing.join("lib/../lib/"),
        ];
        let lists = SearchLists {
            programs: deeper[..2].to_vec(),
            libraries: [&deeper[2..], &[missing.clone()][..]].concat(),
        };
        let answers = Answers {
            defines: Predefined::default(),
            read: vec![],
            link_line: vec![],
            linked: vec![],
            unlinked: vec![],
        };
        std::fs::create_dir(t.path().join("gcc")).unwrap();
        let w = watch_list(&lists, &answers, &[], Path::new("/"));
        assert!(w.contains(&(missing.clone(), None)));
        for d in &deeper {
            assert!(!w.iter().any(|(p, _)| p == d), "{} is stat-ed", d.display());
        }
        // Only what lies inside the temporary directory: `/tmp` above it
        // changes as other tests run.
        let holds = |w: &[(PathBuf, Option<StatId>)]| {
            w.iter()
                .filter(|(p, _)| p.starts_with(t.path()))
                .all(|(p, id)| StatId::of(p) == *id)
        };
        assert!(holds(&w));
        // Any of the pruned paths appearing means the kept prefix appeared.
        std::fs::create_dir_all(t.path().join("no/bin/x86_64-linux-gnu/12")).unwrap();
        assert!(!holds(&w), "the deepest path appeared unnoticed");
    }
}
