//! What the compiler's command line makes it read and write, so that the
//! program key can see every input and the output stays the shared object.
//!
//! [`parse`] walks the flags in order and sorts each into one of three kinds:
//!
//! * **search paths and forced includes** (`-I`, `-iquote`, `-isystem`,
//!   `-idirafter`, `-include`, `-imacros`, `-nostdinc`): collected, so the
//!   include scanner searches exactly where the compiler will and digests what
//!   it finds there;
//! * **refused**: options that write files or change what the compiler
//!   produces (`-o`, `-c`, `-M*`, `-save-temps`, `-fdump-*`, ...), read files
//!   kcache cannot see (`@file`, `-fprofile-use`, `-specs`, `-B`, `--sysroot`,
//!   `-L`, linker and assembler pass-through, plugins, modules), or name extra
//!   input files. This is a list of known offenders: GCC and Clang options
//!   outside it are keyed by their text, which is all they contribute;
//! * everything else: keyed by its text only (`-O3`, `-DN=4`, `-ffast-math`).
//!
//! Long options (`--...`) are refused unless known harmless: GCC's long
//! aliases include dependency output and sysroots, and the short forms cover
//! every use.

use std::path::{Path, PathBuf};

/// An option kcache will not compile with, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The option as written (with its argument when separate).
    pub input: String,
    /// Why it is refused.
    pub reason: String,
}

/// A file the command line makes the preprocessor read before the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Forced {
    /// `-include` or `-imacros`.
    pub option: &'static str,
    /// The file as written.
    pub name: String,
}

/// What the flags make the compiler read, in command-line order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// `-iquote` directories (quoted includes only).
    pub quote: Vec<PathBuf>,
    /// `-I` directories.
    pub bracket: Vec<PathBuf>,
    /// `-isystem` directories (searched after `-I`, before the compiler's).
    pub system: Vec<PathBuf>,
    /// `-idirafter` directories (searched after the compiler's).
    pub after: Vec<PathBuf>,
    /// `-imacros` files, then `-include` files (the order GCC reads them in).
    pub forced: Vec<Forced>,
    /// `-nostdinc`: the compiler's own include directories are not searched.
    pub nostdinc: bool,
    /// Options whose meaning depends on the machine (`-march=native`).
    pub native: Vec<String>,
}

const WRITES: &str = "writes a file or changes what the compiler produces; \
    kcache's output must be the shared object it loads";
const READS: &str = "reads a file kcache cannot see; the program key must see every input";
const PRINTS: &str = "prints instead of compiling";
const LINKER: &str = "passes options through to the linker, assembler or preprocessor, \
    which can read or write files kcache cannot see";

/// Options that take their argument as the next element, keyed by text.
const SEPARATE_PLAIN: &[&str] = &[
    "-D", "-U", "-A", "-u", "-l", "-z", "--param", "-mllvm", "-target", "-arch",
];

/// Exact options refused, with the reason.
const REFUSED_EXACT: &[(&str, &str)] = &[
    ("-c", WRITES),
    ("-S", WRITES),
    ("-E", WRITES),
    ("-fsyntax-only", WRITES),
    ("-fprofile-arcs", WRITES),
    ("-ftest-coverage", WRITES),
    ("--coverage", WRITES),
    ("-fstack-usage", WRITES),
    ("-gsplit-dwarf", WRITES),
    ("-aux-info", WRITES),
    ("-###", PRINTS),
    (
        "-I-",
        "splits the include search in a way kcache does not model",
    ),
    ("-wrapper", "runs another program around the compiler"),
    ("-include-pch", READS),
    ("-Xlinker", LINKER),
    ("-Xassembler", LINKER),
    ("-Xpreprocessor", LINKER),
    ("-Xclang", LINKER),
    ("-traditional-cpp", TRADITIONAL),
    ("-traditional", TRADITIONAL),
    ("-ansi", C90),
    ("-std=c89", C90),
    ("-std=c90", C90),
    ("-std=iso9899:1990", C90),
    ("-std=iso9899:199409", C90),
    ("--ansi", C90),
    ("--std=c89", C90),
    ("--std=c90", C90),
];

const C90: &str = "is ISO C90, where `//` opens no comment: the lexer reads it as one, \
    so code after it would be hidden from the canonical text (use -std=gnu89 or later)";

const TRADITIONAL: &str = "preprocesses as before ISO C (macro parameters replaced inside \
    strings, tokens pasted across comments), which the canonical text does not model";
const NAMES_KERNELS: &str = "selects functions or files by name, which the canonical text \
    replaces by the kernel token: two kernels sharing a key would be treated apart";

/// Option prefixes refused, with the reason (checked after the exact lists,
/// the path options and the long options).
const REFUSED_PREFIX: &[(&str, &str)] = &[
    ("-o", WRITES),
    ("-M", WRITES),
    ("-d", WRITES),
    ("-save-temps", WRITES),
    ("-fdump-", WRITES),
    ("-fprofile-generate", WRITES),
    ("-fprofile-instr-generate", WRITES),
    ("-fcs-profile-generate", WRITES),
    ("-fcallgraph-info", WRITES),
    ("-ftime-trace", WRITES),
    ("-fcrash-diagnostics", WRITES),
    ("-fsave-optimization-record", WRITES),
    ("-fdiagnostics-format=sarif-file", WRITES),
    ("-fdiagnostics-add-output", WRITES),
    ("-fdiagnostics-set-output", WRITES),
    (
        "-x",
        "sets the language of the files after it; kcache compiles its translation unit as C",
    ),
    ("-finstrument-functions-exclude-", NAMES_KERNELS),
    ("-fprofile-filter-files", NAMES_KERNELS),
    ("-fprofile-exclude-files", NAMES_KERNELS),
    ("-fprofile-use", READS),
    ("-fprofile-instr-use", READS),
    ("-fprofile-sample-use", READS),
    ("-fauto-profile", READS),
    ("-fprofile-dir", READS),
    ("-fprofile-list", READS),
    ("-fsanitize-blacklist", READS),
    ("-fsanitize-ignorelist", READS),
    ("-fsanitize-coverage-allowlist", READS),
    ("-fsanitize-coverage-ignorelist", READS),
    ("-fplugin", READS),
    ("-fmodule", READS),
    ("-fimplicit-module", READS),
    ("-fembed-dir", READS),
    ("-specs", READS),
    ("-isysroot", READS),
    ("-iprefix", READS),
    ("-iwithprefix", READS),
    ("-imultilib", READS),
    ("-imultiarch", READS),
    ("-B", READS),
    ("-iplugindir", READS),
    (
        "-fuse-ld",
        "chooses another linker, which the backend's identity does not cover",
    ),
    ("-L", READS),
    ("-T", LINKER),
    ("-print-", PRINTS),
    ("-Wl,", LINKER),
    ("-Wa,", LINKER),
    ("-Wp,", LINKER),
];

/// Long options known to be harmless (keyed by text). `--param` takes a
/// separate argument and is in [`SEPARATE_PLAIN`].
const LONG_ALLOWED: &[&str] = &[
    "--param=",
    "--std=",
    "--ansi",
    "--pedantic",
    "--pedantic-errors",
    "--no-warnings",
    "--extra-warnings",
    "--all-warnings",
    "--target=",
    "--verbose",
];

/// Options that name a directory or file (joined or separate), and the
/// collection each goes to.
#[derive(Clone, Copy)]
enum PathOpt {
    Bracket,
    Quote,
    System,
    After,
    Include,
    Imacros,
}

const PATH_OPTS: &[(&str, PathOpt)] = &[
    ("-iquote", PathOpt::Quote),
    ("-isystem", PathOpt::System),
    ("-idirafter", PathOpt::After),
    ("-include", PathOpt::Include),
    ("-imacros", PathOpt::Imacros),
    ("-I", PathOpt::Bracket),
];

/// `path` made absolute against `base`, as the compiler (run in `base`) sees it.
pub(crate) fn against(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Sorts `args` (the compiler's flags, in order) into what they make it read,
/// or refuses the first one kcache cannot key. Relative directories resolve
/// against `base`, the directory the compiler runs in.
pub(crate) fn parse(args: &[String], base: &Path) -> Result<Flags, Refusal> {
    let mut flags = Flags::default();
    let mut imacros = Vec::new();
    let mut includes = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        let refuse = |reason: &str| Refusal {
            input: arg.to_string(),
            reason: reason.to_string(),
        };
        let missing = || Refusal {
            input: arg.to_string(),
            reason: "is missing its argument".to_string(),
        };
        i += 1;

        if arg.starts_with('@') {
            return Err(refuse(
                "is a response file; kcache does not expand them (pass the options directly)",
            ));
        }
        if !arg.starts_with('-') || arg == "-" {
            return Err(refuse(
                "is an input file besides the kernels, which kcache cannot see",
            ));
        }
        if let Some((_, reason)) = REFUSED_EXACT.iter().find(|(o, _)| *o == arg) {
            return Err(refuse(reason));
        }
        // `-fdisable-tree-vrp1=k__seg1,f`: a pass turned off in the
        // functions named.
        if (arg.starts_with("-fdisable-") || arg.starts_with("-fenable-")) && arg.contains('=') {
            return Err(refuse(NAMES_KERNELS));
        }
        if SEPARATE_PLAIN.contains(&arg) {
            if next.is_none() {
                return Err(missing());
            }
            i += 1;
            continue;
        }
        if let Some(&(opt, kind)) = PATH_OPTS.iter().find(|(o, _)| arg.starts_with(o)) {
            let (value, written) = if arg.len() > opt.len() {
                (&arg[opt.len()..], arg.to_string())
            } else {
                i += 1;
                let value = next.ok_or_else(missing)?;
                (value, format!("{opt} {value}"))
            };
            if value.starts_with('=') && !matches!(kind, PathOpt::Include | PathOpt::Imacros) {
                return Err(Refusal {
                    input: written,
                    reason:
                        "names a directory relative to the sysroot, which kcache does not resolve"
                            .into(),
                });
            }
            match kind {
                PathOpt::Bracket => flags.bracket.push(against(base, value)),
                PathOpt::Quote => flags.quote.push(against(base, value)),
                PathOpt::System => flags.system.push(against(base, value)),
                PathOpt::After => flags.after.push(against(base, value)),
                PathOpt::Include => includes.push(Forced {
                    option: "-include",
                    name: value.to_string(),
                }),
                PathOpt::Imacros => imacros.push(Forced {
                    option: "-imacros",
                    name: value.to_string(),
                }),
            }
            continue;
        }
        if arg.starts_with("--") {
            if LONG_ALLOWED
                .iter()
                .any(|o| arg == o.trim_end_matches('=') || (o.ends_with('=') && arg.starts_with(o)))
            {
                continue;
            }
            return Err(refuse(
                "is a long option kcache does not know (GCC's long aliases include \
                 dependency output and sysroots); use the short form",
            ));
        }
        if let Some((_, reason)) = REFUSED_PREFIX.iter().find(|(o, _)| arg.starts_with(o)) {
            return Err(refuse(reason));
        }
        if arg.starts_with("-fopt-info") && arg.contains('=') {
            return Err(refuse(WRITES));
        }
        if arg == "-nostdinc" {
            flags.nostdinc = true;
        }
        if arg.ends_with("=native") {
            flags.native.push(arg.to_string());
        }
    }
    flags.forced = imacros;
    flags.forced.extend(includes);
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Flags, Refusal> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&args, Path::new("/base"))
    }

    fn refused(args: &[&str]) -> String {
        match p(args) {
            Err(r) => r.input,
            Ok(f) => panic!("{args:?} accepted: {f:?}"),
        }
    }

    #[test]
    fn plain_options_are_keyed_by_text_only() {
        let f = p(&[
            "-O3",
            "-DN=4",
            "-D",
            "M=2",
            "-ffast-math",
            "-Wall",
            "-std=c11",
            "-lm",
        ])
        .unwrap();
        assert_eq!(f, Flags::default());
        // A separate -D argument is never taken for an input file.
        assert!(p(&["-U", "X", "-l", "m", "--param", "max-unroll-times=4"]).is_ok());
    }

    #[test]
    fn search_paths_keep_their_order_and_resolve_against_the_base() {
        let f = p(&[
            "-Iinc",
            "-I",
            "/abs",
            "-iquote",
            "q",
            "-isystem/s",
            "-idirafter",
            "a",
        ])
        .unwrap();
        assert_eq!(
            f.bracket,
            [PathBuf::from("/base/inc"), PathBuf::from("/abs")]
        );
        assert_eq!(f.quote, [PathBuf::from("/base/q")]);
        assert_eq!(f.system, [PathBuf::from("/s")]);
        assert_eq!(f.after, [PathBuf::from("/base/a")]);
    }

    #[test]
    fn imacros_are_read_before_includes() {
        let f = p(&["-include", "a.h", "-imacros", "m.h", "-includeb.h"]).unwrap();
        let names: Vec<_> = f
            .forced
            .iter()
            .map(|f| (f.option, f.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("-imacros", "m.h"),
                ("-include", "a.h"),
                ("-include", "b.h")
            ]
        );
    }

    #[test]
    fn writers_are_refused() {
        for args in [
            &["-o", "x.so"][..],
            &["-ox.so"],
            &["-c"],
            &["-MD"],
            &["-MF", "deps"],
            &["-MMD"],
            &["-save-temps"],
            &["-save-temps=obj"],
            &["-fdump-tree-all"],
            &["-fprofile-generate"],
            &["-gsplit-dwarf"],
            &["-fopt-info-vec=out.txt"],
            &["-ftime-trace"],
        ] {
            assert_eq!(refused(args), args[0], "{args:?}");
        }
        assert!(p(&["-fopt-info-vec"]).is_ok(), "to stderr: harmless");
    }

    #[test]
    fn unseen_readers_are_refused() {
        for args in [
            &["@opts.rsp"][..],
            &["-fprofile-use=prof"],
            &["-fprofile-use"],
            &["-specs=x.specs"],
            &["-B/opt/bin"],
            &["-L/lib"],
            &["--sysroot=/x"],
            &["-isysroot", "/x"],
            &["-fplugin=p.so"],
            &["-fuse-ld=lld"],
            &["-iplugindir=/p"],
            &["-Wl,-Map=m"],
            &["-Xlinker", "-Map"],
            &["-Wp,-MD,deps"],
            &["extra.c"],
            &["-"],
            &["-I=inc"],
            &["--include-directory=x"],
        ] {
            assert_eq!(refused(args), args[0], "{args:?}");
        }
    }

    #[test]
    fn sysroot_relative_directories_are_refused() {
        assert_eq!(refused(&["-isystem", "=inc"]), "-isystem =inc");
    }

    #[test]
    fn a_missing_argument_is_refused() {
        let r = p(&["-O2", "-I"]).unwrap_err();
        assert_eq!(r.input, "-I");
        assert!(r.reason.contains("missing"));
        assert_eq!(refused(&["-D"]), "-D");
    }

    #[test]
    fn allowed_long_options_pass() {
        assert!(p(&["--std=c99", "--pedantic", "--param=max-unroll-times=2"]).is_ok());
    }

    #[test]
    fn machine_dependent_options_are_noted() {
        let f = p(&["-O2", "-march=native", "-mtune=native"]).unwrap();
        assert_eq!(f.native, ["-march=native", "-mtune=native"]);
        assert!(p(&["-nostdinc"]).unwrap().nostdinc);
    }
}
