//! The compiler's probe results (`--version`, `-dumpmachine`, the `-v`
//! search list), kept in a small file per identity so a later process need
//! not run the compiler three times before it can key anything.
//!
//! The file's name digests everything that could change what the probes
//! say: the path and resolved path, the executable's contents digest and the
//! `(dev, inode, size, mtime, ctime)` of both paths, the leading arguments,
//! `PATH` and every pinned variable. Each include directory's stat is stored
//! with it and checked on load. Anything unexpected in a file (unreadable,
//! damaged, another format version, a changed directory) means probing
//! again: the cache only ever saves work, it is never an error.
//!
//! A script (a file starting `#!`, such as a wrapper) may read any
//! variable, so its key covers the whole environment (but for a few
//! variables no driver reads that change on every launch: see
//! [`environment`]).
//!
//! The executable's digest itself is kept too (`exe-<digest of its path>`),
//! with the stat it was taken under: a driver is a megabyte or more, read
//! again only when its stat changes or is too recent to be trusted.
//!
//! What the driver execs (`cc1`, `collect2`) is not stat'ed here: finding
//! them costs a process. A compiler upgraded in place changes the driver
//! too; the base's kept answers (`probe_cache.rs`) do stat them.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::includes::memo::StatId;
use crate::key::{Digest, PartsHasher};

/// The file format; a file of another version is ignored.
const FORMAT: u32 = 2;

/// What the probes said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probed {
    pub version: String,
    pub target: String,
    pub include_dirs: Vec<PathBuf>,
    /// What `-print-prog-name=` says of the assembler and the linker: a
    /// path, or a bare name the driver runs through `PATH`.
    pub tools: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct File {
    format: u32,
    key: String,
    probed: Probed,
    /// Each include directory's stat, in `include_dirs` order.
    dir_stats: Vec<Option<[i64; 6]>>,
}

/// `(dev, inode, size, mtime, ctime, mode)` of `path`, following links.
fn stat(path: &Path) -> Option<[i64; 6]> {
    std::fs::metadata(path).ok().map(|m| fields(&m))
}

/// [`stat`]'s fields of metadata already read.
fn fields(m: &std::fs::Metadata) -> [i64; 6] {
    [
        m.dev() as i64,
        m.ino() as i64,
        m.size() as i64,
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        m.mode() as i64,
    ]
}

/// `lstat` of `path` (the link itself), same fields.
fn lstat(path: &Path) -> Option<[i64; 6]> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some([
        m.dev() as i64,
        m.ino() as i64,
        m.size() as i64,
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        m.mode() as i64,
    ])
}

/// The identity the cached probes belong to. `real_stat` is `real`'s
/// [`stat`] where the caller took it with the digest (see [`executable`]);
/// else it is taken here.
pub(crate) fn key(
    path: &Path,
    real: &Path,
    exe_digest: &Digest,
    real_stat: Option<[i64; 6]>,
    args: &[String],
    env: &[(&'static str, Option<std::ffi::OsString>)],
    script: bool,
) -> Digest {
    let real_stat = real_stat.or_else(|| stat(real));
    let mut h = PartsHasher::new();
    h.part("kcache-cc-identity")
        .part(FORMAT.to_le_bytes())
        .part(path.as_os_str().as_bytes())
        .part(real.as_os_str().as_bytes())
        .part(exe_digest.as_bytes())
        .part(format!("{:?}", lstat(path)))
        .part(format!("{real_stat:?}"))
        .part(args.join("\0"));
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    h.part(path_var.as_bytes());
    for (k, v) in env {
        h.part(k.as_bytes());
        match v {
            Some(v) => h.part(b"=").part(v.as_bytes()),
            None => h.part(b"unset"),
        };
    }
    if script {
        h.part("script");
        for (k, v) in environment() {
            h.part(k.as_bytes()).part(v.as_bytes());
        }
    }
    h.finish()
}

/// Variables no compiler driver reads that change from one launch to the
/// next: the shell's last command and previous directory, its nesting
/// depth, hyperfine's per-run padding, and kcache's own settings.
const UNREAD_ENV: &[&str] = &[
    "_",
    "OLDPWD",
    "SHLVL",
    "HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET",
];

/// The environment, sorted, but [`UNREAD_ENV`] and `KCACHE_*`: what a key
/// over "the whole environment" covers.
pub(crate) fn environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut all: Vec<_> = std::env::vars_os()
        .filter(|(k, _)| {
            !UNREAD_ENV.iter().any(|u| k == *u) && !k.as_bytes().starts_with(b"KCACHE_")
        })
        .collect();
    all.sort();
    all
}

/// What a kept executable digest rests on.
#[derive(Serialize, Deserialize)]
struct Executable {
    format: u32,
    path: PathBuf,
    stat: StatId,
    digest: [u8; 32],
    script: bool,
}

/// `path`'s contents digest, and whether it is a script (`#!`).
pub(crate) fn digest_executable(path: &Path) -> std::io::Result<(Digest, bool)> {
    let exe = std::fs::read(path)?;
    Ok((
        Digest(*blake3::hash(&exe).as_bytes()),
        exe.starts_with(b"#!"),
    ))
}

/// [`digest_executable`], kept in `dir` under `path` and its stat: a
/// driver is a megabyte or more, read again only when its stat (device,
/// inode, size, modification and change times) changes or is too recent
/// to tell a later write apart. With the digest, the [`stat`] fields it
/// holds under, for [`key`] (`None` where the stat is too recent or the
/// file changed while it was read: the key stats it again).
pub(crate) fn executable(
    dir: &Path,
    path: &Path,
) -> std::io::Result<(Digest, bool, Option<[i64; 6]>)> {
    let Some((stat, meta)) = StatId::with_meta(path).filter(|(s, _)| !s.is_recent()) else {
        return digest_executable(path).map(|(d, s)| (d, s, None));
    };
    let held = fields(&meta);
    let name = format!(
        "exe-{}",
        PartsHasher::new()
            .part("kcache-cc-executable")
            .part(FORMAT.to_le_bytes())
            .part(path.as_os_str().as_bytes())
            .finish()
            .to_hex()
    );
    let kept = read_private(&dir.join(&name))
        .and_then(|text| serde_json::from_slice::<Executable>(&text).ok())
        .filter(|e| e.format == FORMAT && e.path == path && e.stat == stat);
    if let Some(e) = kept {
        return Ok((Digest(e.digest), e.script, Some(held)));
    }
    let (digest, script) = digest_executable(path)?;
    let unchanged = StatId::of(path) == Some(stat);
    if unchanged {
        let e = Executable {
            format: FORMAT,
            path: path.to_path_buf(),
            stat,
            digest: digest.0,
            script,
        };
        if let Ok(text) = serde_json::to_vec(&e) {
            write_private(dir, &name, &text);
        }
    }
    Ok((digest, script, unchanged.then_some(held)))
}

/// The bytes of `path`, a regular file of the user's (not a link) of at
/// most 4 MiB, or `None`.
pub(crate) fn read_private(path: &Path) -> Option<Vec<u8>> {
    // Not blocking: a FIFO planted under a kept file's name would hang the
    // open (review 2026-12-02); it is refused below as no regular file.
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let m = f.metadata().ok()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_file() || m.uid() != unsafe { libc::geteuid() } || m.len() > 4 << 20 {
        return None;
    }
    // The size the file promised, in as few reads as it takes (one), and
    // no more: kept files are written whole under a fresh name and renamed
    // into place, never appended to. One byte of room tells a file that
    // grew since (then `None`, as for any surprise).
    let len = m.len() as usize;
    let mut text = vec![0; len + 1];
    let mut filled = 0;
    while filled < len {
        match f.read(&mut text[filled..]) {
            Ok(0) => return None,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    if filled > len {
        return None;
    }
    text.truncate(len);
    Some(text)
}

/// The cached probes for `key` in `dir`, if a sound file holds them.
pub(crate) fn load(dir: &Path, key: &Digest) -> Option<Probed> {
    let hex = key.to_hex();
    let text = read_private(&dir.join(&hex))?;
    let file: File = serde_json::from_slice(&text).ok()?;
    if file.format != FORMAT || file.key != hex {
        return None;
    }
    let current: Vec<_> = file.probed.include_dirs.iter().map(|d| stat(d)).collect();
    (current == file.dir_stats).then_some(file.probed)
}

/// Keeps `probed` for `key` in `dir` (created 0700; the file 0600, written
/// under a fresh name and renamed into place). Failures are ignored: the
/// next process probes again.
pub(crate) fn save(dir: &Path, key: &Digest, probed: &Probed) {
    let _ = try_save(dir, key, probed);
}

fn try_save(dir: &Path, key: &Digest, probed: &Probed) -> Option<()> {
    let hex = key.to_hex();
    let file = File {
        format: FORMAT,
        key: hex.clone(),
        probed: probed.clone(),
        dir_stats: probed.include_dirs.iter().map(|d| stat(d)).collect(),
    };
    let text = serde_json::to_vec(&file).ok()?;
    write_private(dir, &hex, &text)
}

/// Writes `bytes` as `dir/name` (the directory created 0700 and required
/// to be the user's and not group- or world-writable; the file 0600,
/// written under a fresh name and renamed into place). `None` on any
/// failure: the caller probes again next time.
pub(crate) fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> Option<()> {
    let _ = DirBuilder::new().recursive(true).mode(0o700).create(dir);
    let m = std::fs::symlink_metadata(dir).ok()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_dir() || m.uid() != unsafe { libc::geteuid() } || m.mode() & 0o022 != 0 {
        return None;
    }
    bound(dir);
    let tmp = dir.join(format!(
        ".{name}.{}.{:x}",
        std::process::id(),
        rand_suffix()
    ));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .ok()?;
    if f.write_all(bytes).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    drop(f);
    if std::fs::rename(&tmp, dir.join(name)).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    Some(())
}

/// The most files the directory keeps: every distinct flag list,
/// environment or compiler adds one, and nothing else removes them.
const MAX_FILES: usize = 256;

/// Empties `dir` of kept answers when it holds [`MAX_FILES`] or more (they
/// are only saved work; the next processes probe and keep theirs again).
/// Only files spelled as kcache names them go (review 2026-12-02: every
/// file went, whoever wrote it).
fn bound(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(ours))
        .collect();
    if names.len() < MAX_FILES {
        return;
    }
    for p in names {
        let _ = std::fs::remove_file(p);
    }
}

/// Whether `name` is one kcache gives a kept file (`[exe-|closure-]HEX64`)
/// or its temp file (`.NAME.PID.HEX`).
fn ours(name: &str) -> bool {
    let kept = |n: &str| {
        let hex = n
            .strip_prefix("exe-")
            .or_else(|| n.strip_prefix("closure-"))
            .unwrap_or(n);
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    match name.strip_prefix('.') {
        Some(rest) => rest.split('.').next().is_some_and(kept),
        None => kept(name),
    }
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (&t as *const u64 as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_files_named_as_kcache_names_them_are_bounded_away() {
        let hex = "0123456789abcdef".repeat(4);
        for n in [
            hex.clone(),
            format!("exe-{hex}"),
            format!("closure-{hex}"),
            format!(".{hex}.12.ff"),
        ] {
            assert!(super::ours(&n), "{n}");
        }
        for n in [
            "notes.txt",
            "exe-1234",
            &format!("{hex}x"),
            &hex.to_uppercase(),
            ".bashrc",
        ] {
            assert!(!super::ours(n), "{n}");
        }
        // Nor are they counted: 300 of another's files are left alone.
        let t = tempfile::tempdir().unwrap();
        for i in 0..300 {
            std::fs::write(t.path().join(format!("mine-{i}")), "x").unwrap();
        }
        super::bound(t.path());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 300);
    }

    #[test]
    fn a_fifo_under_a_kept_name_is_no_record_and_does_not_block() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(super::read_private(&p), None);
    }

    use super::*;
    use std::ffi::OsString;

    fn probed() -> Probed {
        Probed {
            version: "cc 1.0".into(),
            target: "x86_64-linux-gnu".into(),
            include_dirs: vec![PathBuf::from("/")],
            tools: vec!["as".into()],
        }
    }

    #[test]
    fn a_pinned_variable_changes_the_key_and_misses() {
        let dir = tempfile::tempdir().unwrap();
        let exe = Path::new("/bin/sh");
        let d = Digest([7; 32]);
        let unset = [("LIBRARY_PATH", None)];
        let set = [("LIBRARY_PATH", Some(OsString::from("/opt/lib")))];
        let empty = [("LIBRARY_PATH", Some(OsString::new()))];
        let k_unset = key(exe, exe, &d, None, &[], &unset, false);
        let k_set = key(exe, exe, &d, None, &[], &set, false);
        let k_empty = key(exe, exe, &d, None, &[], &empty, false);
        assert_ne!(k_unset, k_set);
        assert_ne!(k_unset, k_empty);
        assert_ne!(k_set, k_empty);
        save(dir.path(), &k_unset, &probed());
        assert_eq!(load(dir.path(), &k_unset), Some(probed()));
        assert_eq!(load(dir.path(), &k_set), None);
    }

    #[test]
    fn the_arguments_and_the_contents_change_the_key() {
        let exe = Path::new("/bin/sh");
        let base = key(exe, exe, &Digest([7; 32]), None, &[], &[], false);
        assert_ne!(base, key(exe, exe, &Digest([8; 32]), None, &[], &[], false));
        assert_ne!(
            base,
            key(
                exe,
                exe,
                &Digest([7; 32]),
                None,
                &["-m32".into()],
                &[],
                false
            )
        );
        assert_ne!(
            base,
            key(
                exe,
                Path::new("/bin"),
                &Digest([7; 32]),
                None,
                &[],
                &[],
                false
            )
        );
        assert_ne!(base, key(exe, exe, &Digest([7; 32]), None, &[], &[], true));
    }

    #[test]
    fn the_stat_kept_with_the_digest_keys_as_a_fresh_one_and_a_changed_executable_misses() {
        use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
        ALL_OLD.with(|a| a.set(true));
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("cc");
        std::fs::write(&exe, b"#!/bin/sh\n").unwrap();
        let cache = dir.path().join("kept");
        let key_of = |held: Option<[i64; 6]>, d: &Digest, script: bool| {
            key(&exe, &exe, d, held, &[], &[], script)
        };
        let mut keys = Vec::new();
        for round in ["digested", "kept"] {
            let (d, script, held) = executable(&cache, &exe).unwrap();
            assert_eq!(held, stat(&exe), "{round}: the stat the digest holds under");
            assert_eq!(
                key_of(held, &d, script),
                key_of(None, &d, script),
                "{round}"
            );
            keys.push(key_of(held, &d, script));
        }
        assert_eq!(keys[0], keys[1]);
        std::fs::write(&exe, b"#!/bin/sh\nexit 1\n").unwrap();
        let (d, script, held) = executable(&cache, &exe).unwrap();
        assert_eq!(held, stat(&exe), "digested afresh, under the new stat");
        assert_ne!(
            key_of(held, &d, script),
            keys[0],
            "a changed executable misses"
        );
        ALL_OLD.with(|a| a.set(false));
        let (_, _, held) = executable(&cache, &exe).unwrap();
        assert_eq!(
            held, None,
            "a file changed just now holds no stat: the key takes its own"
        );
    }

    #[test]
    fn a_file_under_another_name_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let exe = Path::new("/bin/sh");
        let a = key(exe, exe, &Digest([1; 32]), None, &[], &[], false);
        let b = key(exe, exe, &Digest([2; 32]), None, &[], &[], false);
        save(dir.path(), &a, &probed());
        std::fs::rename(dir.path().join(a.to_hex()), dir.path().join(b.to_hex())).unwrap();
        assert_eq!(load(dir.path(), &b), None, "the file names its own key");
    }

    #[test]
    fn a_kept_file_is_read_whole_and_only_as_a_plain_file() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 1, 4095, 4096, 4097, 100_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            write_private(dir.path(), "f", &bytes).unwrap();
            assert_eq!(read_private(&dir.path().join("f")), Some(bytes), "{len}");
        }
        std::os::unix::fs::symlink(dir.path().join("f"), dir.path().join("link")).unwrap();
        assert_eq!(read_private(&dir.path().join("link")), None, "a link");
        assert_eq!(read_private(dir.path()), None, "a directory");
        assert_eq!(read_private(&dir.path().join("absent")), None);
    }
}
