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
    std::env::split_paths(path_var?)
        .map(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            cwd.join(dir).join(program)
        })
        .find(|p| is_executable(p))
}

/// The first executable named `name` on `$PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    find_program(OsStr::new(name), std::env::var_os("PATH").as_deref(), &cwd)
}
