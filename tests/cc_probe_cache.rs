//! The cc backend's kept probes (`-dM` and `-###`, see
//! `src/backend/cc/probe_cache.rs`) against a fake compiler driver whose
//! answers depend on which files exist where, as a real driver's do: a
//! second backend runs no probe, and every change that could change an
//! answer (a startfile or header appearing in an earlier directory, a
//! `specs` file, ld script or Clang configuration file edited in place, a
//! driver part edited, the compiler replaced) probes again and changes the
//! key; options the cache cannot validate probe every time or are refused.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kcache::backend::cc::CcBackend;
use kcache::backend::{Backend, BackendError, KernelSource};
use kcache::cache::hooks::Hooks;

const KERNEL: KernelSource<'static> = KernelSource {
    symbol: "k",
    text: "void k(float* y, int n) { for (int i = 0; i < n; i++) y[i] += 1.0f; }\n",
};

/// A fake driver and the directories it searches, five levels below the
/// temporary directory so that the watched ancestors stay inside it.
struct Fake {
    _dir: tempfile::TempDir,
    _logs: tempfile::TempDir,
    root: PathBuf,
    compiler: PathBuf,
    cache: PathBuf,
    log: PathBuf,
}

fn script(log: &Path, root: &Path, define: &str) -> String {
    let (log, r) = (log.display(), root.display());
    format!(
        r##"#!/bin/sh
echo "$*" >> '{log}'
R='{r}'
case " $* " in
*" --version "*) echo "fakecc 1.0"; exit 0 ;;
*" -dumpmachine "*) echo "x86_64-fake-linux"; exit 0 ;;
*" -print-search-dirs "*)
  echo "install: $R/prog/"
  echo "programs: =$R/prog/"
  echo "libraries: =$R/lib1/:$R/lib2/"
  exit 0 ;;
*" -v "*)
  printf '#include <...> search starts here:\n %s\n %s\nEnd of search list.\n' "$R/inc1" "$R/inc2" >&2
  exit 0 ;;
*" -### "*)
  crt=crti.o
  for d in "$R/lib1" "$R/lib2"; do [ -f "$d/crti.o" ] && {{ crt="$d/crti.o"; break; }}; done
  extra=""
  [ -f "$R/lib2/specs" ] && extra=$(cat "$R/lib2/specs")
  echo " \"$R/prog/collect2\" \"-o\" \"/dev/null\" \"$crt\" $extra \"-L$R/lib1\" \"-L$R/lib2\" \"-lfoo\"" >&2
  exit 0 ;;
*" -dM "*)
  mf=""; prev=""
  for a in "$@"; do [ "$prev" = "-MF" ] && mf="$a"; prev="$a"; done
  cat > /dev/null
  h=""
  for d in "$R/inc1" "$R/inc2"; do [ -f "$d/stdc-predef.h" ] && {{ h="$d/stdc-predef.h"; break; }}; done
  echo "#define {define} 1"
  [ -n "$h" ] && cat "$h"
  echo "x: - $h" > "$mf"
  exit 0 ;;
esac
echo "fakecc: unexpected: $*" >&2
exit 1
"##
    )
}

fn write_exe(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    fs::write(&tmp, text).unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
    fs::rename(&tmp, path).unwrap();
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let logs = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/b/c/d/e");
        for d in ["prog", "lib1", "lib2", "inc1", "inc2", "src", "bin"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::write(root.join("lib2/crti.o"), "crti in lib2").unwrap();
        fs::write(root.join("lib2/one.o"), "object one").unwrap();
        fs::write(root.join("lib2/two.o"), "object two").unwrap();
        fs::write(
            root.join("lib2/specs"),
            format!("{}", root.join("lib2/one.o").display()),
        )
        .unwrap();
        fs::write(
            root.join("lib2/libfoo.so"),
            format!("GROUP ( {} )\n", root.join("lib2/one.o").display()),
        )
        .unwrap();
        fs::write(root.join("prog/collect2"), "collect2").unwrap();
        fs::write(root.join("prog/cc1"), "cc1 version one").unwrap();
        fs::write(root.join("prog/x86_64-fake-clang.cfg"), "-O1\n").unwrap();
        fs::write(root.join("inc2/stdc-predef.h"), "#define FAKE_PREDEF 2\n").unwrap();
        let log = logs.path().join("runs.log");
        let compiler = root.join("bin/fcc");
        write_exe(&compiler, &script(&log, &root, "FAKE_ONE"));
        let cache = logs.path().join("compilers");
        let f = Fake {
            _dir: dir,
            _logs: logs,
            root,
            compiler,
            cache,
            log,
        };
        f.age();
        f
    }

    /// Waits out the window in which a file's stat cannot tell a second
    /// write apart (2 s: nothing written more recently is kept).
    fn age(&self) {
        std::thread::sleep(std::time::Duration::from_millis(2200));
    }

    fn backend(&self) -> CcBackend {
        CcBackend::builder()
            .hooks(&Hooks::new())
            .compiler_path(&self.compiler)
            .identity_cache(&self.cache)
            .link_flags(Vec::<String>::new())
            .source_dir(self.root.join("src"))
            .build()
            .expect("the fake compiler identifies itself")
    }

    fn runs(&self, probe: &str) -> usize {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.split_whitespace().any(|w| w == probe))
            .count()
    }

    fn extras(&self, options: &[&str]) -> kcache::backend::KeyExtras {
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        self.backend().key_extras(&KERNEL, &options).unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn has_macro(e: &kcache::backend::KeyExtras, name: &str) -> bool {
    e.macros.contains(name.as_bytes())
}

#[test]
fn a_second_backend_runs_neither_probe() {
    let f = Fake::new();
    let first = f.extras(&[]);
    assert_eq!((f.runs("-dM"), f.runs("-###")), (1, 1));
    assert!(has_macro(&first, "FAKE_ONE") && has_macro(&first, "FAKE_PREDEF"));
    let second = f.extras(&[]);
    assert_eq!(
        (f.runs("-dM"), f.runs("-###")),
        (1, 1),
        "the kept answers were not used"
    );
    assert_eq!(first.digests, second.digests);
    assert_eq!(first.macros, second.macros);
}

#[test]
fn a_startfile_appearing_in_an_earlier_library_directory_probes_again() {
    let f = Fake::new();
    let before = f.extras(&[]);
    fs::write(f.path("lib1/crti.o"), "crti in lib1").unwrap();
    let after = f.extras(&[]);
    assert_eq!(f.runs("-###"), 2, "the new startfile was not noticed");
    assert_ne!(before.digests, after.digests);
}

#[test]
fn a_header_appearing_in_an_earlier_include_directory_probes_again() {
    let f = Fake::new();
    let before = f.extras(&[]);
    assert!(!has_macro(&before, "FAKE_EARLIER"));
    fs::write(f.path("inc1/stdc-predef.h"), "#define FAKE_EARLIER 1\n").unwrap();
    let after = f.extras(&[]);
    assert_eq!(f.runs("-dM"), 2, "the new header was not noticed");
    assert!(has_macro(&after, "FAKE_EARLIER"));
    assert_ne!(before.digests, after.digests);
}

#[test]
fn a_specs_file_edited_in_place_probes_again() {
    let f = Fake::new();
    let before = f.extras(&[]);
    // Same length, same directory entry: only the file's own stat shows it.
    let specs = f.path("lib2/specs");
    let text = fs::read_to_string(&specs)
        .unwrap()
        .replace("one.o", "two.o");
    fs::OpenOptions::new()
        .write(true)
        .open(&specs)
        .and_then(|mut h| std::io::Write::write_all(&mut h, text.as_bytes()))
        .unwrap();
    let after = f.extras(&[]);
    assert_eq!(f.runs("-###"), 2, "the edited specs file was not noticed");
    assert_ne!(before.digests, after.digests);
}

#[test]
fn an_ld_script_edited_in_place_changes_the_key() {
    let f = Fake::new();
    let before = f.extras(&[]);
    // The script now names another object: the kept list of what the link
    // reads must not be used.
    let script = f.path("lib2/libfoo.so");
    let text = fs::read_to_string(&script)
        .unwrap()
        .replace("one.o", "two.o");
    fs::OpenOptions::new()
        .write(true)
        .open(&script)
        .and_then(|mut h| std::io::Write::write_all(&mut h, text.as_bytes()))
        .unwrap();
    let after = f.extras(&[]);
    assert_eq!(f.runs("-###"), 2, "the edited script was not noticed");
    assert_ne!(before.digests, after.digests);
}

#[test]
fn a_driver_part_edited_in_place_probes_again() {
    let f = Fake::new();
    f.extras(&[]);
    let cc1 = f.path("prog/cc1");
    let text = fs::read_to_string(&cc1).unwrap().replace("one", "two");
    fs::OpenOptions::new()
        .write(true)
        .open(&cc1)
        .and_then(|mut h| std::io::Write::write_all(&mut h, text.as_bytes()))
        .unwrap();
    f.extras(&[]);
    assert_eq!(f.runs("-dM"), 2, "the edited cc1 was not noticed");
}

#[test]
fn a_configuration_file_edited_in_place_probes_again() {
    let f = Fake::new();
    f.extras(&[]);
    let cfg = f.path("prog/x86_64-fake-clang.cfg");
    fs::OpenOptions::new()
        .write(true)
        .open(&cfg)
        .and_then(|mut h| std::io::Write::write_all(&mut h, b"-O3\n"))
        .unwrap();
    f.extras(&[]);
    assert_eq!(
        f.runs("-dM"),
        2,
        "the edited configuration file was not noticed"
    );
}

#[test]
fn a_base_from_kept_answers_rests_on_the_stats_they_were_checked_under() {
    // The base takes the implicit header's and the include directories'
    // identities from the kept file's check (one stat each, not two): the
    // same backend still trusts them while they hold, and sees an edit made
    // after it keyed.
    let f = Fake::new();
    f.extras(&[]);
    let b = f.backend();
    let first = b.key_extras(&KERNEL, &[]).unwrap();
    assert_eq!(b.key_extras(&KERNEL, &[]).unwrap().digests, first.digests);
    assert_eq!(f.runs("-dM"), 1, "kept answers, trusted while they hold");
    fs::write(f.path("inc2/stdc-predef.h"), "#define FAKE_PREDEF 3\n").unwrap();
    f.age();
    let edited = b.key_extras(&KERNEL, &[]).unwrap();
    assert_eq!(
        f.runs("-dM"),
        2,
        "the edited implicit header was not noticed"
    );
    assert_ne!(edited.digests, first.digests);
    let b = f.backend();
    assert_eq!(b.key_extras(&KERNEL, &[]).unwrap().digests, edited.digests);
    assert_eq!(f.runs("-dM"), 2, "kept again");
    fs::write(f.path("inc1/new.h"), "").unwrap();
    f.age();
    b.key_extras(&KERNEL, &[]).unwrap();
    assert_eq!(
        f.runs("-dM"),
        3,
        "a header appearing in an include directory was not noticed"
    );
}

#[test]
fn a_replaced_compiler_probes_again() {
    let f = Fake::new();
    let before = f.extras(&[]);
    write_exe(&f.compiler, &script(&f.log, &f.root, "FAKE_REPLACED"));
    f.age();
    let after = f.extras(&[]);
    assert_eq!(f.runs("-dM"), 2, "the replaced compiler was not probed");
    assert!(has_macro(&after, "FAKE_REPLACED") && !has_macro(&after, "FAKE_ONE"));
    assert_ne!(before.macros, after.macros);
}

#[test]
fn options_it_cannot_validate_probe_every_time() {
    let f = Fake::new();
    for _ in 0..2 {
        f.extras(&["--param=max-unroll-times=2"]);
    }
    assert_eq!(
        f.runs("-dM"),
        2,
        "an unmodelled option was answered from the cache"
    );
    assert_eq!(f.runs("-###"), 2);
}

#[test]
fn options_naming_other_driver_directories_are_refused() {
    let f = Fake::new();
    let b = f.backend();
    for o in [
        vec!["-B".to_string(), f.path("prog").display().to_string()],
        vec![format!("-B{}", f.path("lib1").display())],
        vec![format!("-specs={}", f.path("lib2/specs").display())],
        vec![format!("--sysroot={}", f.root.display())],
    ] {
        match b.key_extras(&KERNEL, &o) {
            Err(BackendError::Refused { .. }) => {}
            other => panic!("{o:?} was not refused: {other:?}"),
        }
    }
    assert_eq!(f.runs("-dM"), 0);
}

/// The system compiler, when one runs here (`KCACHE_TEST_REQUIRE=cc`
/// makes its absence a failure).
fn system_backend(cache: &Path, prelude: &str) -> Option<CcBackend> {
    let required =
        std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"));
    match CcBackend::builder()
        .hooks(&Hooks::new())
        .identity_cache(cache)
        .prelude(prelude)
        .build()
    {
        Ok(b) => Some(b),
        Err(e @ BackendError::Unavailable { .. }) if !required => {
            eprintln!("skipping: no C compiler: {e}");
            None
        }
        Err(e) => panic!("building the backend failed: {e}"),
    }
}

#[test]
fn kept_answers_give_the_key_fresh_probes_give() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("compilers");
    let options: Vec<String> = ["-O3", "-DN=4", "-lm"].map(String::from).to_vec();
    for prelude in ["", "#include <math.h>\n"] {
        let Some(fresh) = system_backend(&cache, prelude) else {
            return;
        };
        let first = fresh.key_extras(&KERNEL, &options).unwrap();
        // A new backend answers from the kept file where the stats allow,
        // else probes again: the key is the same either way.
        let again = system_backend(&cache, prelude).unwrap();
        let second = again.key_extras(&KERNEL, &options).unwrap();
        assert_eq!(first.digests, second.digests, "prelude {prelude:?}");
        assert_eq!(first.macros, second.macros, "prelude {prelude:?}");
        assert_eq!(first.position_macros, second.position_macros);
        // And without any kept file.
        let uncached = CcBackend::builder().hooks(&Hooks::new()).prelude(prelude);
        let third = uncached
            .build()
            .unwrap()
            .key_extras(&KERNEL, &options)
            .unwrap();
        assert_eq!(first.digests, third.digests, "prelude {prelude:?}");
        assert_eq!(first.macros, third.macros, "prelude {prelude:?}");
    }
}
