//! The system C compiler: found once, asked who it is once, run the same way
//! every time.
//!
//! # The environment the compiler runs in
//!
//! Environment variables can make a compiler read or write files no option
//! names. Every run (probes and compiles alike):
//!
//! * drops the include-path variables (`CPATH`, `C_INCLUDE_PATH`, ...) and the
//!   dependency-output ones (`DEPENDENCIES_OUTPUT`, `SUNPRO_DEPENDENCIES`):
//!   pass `-I` instead, which the program key sees;
//! * pins the variables that choose the compiler's parts or change its output
//!   (`GCC_EXEC_PREFIX`, `COMPILER_PATH`, `LIBRARY_PATH`, `SOURCE_DATE_EPOCH`,
//!   `CCC_OVERRIDE_OPTIONS`) to their values at construction, which the
//!   identity records;
//! * sets `LC_ALL=C`, so the version text and the diagnostics the backend
//!   reads do not depend on the user's locale.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::backend::BackendError;
use crate::key::Digest;

const FAMILY: &str = "cc";

/// Variables removed from the compiler's environment.
pub(crate) const REMOVED_ENV: &[&str] = &[
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "OBJCPLUS_INCLUDE_PATH",
    "DEPENDENCIES_OUTPUT",
    "SUNPRO_DEPENDENCIES",
];

/// Variables pinned to their value at construction (and part of the identity).
pub(crate) const PINNED_ENV: &[&str] = &[
    "GCC_EXEC_PREFIX",
    "COMPILER_PATH",
    "LIBRARY_PATH",
    "SOURCE_DATE_EPOCH",
    "CCC_OVERRIDE_OPTIONS",
];

/// The compiler command `$CC` asks for (`cc` when unset or blank).
pub(crate) fn spec_from_env(cc: Option<OsString>) -> OsString {
    match cc {
        Some(v) if !v.to_string_lossy().trim().is_empty() => v,
        _ => OsString::from("cc"),
    }
}

/// Splits a compiler command (`gcc`, `/opt/bin/clang`, `gcc -m64`) into the
/// program and its leading arguments, on whitespace (no quoting: a path with
/// spaces must come through [`super::CcBuilder::compiler_path`]).
pub(crate) fn split_spec(spec: &OsStr) -> Result<(String, Vec<String>), String> {
    let s = spec
        .to_str()
        .ok_or_else(|| format!("the compiler command {spec:?} is not UTF-8"))?;
    let mut words = s.split_whitespace().map(str::to_string);
    let program = words
        .next()
        .ok_or_else(|| "the compiler command is empty".to_string())?;
    Ok((program, words.collect()))
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

/// `program` as an absolute path: a name with a `/` is taken against `cwd`, a
/// bare name is searched in `path_var` (`$PATH`) as `execvp` would.
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

/// The compiler, resolved and identified once.
#[derive(Clone, Debug)]
pub(crate) struct Compiler {
    /// The absolute path it was found at.
    pub path: PathBuf,
    /// Leading arguments that came with the command.
    pub args: Vec<String>,
    /// The path with every symbolic link resolved.
    pub real: PathBuf,
    /// The executable's contents digest (a wrapper script edited in place
    /// changes it).
    pub exe_digest: Digest,
    /// `--version`'s output.
    pub version: String,
    /// `-dumpmachine`'s output.
    pub target: String,
    /// The compiler's own include directories, in search order.
    pub include_dirs: Vec<PathBuf>,
    /// [`PINNED_ENV`] values at construction.
    pub env: Vec<(&'static str, Option<OsString>)>,
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    BackendError::Unavailable {
        backend: FAMILY,
        reason: reason.into(),
    }
}

impl Compiler {
    /// Finds `program` (through `PATH` when it has no `/`).
    pub(crate) fn locate(program: &OsStr) -> Result<PathBuf, BackendError> {
        let cwd = std::env::current_dir()
            .map_err(|e| unavailable(format!("no current directory: {e}")))?;
        find_program(program, std::env::var_os("PATH").as_deref(), &cwd).ok_or_else(|| {
            unavailable(format!(
                "compiler `{}` not found{}",
                program.to_string_lossy(),
                if Path::new(program).components().count() > 1 {
                    " (or not executable)"
                } else {
                    " in PATH"
                }
            ))
        })
    }

    /// Finds and identifies `program`, run with leading arguments `args`.
    pub(crate) fn detect(program: &OsStr, args: Vec<String>) -> Result<Compiler, BackendError> {
        let path = Self::locate(program)?;
        let real = std::fs::canonicalize(&path).map_err(|source| BackendError::Io {
            backend: FAMILY,
            path: path.clone(),
            source,
        })?;
        let exe = std::fs::read(&real).map_err(|source| BackendError::Io {
            backend: FAMILY,
            path: real.clone(),
            source,
        })?;
        let mut c = Compiler {
            path,
            args,
            real,
            exe_digest: Digest(*blake3::hash(&exe).as_bytes()),
            version: String::new(),
            target: String::new(),
            include_dirs: Vec::new(),
            env: PINNED_ENV
                .iter()
                .map(|k| (*k, std::env::var_os(k)))
                .collect(),
        };
        c.version = c.version_text()?;
        c.target = c.dumpmachine();
        c.include_dirs = c.search_dirs();
        Ok(c)
    }

    /// A command running the compiler with its leading arguments, in the
    /// environment the module docs describe, stdin closed.
    pub(crate) fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(&self.args).stdin(Stdio::null()).env("LC_ALL", "C");
        for k in REMOVED_ENV {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<Output, BackendError> {
        self.command()
            .args(args)
            .output()
            .map_err(|source| BackendError::Io {
                backend: FAMILY,
                path: self.path.clone(),
                source,
            })
    }

    fn version_text(&self) -> Result<String, BackendError> {
        let out = self.run(&["--version"])?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || text.is_empty() {
            return Err(unavailable(format!(
                "`{} --version` failed ({}): {}",
                self.path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(text)
    }

    /// The target triple, or `unknown` for a compiler without `-dumpmachine`
    /// (the identity then rests on the path, digest and version).
    fn dumpmachine(&self) -> String {
        match self.run(&["-dumpmachine"]) {
            Ok(out) if out.status.success() => {
                let t = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if t.is_empty() {
                    "unknown".into()
                } else {
                    t
                }
            }
            _ => "unknown".into(),
        }
    }

    /// The `#include <...>` search list `-v` prints; empty when the compiler
    /// does not say (every bracketed include is then refused as unresolved).
    fn search_dirs(&self) -> Vec<PathBuf> {
        match self.run(&["-xc", "-E", "-v", "/dev/null"]) {
            Ok(out) => parse_search_dirs(&String::from_utf8_lossy(&out.stderr)),
            Err(_) => Vec::new(),
        }
    }

    /// The first line of `--version`.
    pub(crate) fn version_line(&self) -> &str {
        self.version.lines().next().unwrap_or("")
    }

    /// What `-###` says `native` options mean on this machine (the lines that
    /// run the compiler proper).
    pub(crate) fn expand_native(&self, native: &[String]) -> Result<String, BackendError> {
        let mut args: Vec<&str> = native.iter().map(String::as_str).collect();
        args.extend(["-###", "-E", "-xc", "/dev/null"]);
        let out = self.run(&args)?;
        let text = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(BackendError::Refused {
                backend: FAMILY,
                input: native.join(" "),
                reason: format!(
                    "depends on the machine, and the compiler would not say how: {}",
                    text.trim()
                ),
            });
        }
        let proper: Vec<&str> = text.lines().filter(|l| l.contains("cc1")).collect();
        Ok(if proper.is_empty() {
            text.into_owned()
        } else {
            proper.join("\n")
        })
    }
}

/// The directories between `#include <...> search starts here:` and `End of
/// search list.` in `-v` output (Clang's `(framework directory)` notes
/// dropped).
pub(crate) fn parse_search_dirs(stderr: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut inside = false;
    for line in stderr.lines() {
        if line.starts_with("#include <...> search starts here") {
            inside = true;
        } else if line.starts_with("End of search list") {
            break;
        } else if inside {
            let d = line.trim();
            let d = d.strip_suffix(" (framework directory)").unwrap_or(d);
            if !d.is_empty() {
                dirs.push(PathBuf::from(d));
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cc_defaults_when_unset_or_blank() {
        assert_eq!(spec_from_env(None), "cc");
        assert_eq!(spec_from_env(Some(" ".into())), "cc");
        assert_eq!(spec_from_env(Some("clang".into())), "clang");
    }

    #[test]
    fn leading_arguments_are_split_off() {
        assert_eq!(
            split_spec(OsStr::new("gcc -m64  -O1")).unwrap(),
            (
                "gcc".to_string(),
                vec!["-m64".to_string(), "-O1".to_string()]
            )
        );
        assert!(split_spec(OsStr::new("  ")).is_err());
    }

    #[test]
    fn programs_are_found_through_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("mycc");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let plain = dir.path().join("notexec");
        std::fs::write(&plain, "").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths(["/nonexistent".as_ref(), dir.path()]).unwrap();
        let find = |name: &str, path: Option<&OsStr>, cwd: &Path| {
            find_program(OsStr::new(name), path, cwd)
        };
        assert_eq!(find("mycc", Some(&path), Path::new("/")), Some(exe.clone()));
        assert_eq!(find("notexec", Some(&path), Path::new("/")), None);
        assert_eq!(find("mycc", None, Path::new("/")), None);
        // A name with a slash is taken against the current directory.
        assert_eq!(
            find("./mycc", None, dir.path()),
            Some(dir.path().join("./mycc"))
        );
    }

    #[test]
    fn search_dirs_are_parsed_from_verbose_output() {
        let gcc = "ignoring nonexistent directory \"/x\"\n\
                   #include \"...\" search starts here:\n\
                   #include <...> search starts here:\n \
                   /usr/lib/gcc/x86_64-linux-gnu/12/include\n \
                   /usr/include\n\
                   End of search list.\n";
        assert_eq!(
            parse_search_dirs(gcc),
            [
                PathBuf::from("/usr/lib/gcc/x86_64-linux-gnu/12/include"),
                PathBuf::from("/usr/include")
            ]
        );
        let clang = "#include <...> search starts here:\n /usr/include\n /System/Library/Frameworks (framework directory)\nEnd of search list.\n";
        assert_eq!(
            parse_search_dirs(clang),
            [
                PathBuf::from("/usr/include"),
                PathBuf::from("/System/Library/Frameworks")
            ]
        );
        assert!(parse_search_dirs("garbage").is_empty());
    }
}
