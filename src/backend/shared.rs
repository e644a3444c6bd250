//! Helpers every backend uses, written once: which kernel names are
//! identifiers, and finding a program as `execvp` would.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Whether `s` is a C identifier: what every GPU language accepts as a
/// kernel name, and what a C string can carry.
pub(crate) fn is_identifier(s: &str) -> bool {
    identifier(s, false)
}

/// [`is_identifier`], with GCC's `$` allowed (the C compiler accepts it).
pub(crate) fn is_gnu_identifier(s: &str) -> bool {
    identifier(s, true)
}

fn identifier(s: &str, dollar: bool) -> bool {
    let part = |c: char| c == '_' || (dollar && c == '$');
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || part(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || part(c))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// `program` as a path: a name with a `/` is taken against `cwd`, a bare name
/// is searched in `path_var` (`$PATH`) as `execvp` would.
pub(crate) fn find_program(
    program: &OsStr,
    path_var: Option<&OsStr>,
    cwd: &Path,
) -> Option<PathBuf> {
    if program.as_encoded_bytes().contains(&b'/') || Path::new(program).is_absolute() {
        let p = cwd.join(program);
        return is_executable(&p).then_some(p);
    }
    // A directory listed twice (shell start-up files often append to
    // `PATH` again) answers the same the second time: looked at once.
    let mut seen: Vec<PathBuf> = Vec::new();
    std::env::split_paths(path_var?)
        .map(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            cwd.join(dir).join(program)
        })
        .filter(|p| {
            let fresh = !seen.iter().any(|s| s.as_os_str() == p.as_os_str());
            if fresh {
                seen.push(p.clone());
            }
            fresh
        })
        .find(|p| is_executable(p))
}

/// The first executable named `name` on `$PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    find_program(OsStr::new(name), std::env::var_os("PATH").as_deref(), &cwd)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_directory_listed_twice_on_path_does_not_hide_the_ones_between() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir(d).unwrap();
        }
        let exe = b.join("tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([&a, &a, &b, &a]).unwrap();
        assert_eq!(
            find_program(OsStr::new("tool"), Some(&path), t.path()),
            Some(exe)
        );
        assert_eq!(
            find_program(OsStr::new("none"), Some(&path), t.path()),
            None
        );
    }
}
