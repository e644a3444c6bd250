//! The cache directory: created private, refused when someone else controls
//! it.
//!
//! Entries are programs kcache will load and run, so a directory another user
//! can write (or redirect through a symlink) would let them plant code. So
//! would one they can swap for their own: every directory above the root
//! must leave it to the user (review 2026-12-02, store F2), as ssh's
//! `StrictModes` asks of `~/.ssh`.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::StoreError;

/// Makes `root` absolute, creates it (mode exactly 0700, parents too) if
/// missing, and checks that the current user controls it: every symlink on
/// the way is owned by the user or by root and sits in a directory others
/// cannot write, the directory itself is owned by the user and writable
/// by no one else, and no directory above it lets another user replace it
/// (see [`replaceable_by_others`]).
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
        // A sticky one is shared on purpose (`/tmp`): narrowing it would
        // break the system (review 2026-12-02, store F9.4).
        let advice = if mode & 0o1000 != 0 {
            "it is a shared directory: use a directory of your own".to_string()
        } else {
            format!("run `chmod go-w {}` if that is unintended", root.display())
        };
        return Err(refuse(format!(
            "writable by other users (mode {:o}); {advice}",
            mode & 0o7777
        )));
    }
    // Every component was just seen not to be a link: with no `..` either,
    // the real path is the path itself, less its redundant separators, and
    // its directories are the ones the walk saw.
    let (real, chain) =
        if walk.whole && !walk.linked && !root.components().any(|c| c == Component::ParentDir) {
            (root.components().collect(), walk.seen)
        } else {
            let real = fs::canonicalize(&root)
                .map_err(|e| StoreError::io("resolve cache directory", &root, e))?;
            let chain = lstat_chain(&real)?;
            (real, chain)
        };
    let ancestors = &chain[..chain.len().saturating_sub(1)];
    for (dir, perms) in ancestors {
        if let Some(why) = replaceable_by_others(*perms, me, &is_private_group) {
            return Err(refuse(format!(
                "{} above it {why}, so another user could replace it; use a directory of your own",
                dir.display()
            )));
        }
    }
    Ok(real)
}

/// What the root check needs of a directory's `lstat`.
#[derive(Clone, Copy, Debug)]
struct Perms {
    mode: u32,
    uid: u32,
    gid: u32,
}

impl Perms {
    fn of(m: &fs::Metadata) -> Perms {
        Perms {
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
        }
    }
}

/// Each component of `real` (a path without symlinks) with its permissions.
fn lstat_chain(real: &Path) -> Result<Vec<(PathBuf, Perms)>, StoreError> {
    let mut at = PathBuf::new();
    let mut chain = Vec::new();
    for comp in real.components() {
        at.push(comp);
        let m = fs::symlink_metadata(&at).map_err(|e| StoreError::io("stat", &at, e))?;
        chain.push((at.clone(), Perms::of(&m)));
    }
    Ok(chain)
}

/// Why another user than `me` could rename what the directory `p` holds,
/// or `None` when only `me` and root can: the directory is `me`'s or root's,
/// and no one else can write it, unless it is sticky (like `/tmp`, where
/// only an entry's owner, the directory's owner and root rename it; the
/// next component is then checked in turn: the user's or root's) or
/// group-writable for `me`'s private group alone (`umask 002` under
/// user-private groups, as Debian's ssh allows).
fn replaceable_by_others(p: Perms, me: u32, private_group: &dyn Fn(u32) -> bool) -> Option<String> {
    let mode = p.mode & 0o7777;
    if p.uid != me && p.uid != 0 {
        return Some(format!("is owned by uid {}", p.uid));
    }
    if mode & 0o1000 != 0 {
        return None;
    }
    if mode & 0o002 != 0 {
        return Some(format!(
            "is writable by every user (mode {mode:o}, not sticky)"
        ));
    }
    if mode & 0o020 != 0 && !private_group(p.gid) {
        return Some(format!(
            "is writable by group {} (mode {mode:o}, not sticky)",
            p.gid
        ));
    }
    None
}

/// Whether `gid` is the current user's private group: their primary group,
/// named as they are, listing no other member. (Another user given it as
/// their primary group is not looked for: that takes reading every user.)
fn is_private_group(gid: u32) -> bool {
    let Some((name, primary)) = user_entry(euid()) else {
        return false;
    };
    if primary != gid {
        return false;
    }
    group_entry(gid)
        .is_some_and(|(group, members)| group == name && members.iter().all(|m| *m == name))
}

/// The user's name and primary group.
fn user_entry(uid: u32) -> Option<(Vec<u8>, u32)> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids).
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut out = std::ptr::null_mut();
        // SAFETY: the buffer and the out pointers are valid for the call;
        // the strings it fills point into `buf`, read before it changes.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut out) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || out.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string in `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
        return Some((name.to_bytes().to_vec(), pw.pw_gid));
    }
}

/// A group's name and its listed members.
fn group_entry(gid: u32) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: all-zero is a valid `group` (null pointers, zero id).
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut out = std::ptr::null_mut();
        // SAFETY: as in `user_entry`.
        let rc =
            unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr().cast(), buf.len(), &mut out) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || out.is_null() {
            return None;
        }
        // SAFETY: NUL-terminated strings in `buf`; `gr_mem` a null-ended
        // array of them.
        unsafe {
            let name = std::ffi::CStr::from_ptr(gr.gr_name).to_bytes().to_vec();
            let mut members = Vec::new();
            let mut m = gr.gr_mem;
            while !m.is_null() && !(*m).is_null() {
                members.push(std::ffi::CStr::from_ptr(*m).to_bytes().to_vec());
                m = m.add(1);
            }
            return Some((name, members));
        }
    }
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
    /// Each component seen, with its permissions (not followed).
    seen: Vec<(PathBuf, Perms)>,
}

/// Refuses a path that passes through a symlink someone else controls.
fn check_symlinks(path: &Path) -> Result<Walk, StoreError> {
    let me = euid();
    let mut at = PathBuf::new();
    let mut linked = false;
    let mut last = None;
    let mut seen = Vec::new();
    for comp in path.components() {
        at.push(comp);
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Walk {
                    whole: false,
                    linked,
                    last: None,
                    seen,
                })
            }
            Err(e) => return Err(StoreError::io("stat", &at, e)),
        };
        let (link, owner) = (meta.file_type().is_symlink(), meta.uid());
        seen.push((at.clone(), Perms::of(&meta)));
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
        seen,
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
    fn a_sticky_shared_root_is_refused_without_advice_to_narrow_it() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("shared");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o1777)).unwrap();
        let e = prepare_root(&root).unwrap_err().to_string();
        assert!(e.contains("use a directory of your own"), "{e}");
        assert!(!e.contains("chmod"), "{e}");
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

    /// Review 2026-12-02, store F2: a root in a directory others could
    /// write was accepted, and swapped for theirs.
    #[test]
    fn ancestor_rules_refuse_what_another_user_could_replace() {
        let me = 1000;
        let mine = |g| g == 1000;
        let p = |mode, uid, gid| Perms { mode, uid, gid };
        let verdict = |perms| replaceable_by_others(perms, me, &mine);
        for ok in [
            p(0o40755, 0, 0),
            p(0o40700, me, 1000),
            p(0o41777, 0, 0),
            p(0o41770, me, 50),
            // Group-writable for the user's own private group only.
            p(0o40775, me, 1000),
        ] {
            assert_eq!(verdict(ok), None, "{ok:?}");
        }
        for (bad, says) in [
            (p(0o40755, 2002, 2002), "owned by uid 2002"),
            (p(0o41777, 2002, 0), "owned by uid 2002"),
            (
                p(0o40777, 0, 0),
                "writable by every user (mode 777, not sticky)",
            ),
            (p(0o40757, me, 1000), "writable by every user"),
            (
                p(0o42775, me, 50),
                "writable by group 50 (mode 2775, not sticky)",
            ),
            (p(0o40770, 0, 50), "writable by group 50"),
        ] {
            let why = verdict(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(why.contains(says), "{why}");
        }
    }

    #[test]
    fn a_root_below_a_directory_others_can_write_is_refused_unless_sticky() {
        let t = tempfile::tempdir().unwrap();
        let team = fs::canonicalize(t.path()).unwrap().join("team");
        fs::create_dir(&team).unwrap();
        let root = team.join("kc");
        fs::set_permissions(&team, fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_root(&root).unwrap_err();
        assert!(matches!(e, StoreError::UnsafeRoot { .. }), "{e}");
        assert!(e.to_string().contains("writable by every user"), "{e}");
        // The same through a symlink of the user's own: the real path counts.
        let link = team.with_file_name("link");
        symlink(&team, &link).unwrap();
        let e = prepare_root(&link.join("kc")).unwrap_err();
        assert!(e.to_string().contains("writable by every user"), "{e}");
        // Group-writable, for a group that is not the user's own alone (as
        // root, any group can be given; else the mode rules are checked
        // above without the file system).
        if is_root() {
            std::os::unix::fs::chown(&team, None, Some(65534)).unwrap();
            fs::set_permissions(&team, fs::Permissions::from_mode(0o2775)).unwrap();
            let e = prepare_root(&root).unwrap_err();
            assert!(e.to_string().contains("writable by group 65534"), "{e}");
        }
        // Sticky, like /tmp: what the user owns in it is theirs to move.
        fs::set_permissions(&team, fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(prepare_root(&root).unwrap(), root);
        assert_eq!(prepare_root(&link.join("kc")).unwrap(), root);
    }
}
