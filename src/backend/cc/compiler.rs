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
//! * drops the variables that make Clang write files (`CC_PRINT_HEADERS`,
//!   `CC_LOG_DIAGNOSTICS`, ...);
//! * pins the variables that choose the compiler's or linker's parts or
//!   change its output (`GCC_EXEC_PREFIX`, `COMPILER_PATH`, `LIBRARY_PATH`,
//!   `SOURCE_DATE_EPOCH`, `CCC_OVERRIDE_OPTIONS`, `LD_RUN_PATH`,
//!   `LDEMULATION`, `GNUTARGET`, `SDKROOT`, ...) to their values at
//!   construction, which the identity records (the libraries `LIBRARY_PATH`
//!   finds are digested with the link line's; see `keying.rs`);
//! * sets `LC_ALL=C`, so the version text and the diagnostics the backend
//!   reads do not depend on the user's locale.
//!
//! `PATH` is left as it is, but the assembler and linker the driver runs
//! through it (`-print-prog-name=as`, `=ld`) are found the same way in every
//! process and digested into the identity.

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::backend::shared::find_program;
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
    // Clang writes these files as it runs.
    "CC_PRINT_OPTIONS",
    "CC_PRINT_HEADERS",
    "CC_LOG_DIAGNOSTICS",
    "CC_PRINT_PROC_STAT",
];

/// Variables pinned to their value at construction (and part of the identity).
pub(crate) const PINNED_ENV: &[&str] = &[
    "GCC_EXEC_PREFIX",
    "COMPILER_PATH",
    "LIBRARY_PATH",
    "SOURCE_DATE_EPOCH",
    "CCC_OVERRIDE_OPTIONS",
    // What the linker reads or embeds in the object.
    "LD_RUN_PATH",
    "LDEMULATION",
    "GNUTARGET",
    "GCC_COMPARE_DEBUG",
    // Clang's SDK and deployment target on Apple platforms.
    "SDKROOT",
    "MACOSX_DEPLOYMENT_TARGET",
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
    /// The assembler and linker the driver runs, each with its contents
    /// digest: the driver finds them through `PATH` (review 2026-12-02, C
    /// F4: another `as` earlier in `PATH` built another program under the
    /// same key).
    pub tools: Vec<(PathBuf, Digest)>,
    /// Where the base's probes are kept (see `probe_cache.rs`), and the
    /// identity they are kept under.
    pub probe_cache: Option<(PathBuf, Digest)>,
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
    /// With `cache`, the probes' results are read from and kept in that
    /// directory (see `identity_cache.rs`).
    pub(crate) fn detect(
        program: &OsStr,
        args: Vec<String>,
        cache: Option<&Path>,
    ) -> Result<Compiler, BackendError> {
        let path = Self::locate(program)?;
        let real = std::fs::canonicalize(&path).map_err(|source| BackendError::Io {
            backend: FAMILY,
            path: path.clone(),
            source,
        })?;
        let (exe_digest, script, real_stat) = match cache {
            Some(dir) => super::identity_cache::executable(dir, &real),
            None => super::identity_cache::digest_executable(&real).map(|(d, s)| (d, s, None)),
        }
        .map_err(|source| BackendError::Io {
            backend: FAMILY,
            path: real.clone(),
            source,
        })?;
        let mut c = Compiler {
            path,
            args,
            real,
            exe_digest,
            version: String::new(),
            target: String::new(),
            include_dirs: Vec::new(),
            env: PINNED_ENV
                .iter()
                .map(|k| (*k, std::env::var_os(k)))
                .collect(),
            probe_cache: None,
            tools: Vec::new(),
        };
        let key = cache.map(|_| {
            super::identity_cache::key(
                &c.path,
                &c.real,
                &c.exe_digest,
                real_stat,
                &c.args,
                &c.env,
                script,
            )
        });
        c.probe_cache = cache.zip(key).map(|(d, k)| (d.to_path_buf(), k));
        if let (Some(dir), Some(key)) = (cache, &key) {
            if let Some(p) = super::identity_cache::load(dir, key) {
                c.version = p.version;
                c.target = p.target;
                c.include_dirs = p.include_dirs;
                c.tools = c.resolve_tools(&p.tools, cache)?;
                return Ok(c);
            }
        }
        c.version = c.version_text()?;
        c.target = c.dumpmachine();
        c.include_dirs = c.search_dirs();
        let tools = c.tool_names();
        c.tools = c.resolve_tools(&tools, cache)?;
        if let (Some(dir), Some(key)) = (cache, &key) {
            let probed = super::identity_cache::Probed {
                version: c.version.clone(),
                target: c.target.clone(),
                include_dirs: c.include_dirs.clone(),
                tools,
            };
            super::identity_cache::save(dir, key, &probed);
        }
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

    /// What the driver says it runs as the assembler and the linker
    /// (`-print-prog-name=`): a path, or a bare name it finds through
    /// `PATH`. A compiler that does not say names none.
    fn tool_names(&self) -> Vec<String> {
        ["as", "ld"]
            .iter()
            .filter_map(|t| {
                let out = self.run(&[&format!("-print-prog-name={t}")]).ok()?;
                let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
                (out.status.success() && !name.is_empty()).then_some(name)
            })
            .collect()
    }

    /// `names` found as the driver finds them (a bare name through `PATH`,
    /// looked up afresh in every process: a tool put earlier in `PATH` is
    /// seen), each with its digest (kept by stat in `cache`). A tool found
    /// nowhere is left out: the compile then fails, as it would without
    /// kcache.
    fn resolve_tools(
        &self,
        names: &[String],
        cache: Option<&Path>,
    ) -> Result<Vec<(PathBuf, Digest)>, BackendError> {
        let cwd = std::env::current_dir()
            .map_err(|e| unavailable(format!("no current directory: {e}")))?;
        let path_var = std::env::var_os("PATH");
        let mut tools = Vec::new();
        for name in names {
            let Some(found) = find_program(OsStr::new(name), path_var.as_deref(), &cwd) else {
                continue;
            };
            let real = std::fs::canonicalize(&found).unwrap_or(found);
            let digest = match cache {
                Some(dir) => super::identity_cache::executable(dir, &real).map(|(d, _, _)| d),
                None => super::identity_cache::digest_executable(&real).map(|(d, _)| d),
            }
            .map_err(|source| BackendError::Io {
                backend: FAMILY,
                path: real.clone(),
                source,
            })?;
            tools.push((real, digest));
        }
        Ok(tools)
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

/// What the linker reads for a compile, as the compiler driver's `-###`
/// line for it says: the files named, and each `-l` resolved against the
/// `-L` directories in order as the linker resolves it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LinkInputs {
    /// Every existing file the link line names or a `-l` resolves to.
    pub files: Vec<PathBuf>,
    /// `-l` names no directory holds (the link fails, or finds them in a
    /// directory the driver does not name).
    pub missing: Vec<String>,
}

impl Compiler {
    /// Preprocesses `prelude` under `flags` (the compile's own, in order) in
    /// `cwd`: the `-dM` listing of every macro defined at its end, and the
    /// files the compiler's own dependency report says it read (the implicit
    /// `stdc-predef.h` among them). `deps` is a scratch path.
    pub(crate) fn predefined(
        &self,
        flags: &[String],
        cwd: &Path,
        prelude: &str,
        deps: &Path,
    ) -> Result<(String, Vec<PathBuf>), String> {
        let mut command = self.command();
        command
            .args(flags)
            .args(["-E", "-dM", "-MD", "-MT", "x", "-MF"])
            .arg(deps)
            .args(["-x", "c", "-"])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = feed(&mut command, prelude).map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let listed = std::fs::read_to_string(deps).map_err(|e| e.to_string())?;
        let files = parse_deps(&listed)
            .into_iter()
            .filter(|p| p != Path::new("-"))
            .map(|p| cwd.join(p))
            .collect();
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), files))
    }

    /// The driver's `-###` link line for a compile under `flags` (which name
    /// no output or input), in words: what the link reads is resolved from
    /// it by [`resolve_link_line`].
    pub(crate) fn link_line(&self, flags: &[String], cwd: &Path) -> Result<Vec<String>, String> {
        let out = self
            .command()
            .args(flags)
            .args(["-###", "-x", "c", "/dev/null", "-o", "/dev/null"])
            .current_dir(cwd)
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(text.into_owned());
        }
        let line = text
            .lines()
            .rfind(|l| l.contains("collect2") || l.contains("/ld") || l.contains("ld.lld"))
            .ok_or_else(|| format!("the driver shows no link line:\n{text}"))?;
        Ok(split_quoted(line))
    }

    /// Where the driver under `flags` looks for the programs it runs and
    /// the startfiles and libraries it links (`-print-search-dirs`), or
    /// `None` when it does not say.
    pub(crate) fn search_lists(
        &self,
        flags: &[String],
        cwd: &Path,
    ) -> Option<super::probe_cache::SearchLists> {
        let out = self
            .command()
            .args(flags)
            .arg("-print-search-dirs")
            .current_dir(cwd)
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        super::probe_cache::parse_search_lists(&String::from_utf8_lossy(&out.stdout))
    }
}

/// The words of a `-###` line (double-quoted words unquoted).
pub(crate) fn split_quoted(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if quoted => cur.extend(chars.next()),
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The files a link line reads: every existing absolute file it names
/// (objects, archives, plugins), and each `-lNAME` (`-l:FILE`) resolved in
/// the `-L` directories in order, `libNAME.so` before `libNAME.a` unless a
/// `-Bstatic` or `-static` is in force.
pub(crate) fn resolve_link_line(words: &[String], cwd: &Path) -> LinkInputs {
    let dirs: Vec<PathBuf> = words
        .iter()
        .filter_map(|w| w.strip_prefix("-L"))
        .map(|d| cwd.join(d))
        .collect();
    let mut out = LinkInputs::default();
    let mut dynamic = true;
    let mut words = words.iter().skip(1);
    while let Some(w) = words.next() {
        match w.as_str() {
            "-o" => {
                words.next();
            }
            "-Bstatic" | "-static" | "-dn" | "-non_shared" => dynamic = false,
            "-Bdynamic" | "-dy" | "-call_shared" => dynamic = true,
            _ => {}
        }
        if let Some(name) = w.strip_prefix("-l") {
            let candidates: Vec<String> = match name.strip_prefix(':') {
                Some(file) => vec![file.to_string()],
                None if dynamic => vec![format!("lib{name}.so"), format!("lib{name}.a")],
                None => vec![format!("lib{name}.a")],
            };
            let found = dirs
                .iter()
                .find_map(|d| candidates.iter().map(|c| d.join(c)).find(|p| p.is_file()));
            match found {
                Some(p) => out.files.push(p),
                None => out.missing.push(w.clone()),
            }
            continue;
        }
        let p = Path::new(w.strip_prefix("-plugin=").unwrap_or(w));
        if p.is_absolute() && p.is_file() && !p.starts_with("/dev") {
            out.files.push(p.to_path_buf());
        }
    }
    out
}

/// The prerequisites of a make rule as `-MD` writes it (`target: a b \`,
/// escaped spaces and `$$`).
pub(crate) fn parse_deps(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ").replace("\\\r\n", " ");
    let mut out = Vec::new();
    for rule in joined.lines() {
        let Some((_, prereqs)) = rule.split_once(": ").or_else(|| rule.split_once(":\t")) else {
            continue;
        };
        let mut cur = String::new();
        let mut chars = prereqs.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek().is_some_and(|n| *n == ' ' || *n == '#') => {
                    cur.extend(chars.next());
                }
                '$' if chars.peek() == Some(&'$') => {
                    chars.next();
                    cur.push('$');
                }
                c if c.is_whitespace() => {
                    if !cur.is_empty() {
                        out.push(PathBuf::from(std::mem::take(&mut cur)));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(PathBuf::from(cur));
        }
    }
    out
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

/// Runs `command` with `input` on its stdin (written from a thread of its
/// own, so a compiler that fills its stderr pipe before reading all of its
/// input cannot deadlock the two).
pub(super) fn feed(command: &mut Command, input: &str) -> std::io::Result<Output> {
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text = input.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let output = child.wait_with_output()?;
    // A compiler that stops reading (it failed early) breaks the pipe; its
    // exit status says so, not the writer.
    let _ = writer.join();
    Ok(output)
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
    fn dependency_rules_are_parsed_with_escapes() {
        let d = "x: - /usr/include/stdc-predef.h \\\n /a\\ b.h h$$.h\n/usr/x.h:\n";
        assert_eq!(
            parse_deps(d),
            [
                PathBuf::from("-"),
                PathBuf::from("/usr/include/stdc-predef.h"),
                PathBuf::from("/a b.h"),
                PathBuf::from("h$.h"),
            ]
        );
    }

    #[test]
    fn link_lines_resolve_libraries_in_directory_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("libq.a"), "").unwrap();
        std::fs::write(b.path().join("libq.so"), "").unwrap();
        std::fs::write(b.path().join("libs.a"), "").unwrap();
        let crt = b.path().join("crti.o");
        std::fs::write(&crt, "").unwrap();
        let line = format!(
            "collect2 -o /tmp/out.so {} \"-L{}\" -L{} -lq -Bstatic -ls -lnone",
            crt.display(),
            a.path().display(),
            b.path().display()
        );
        let got = resolve_link_line(&split_quoted(&line), Path::new("/"));
        assert_eq!(
            got.files,
            [crt, a.path().join("libq.a"), b.path().join("libs.a")]
        );
        assert_eq!(got.missing, ["-lnone"]);
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
