//! The cache directory: created private, refused when someone else controls
//! it.
//!
//! Entries are programs kcache will load and run, so a directory another user
//! can write (or redirect through a symlink) would let them plant code.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::StoreError;

/// Makes `root` absolute, creates it (mode exactly 0700, parents too) if
/// missing, and checks that the current user controls it: every symlink on
/// the way is owned by the user or by root and sits in a directory others
/// cannot write, and the directory itself is owned by the user and writable
/// by no one else.
///
/// Returns the root's real path (no symlink in it), so that the stores can
/// refuse every symlink below it: see [`super::nofollow`].
pub(crate) fn prepare_root(root: &Path) -> Result<PathBuf, StoreError> {
    let root = if root.is_absolute() {
        root.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| StoreError::io("get current directory", root, e))?
            .join(root)
    };
    let mut walk = check_symlinks(&root)?;
    // A root the walk saw whole, itself no symlink, is the directory it
    // stat-ed last: nothing to create, nothing to stat again.
    let meta = match walk.last.take() {
        Some(m) if walk.whole && !m.file_type().is_symlink() => m,
        _ => {
            let created = create_private(&root)
                .map_err(|e| StoreError::io("create cache directory", &root, e))?;
            // The symlinks again where a component may have appeared since:
            // one this process created, or one missing when they were checked.
            if created || !walk.whole {
                walk = check_symlinks(&root)?;
            }
            fs::metadata(&root).map_err(|e| StoreError::io("stat", &root, e))?
        }
    };
    let refuse = |reason: String| StoreError::UnsafeRoot {
        path: root.clone(),
        reason,
    };
    if !meta.is_dir() {
        return Err(refuse("not a directory".into()));
    }
    let me = euid();
    if meta.uid() != me {
        return Err(refuse(format!(
            "owned by uid {}, not by the current user (uid {me})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(refuse(format!(
            "writable by other users (mode {:o}); run `chmod go-w {}` if that is unintended",
            mode & 0o7777,
            root.display()
        )));
    }
    // Every component was just seen not to be a link: with no `..` either,
    // the real path is the path itself, less its redundant separators.
    if walk.whole && !walk.linked && !root.components().any(|c| c == Component::ParentDir) {
        return Ok(root.components().collect());
    }
    fs::canonicalize(&root).map_err(|e| StoreError::io("resolve cache directory", &root, e))
}

/// Creates `dir` and its missing parents, each mode exactly 0700 (the umask
/// could narrow the mode, or with `umask 000` an inherited default widen
/// it: neither is left to chance). Whether it made any.
fn create_private(dir: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(dir) {
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        create_private(parent)?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map(|()| true),
        // Another process made it first: its mode is checked by the caller.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(true),
        Err(e) => Err(e),
    }
}

/// A descriptor of the directory at `path`, to open entries beneath: reached
/// without a symlink in any component, a directory, owned by the current
/// user and writable by no one else (what [`prepare_root`] asks of the
/// root). Anything else is an error, and the store opens by path instead.
pub(crate) fn hold_private_dir(path: &Path) -> io::Result<fs::File> {
    let dir = fs::File::from(super::nofollow::open(
        path,
        libc::O_PATH | libc::O_DIRECTORY,
        0,
    )?);
    let meta = dir.metadata()?;
    if !meta.is_dir() || meta.uid() != euid() || meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a private directory of the current user",
        ));
    }
    Ok(dir)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What [`check_symlinks`] saw of a path.
struct Walk {
    /// Every component exists (none was missing when checked).
    whole: bool,
    /// Some component is a symlink.
    linked: bool,
    /// The last component's own metadata (not followed), when it is there.
    last: Option<fs::Metadata>,
}

/// Refuses a path that passes through a symlink someone else controls.
fn check_symlinks(path: &Path) -> Result<Walk, StoreError> {
    let me = euid();
    let mut at = PathBuf::new();
    let mut linked = false;
    let mut last = None;
    for comp in path.components() {
        at.push(comp);
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Walk {
                    whole: false,
                    linked,
                    last: None,
                })
            }
            Err(e) => return Err(StoreError::io("stat", &at, e)),
        };
        let (link, owner) = (meta.file_type().is_symlink(), meta.uid());
        last = Some(meta);
        if !link {
            continue;
        }
        linked = true;
        let refuse = |reason: String| StoreError::UnsafeRoot {
            path: at.clone(),
            reason,
        };
        if owner != me && owner != 0 {
            return Err(refuse(format!(
                "reached through a symlink owned by uid {owner} (not the current user, uid {me})"
            )));
        }
        if let Some(parent) = at.parent() {
            let pm = fs::metadata(parent).map_err(|e| StoreError::io("stat", parent, e))?;
            let mode = pm.permissions().mode();
            let sticky = mode & 0o1000 != 0;
            if mode & 0o022 != 0 && !sticky {
                return Err(refuse(format!(
                    "reached through a symlink in {}, which other users can write (mode {:o})",
                    parent.display(),
                    mode & 0o7777
                )));
            }
        }
    }
    Ok(Walk {
        whole: true,
        linked,
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn is_root() -> bool {
        euid() == 0
    }

    #[test]
    fn creates_private_directories() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("a/b/kcache");
        let got = prepare_root(&root).unwrap();
        assert_eq!(got, root);
        let mode = fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Opening again is fine.
        prepare_root(&root).unwrap();
    }

    #[test]
    fn refuses_a_directory_others_can_write() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("open");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_root(&root).unwrap_err();
        assert!(matches!(e, StoreError::UnsafeRoot { .. }), "{e}");
        assert!(e.to_string().contains("writable by other users"), "{e}");
    }

    #[test]
    fn the_root_is_its_real_path_however_it_is_named() {
        let t = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(real.join("a/b")).unwrap();
        symlink(real.join("a"), real.join("link")).unwrap();
        let spellings = [
            format!("{}/a/b", real.display()),
            format!("{}//a/./b/", real.display()),
            format!("{}/a/b/../b", real.display()),
            format!("{}/link/b", real.display()),
            format!("{}/link/../a/b", real.display()),
        ];
        for s in spellings {
            let got = prepare_root(Path::new(&s)).unwrap();
            assert_eq!(got, real.join("a/b"), "{s}");
            assert_eq!(got, fs::canonicalize(&s).unwrap(), "{s}");
        }
        // The same for a root this call creates.
        let made = prepare_root(&real.join("link/new")).unwrap();
        assert_eq!(made, real.join("a/new"));
    }

    #[test]
    fn refuses_a_file() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("f");
        fs::write(&root, b"").unwrap();
        assert!(prepare_root(&root).is_err());
    }

    #[test]
    fn accepts_own_symlink() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        let link = t.path().join("link");
        symlink(&real, &link).unwrap();
        prepare_root(&link.join("kcache")).unwrap();
        assert!(real.join("kcache").is_dir());
    }

    #[test]
    fn a_root_that_is_itself_a_symlink_is_checked_through_it() {
        // The walk's own stat of the last component answers only for a
        // directory: a link there is followed and its target checked.
        let t = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(t.path()).unwrap().join("real");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        let link = real.with_file_name("link");
        symlink(&real, &link).unwrap();
        assert_eq!(prepare_root(&link).unwrap(), real);
        fs::set_permissions(&real, fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_root(&link).unwrap_err();
        assert!(e.to_string().contains("writable by other users"), "{e}");
        fs::remove_dir(&real).unwrap();
        fs::write(&real, b"").unwrap();
        let e = prepare_root(&link).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn refuses_a_directory_owned_by_another_user() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("theirs");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
        } else {
            // Not root: a root-owned directory is someone else's.
            let e = prepare_root(Path::new("/")).unwrap_err();
            assert!(e.to_string().contains("owned by uid 0"), "{e}");
            return;
        }
        let e = prepare_root(&root).unwrap_err();
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    }

    #[test]
    fn refuses_a_symlink_owned_by_another_user() {
        if !is_root() {
            eprintln!("skipped: needs root to create a symlink owned by another user");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = t.path().join("link");
        symlink(&real, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let e = prepare_root(&link.join("kcache")).unwrap_err();
        assert!(e.to_string().contains("symlink owned by uid 65534"), "{e}");
        assert!(!real.join("kcache").exists(), "nothing created through it");
    }

    #[test]
    fn refuses_a_symlink_others_can_replace() {
        let t = tempfile::tempdir().unwrap();
        let shared = t.path().join("shared");
        fs::create_dir(&shared).unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        symlink(&real, shared.join("link")).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_root(&shared.join("link/kcache")).unwrap_err();
        assert!(e.to_string().contains("which other users can write"), "{e}");
        // A sticky directory (like /tmp) protects its entries' owners.
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        prepare_root(&shared.join("link/kcache")).unwrap();
    }
}
