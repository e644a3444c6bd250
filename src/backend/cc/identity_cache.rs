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
//! variable, so its key covers the whole environment.
//!
//! What the driver execs (`cc1`, `collect2`) is not stat'ed: finding them
//! costs a process. A compiler upgraded in place changes the driver too.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::key::{Digest, PartsHasher};

/// The file format; a file of another version is ignored.
const FORMAT: u32 = 1;

/// What the probes said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probed {
    pub version: String,
    pub target: String,
    pub include_dirs: Vec<PathBuf>,
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
    let m = std::fs::metadata(path).ok()?;
    Some([
        m.dev() as i64,
        m.ino() as i64,
        m.size() as i64,
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        m.mode() as i64,
    ])
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

/// The identity the cached probes belong to.
pub(crate) fn key(
    path: &Path,
    real: &Path,
    exe_digest: &Digest,
    args: &[String],
    env: &[(&'static str, Option<std::ffi::OsString>)],
    script: bool,
) -> Digest {
    use std::os::unix::ffi::OsStrExt as _;
    let mut h = PartsHasher::new();
    h.part("kcache-cc-identity")
        .part(FORMAT.to_le_bytes())
        .part(path.as_os_str().as_bytes())
        .part(real.as_os_str().as_bytes())
        .part(exe_digest.as_bytes())
        .part(format!("{:?}", lstat(path)))
        .part(format!("{:?}", stat(real)))
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
        let mut all: Vec<_> = std::env::vars_os().collect();
        all.sort();
        h.part("script");
        for (k, v) in all {
            h.part(k.as_bytes()).part(v.as_bytes());
        }
    }
    h.finish()
}

/// The cached probes for `key` in `dir`, if a sound file holds them.
pub(crate) fn load(dir: &Path, key: &Digest) -> Option<Probed> {
    let hex = key.to_hex();
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(&hex))
        .ok()?;
    let m = f.metadata().ok()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_file() || m.uid() != unsafe { libc::geteuid() } || m.len() > 1 << 20 {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    let file: File = serde_json::from_str(&text).ok()?;
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
    let _ = DirBuilder::new().recursive(true).mode(0o700).create(dir);
    let m = std::fs::symlink_metadata(dir).ok()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_dir() || m.uid() != unsafe { libc::geteuid() } || m.mode() & 0o022 != 0 {
        return None;
    }
    let hex = key.to_hex();
    let file = File {
        format: FORMAT,
        key: hex.clone(),
        probed: probed.clone(),
        dir_stats: probed.include_dirs.iter().map(|d| stat(d)).collect(),
    };
    let text = serde_json::to_vec(&file).ok()?;
    let tmp = dir.join(format!(".{hex}.{}.{:x}", std::process::id(), rand_suffix()));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .ok()?;
    if f.write_all(&text).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    drop(f);
    if std::fs::rename(&tmp, dir.join(&hex)).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    Some(())
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
    use super::*;
    use std::ffi::OsString;

    fn probed() -> Probed {
        Probed {
            version: "cc 1.0".into(),
            target: "x86_64-linux-gnu".into(),
            include_dirs: vec![PathBuf::from("/")],
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
        let k_unset = key(exe, exe, &d, &[], &unset, false);
        let k_set = key(exe, exe, &d, &[], &set, false);
        let k_empty = key(exe, exe, &d, &[], &empty, false);
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
        let base = key(exe, exe, &Digest([7; 32]), &[], &[], false);
        assert_ne!(base, key(exe, exe, &Digest([8; 32]), &[], &[], false));
        assert_ne!(
            base,
            key(exe, exe, &Digest([7; 32]), &["-m32".into()], &[], false)
        );
        assert_ne!(
            base,
            key(exe, Path::new("/bin"), &Digest([7; 32]), &[], &[], false)
        );
        assert_ne!(base, key(exe, exe, &Digest([7; 32]), &[], &[], true));
    }

    #[test]
    fn a_file_under_another_name_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let exe = Path::new("/bin/sh");
        let a = key(exe, exe, &Digest([1; 32]), &[], &[], false);
        let b = key(exe, exe, &Digest([2; 32]), &[], &[], false);
        save(dir.path(), &a, &probed());
        std::fs::rename(dir.path().join(a.to_hex()), dir.path().join(b.to_hex())).unwrap();
        assert_eq!(load(dir.path(), &b), None, "the file names its own key");
    }
}
