//! Through the resolver over the C backend: a header later made where a
//! search missed must change the key, armed or not, and so must a header
//! written through a name elsewhere.

use super::*;
use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
use crate::backend::cc::includes::memo::{self, StatId};
use crate::backend::cc::CcBackend;
use crate::backend::{Backend, Launch};
use crate::cache::code::Capacity;
use crate::cache::hooks::Hooks;
use crate::key::Digest;
use crate::resolve::{Kernel, Resolver};

/// A source directory with search directories `a` and `b`, the header in
/// `b/sub/kc_v.h`; `None` (skipped) without a C compiler unless CI
/// requires one.
fn fixture() -> Option<(tempfile::TempDir, Resolver<CcBackend>)> {
    // Files written now would be too recent to trust for 2 s.
    ALL_OLD.with(|o| o.set(true));
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("a")).unwrap();
    fs::create_dir_all(dir.path().join("b/sub")).unwrap();
    fs::write(dir.path().join("b/sub/kc_v.h"), "#define KC_V 1.0f\n").unwrap();
    let hooks = Hooks::new();
    let required =
        std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"));
    let backend = match CcBackend::builder()
        .source_dir(dir.path())
        .hooks(&hooks)
        .build()
    {
        Ok(b) => b,
        Err(e) if !required => {
            eprintln!("skipping: no C compiler ({e})");
            return None;
        }
        Err(e) => panic!("cc is required here: {e}"),
    };
    let resolver = Resolver::with(Arc::new(backend), Capacity::Fixed(1 << 30), &hooks);
    Some((dir, resolver))
}

/// One batch: the key and what the program writes.
fn batch(dir: &Path, r: &Resolver<CcBackend>) -> (Digest, f32) {
    let (a, b) = (dir.join("a"), dir.join("b"));
    let kernel = Kernel::new(
        "k",
        "#include \"sub/kc_v.h\"\nvoid k(float* n1_x, int n) {\n  for (int i0 = 0; i0 < n; i0++) n1_x[i0] = KC_V;\n}\n",
    )
    .bound(["n1_x"])
    .options(["-I", a.to_str().unwrap(), "-I", b.to_str().unwrap()]);
    let out = r.resolve_counted(&[kernel]).unwrap();
    let k = &out.answers[0];
    let mut launch = Launch {
        buffers: vec![vec![0.0; 2]],
        scalars: vec![2],
        global: [1, 1, 1],
        local: [1, 1, 1],
    };
    r.backend()
        .launch(&k.program, &k.symbol, &mut launch)
        .unwrap();
    (k.key, launch.buffers[0][0])
}

/// `before` makes the search miss (or not find the header yet); after one
/// batch (the key polled) and after five (armed), `make` makes a header
/// `#define KC_V (2.0f)` that now comes first: the next batch must run it,
/// under another key.
fn a_header_made_later_changes_the_key(before: impl Fn(&Path), make: impl Fn(&Path)) {
    for batches_before in [1, 5] {
        let Some((dir, r)) = fixture() else {
            return;
        };
        let d = dir.path();
        before(d);
        let (key, v) = batch(d, &r);
        assert_eq!(v, 1.0);
        for _ in 1..batches_before {
            assert_eq!(batch(d, &r), (key, 1.0));
        }
        make(d);
        let (again, v) = batch(d, &r);
        assert_eq!(v, 2.0, "after {batches_before} batches: the new header");
        assert_ne!(again, key);
    }
}

const NEW_HEADER: &str = "#define KC_V (2.0f)\n";

#[test]
fn a_header_made_where_a_file_stood_on_an_earlier_search_path_changes_the_key() {
    // `a/sub` is a file, so `a/sub/kc_v.h` cannot resolve; it becomes a
    // directory holding the header, which then comes first.
    a_header_made_later_changes_the_key(
        |d| fs::write(d.join("a/sub"), "not a directory").unwrap(),
        |d| {
            fs::remove_file(d.join("a/sub")).unwrap();
            fs::create_dir(d.join("a/sub")).unwrap();
            fs::write(d.join("a/sub/kc_v.h"), NEW_HEADER).unwrap();
        },
    );
}

#[test]
fn a_header_made_in_a_directory_missing_on_an_earlier_search_path_changes_the_key() {
    a_header_made_later_changes_the_key(
        |_| {},
        |d| {
            fs::create_dir(d.join("a/sub")).unwrap();
            fs::write(d.join("a/sub/kc_v.h"), NEW_HEADER).unwrap();
        },
    );
}

#[test]
fn a_header_made_behind_a_dangling_symlink_on_an_earlier_search_path_changes_the_key() {
    // `a/sub -> ../b/late/sub` resolves to nothing; making
    // `b/late/sub/kc_v.h` changes nothing in `a` (nor in the source
    // directory), only what the link resolves to.
    a_header_made_later_changes_the_key(
        |d| std::os::unix::fs::symlink("../b/late/sub", d.join("a/sub")).unwrap(),
        |d| {
            fs::create_dir_all(d.join("b/late/sub")).unwrap();
            fs::write(d.join("b/late/sub/kc_v.h"), NEW_HEADER).unwrap();
        },
    );
}

#[test]
fn a_directory_named_as_the_header_replaced_by_the_header_changes_the_key() {
    a_header_made_later_changes_the_key(
        |d| fs::create_dir_all(d.join("a/sub/kc_v.h")).unwrap(),
        |d| {
            fs::remove_dir(d.join("a/sub/kc_v.h")).unwrap();
            fs::write(d.join("a/sub/kc_v.h"), NEW_HEADER).unwrap();
        },
    );
}

#[test]
fn a_header_written_through_a_hard_link_elsewhere_changes_the_armed_key() {
    use crate::backend::cc::includes::memo::test_hooks::STATS;
    let Some((dir, r)) = fixture() else {
        return;
    };
    let d = dir.path();
    fs::create_dir(d.join("elsewhere")).unwrap();
    let alias = d.join("elsewhere/alias.h");
    fs::hard_link(d.join("b/sub/kc_v.h"), &alias).unwrap();
    let (key, _) = batch(d, &r);
    for _ in 0..3 {
        batch(d, &r);
    }
    let before = STATS.with(std::cell::Cell::get);
    assert_eq!(batch(d, &r), (key, 1.0));
    assert_eq!(STATS.with(std::cell::Cell::get), before, "armed: no stat");
    fs::write(&alias, NEW_HEADER).unwrap();
    let (again, v) = batch(d, &r);
    assert_eq!(v, 2.0);
    assert_ne!(again, key);
}

#[test]
fn a_relative_miss_rests_on_the_working_directory() {
    let missing = Path::new("kcache-no-such-dir/x.h");
    let (dir, id) = memo::watch_dir(missing).expect("the working directory");
    assert_eq!(dir, Path::new("."));
    assert_eq!(id, StatId::of(Path::new(".")));
    assert!(memo::watch_dir(Path::new("./kcache-no-such.h")).is_some());
}
