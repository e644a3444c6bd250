//! The resolver's key memo: a batch that repeats a text derives its key
//! once, a later batch reuses it only while what the key was derived from
//! holds, and a header changed between two batches of one process misses.

use kcache::backend::cc::CcBackend;
use kcache::backend::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, KeyValidity,
};
use kcache::cache::code::Capacity;
use kcache::cache::hooks::Hooks;
use kcache::key::Digest;
use kcache::resolve::{Kernel, Outcome, Resolver};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the test backend's extras say, and whether they still hold.
#[derive(Default)]
struct World {
    /// The "header" the extras digest: changing it changes the extras.
    header: AtomicU8,
    /// What the extras' validity answers.
    holds: AtomicBool,
    /// Whether the extras carry a validity at all.
    with_validity: AtomicBool,
    extras_calls: AtomicUsize,
    compiles: AtomicUsize,
}

struct Test(Arc<World>);

impl Backend for Test {
    type Program = ();

    fn family(&self) -> &'static str {
        "test"
    }

    fn identity(&self) -> &str {
        "test 1"
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<()>, BackendError> {
        self.0
            .compiles
            .fetch_add(job.kernels.len(), Ordering::SeqCst);
        Ok(Compiled {
            program: Arc::new(()),
            binary: vec![0; 8],
            uncacheable: None,
        })
    }

    fn load(&self, _binary: &[u8], _symbols: &[&str]) -> Result<Arc<()>, BackendError> {
        Ok(Arc::new(()))
    }

    fn key_extras(
        &self,
        _kernel: &KernelSource<'_>,
        _options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        self.0.extras_calls.fetch_add(1, Ordering::SeqCst);
        let world = Arc::clone(&self.0);
        Ok(KeyExtras {
            digests: vec![Digest([self.0.header.load(Ordering::SeqCst); 32])],
            validity: self
                .0
                .with_validity
                .load(Ordering::SeqCst)
                .then(|| KeyValidity::new(move || world.holds.load(Ordering::SeqCst))),
            ..KeyExtras::default()
        })
    }
}

fn test_resolver() -> (Arc<World>, Resolver<Test>) {
    let world = Arc::new(World::default());
    world.holds.store(true, Ordering::SeqCst);
    world.with_validity.store(true, Ordering::SeqCst);
    let r = Resolver::with(
        Arc::new(Test(Arc::clone(&world))),
        Capacity::Fixed(1 << 20),
        &Hooks::new(),
    );
    (world, r)
}

fn kernel(name: &str) -> Kernel {
    Kernel::new(
        name,
        format!("void {name}(float* n1_x) {{ n1_x[0] = 1.0f; }}\n"),
    )
    .bound(["n1_x"])
}

#[test]
fn a_batch_repeating_a_text_derives_its_key_once() {
    let (world, r) = test_resolver();
    let batch = vec![kernel("a"), kernel("a"), kernel("b"), kernel("a")];
    let first = r.resolve_counted(&batch).unwrap();
    assert_eq!(first.census.keys_derived, 2);
    assert_eq!(world.extras_calls.load(Ordering::SeqCst), 2);
    let again = r.resolve_counted(&batch).unwrap();
    assert_eq!(again.census.keys_derived, 0);
    assert_eq!(world.extras_calls.load(Ordering::SeqCst), 2, "trusted");
    for (a, b) in first.answers.iter().zip(&again.answers) {
        assert_eq!(a.key, b.key);
    }
}

#[test]
fn a_memoized_key_is_asked_again_once_its_extras_no_longer_hold() {
    let (world, r) = test_resolver();
    let k = kernel("a");
    let key = r.key(&k).unwrap();
    // Nothing changed, but the backend cannot vouch for it: asked again,
    // the same extras answer the same key without deriving it.
    world.holds.store(false, Ordering::SeqCst);
    let batch = r.resolve_counted(std::slice::from_ref(&k)).unwrap();
    assert_eq!(world.extras_calls.load(Ordering::SeqCst), 2);
    assert_eq!(batch.census.keys_derived, 0);
    assert_eq!(batch.answers[0].key, key);
    // The header changed: a new key, compiled.
    world.header.store(1, Ordering::SeqCst);
    let changed = r.resolve_counted(std::slice::from_ref(&k)).unwrap();
    assert_eq!(changed.census.keys_derived, 1);
    assert_ne!(changed.answers[0].key, key);
    assert_eq!(changed.answers[0].outcome, Outcome::Compiled);
    assert_eq!(world.compiles.load(Ordering::SeqCst), 2);
}

#[test]
fn extras_without_a_validity_are_asked_for_on_every_keying() {
    let (world, r) = test_resolver();
    world.with_validity.store(false, Ordering::SeqCst);
    let k = kernel("a");
    let key = r.key(&k).unwrap();
    assert_eq!(r.key(&k).unwrap(), key);
    assert_eq!(world.extras_calls.load(Ordering::SeqCst), 2);
    world.header.store(7, Ordering::SeqCst);
    assert_ne!(r.key(&k).unwrap(), key);
}

#[test]
fn kernels_differing_only_in_options_or_rules_get_their_own_keys() {
    let (_, r) = test_resolver();
    let k = kernel("a");
    let base = r.key(&k).unwrap();
    assert_ne!(r.key(&k.clone().options(["-O3"])).unwrap(), base);
    // With `n1_x` kept as written, the text is not the same kernel up to
    // renaming as one that renames it.
    let mut kept = k.clone();
    kept.canon.bound.clear();
    kept.canon.keep.push("n1_x".into());
    assert_ne!(r.key(&kept).unwrap(), base);
    assert_eq!(r.key(&k).unwrap(), base);
}

fn cc(hooks: &Hooks, dir: &std::path::Path) -> Option<CcBackend> {
    let required =
        std::env::var("KCACHE_TEST_REQUIRE").is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"));
    match CcBackend::builder().source_dir(dir).hooks(hooks).build() {
        Ok(b) => Some(b),
        Err(e) if !required => {
            eprintln!("skipping: no C compiler ({e})");
            None
        }
        Err(e) => panic!("cc is required here: {e}"),
    }
}

fn with_header(name: &str) -> Kernel {
    Kernel::new(
        name,
        format!(
            "#include \"kc_v.h\"\nvoid {name}(float* n1_x, int n) {{\n  for (int i0 = 0; i0 < n; i0++) n1_x[i0] = KC_V;\n}}\n"
        ),
    )
    .bound(["n1_x"])
}

#[test]
fn a_header_changed_between_two_batches_misses() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let Some(backend) = cc(&hooks, dir.path()) else {
        return;
    };
    let header = dir.path().join("kc_v.h");
    std::fs::write(&header, "#define KC_V 1.0f\n").unwrap();
    let r = Resolver::with(Arc::new(backend), Capacity::Fixed(1 << 30), &hooks);
    let batch = vec![with_header("k"), with_header("k"), with_header("k")];
    let first = r.resolve_counted(&batch).unwrap();
    assert_eq!(first.census.keys_derived, 1, "derived once per batch");
    assert_eq!(first.census.kernels_compiled, 1);
    // Same length, so only the contents and the file's times tell.
    std::fs::write(&header, "#define KC_V 2.0f\n").unwrap();
    let second = r.resolve_counted(&batch).unwrap();
    assert_ne!(second.answers[0].key, first.answers[0].key);
    assert_eq!(second.answers[0].outcome, Outcome::Compiled);
    let mut x = vec![0.0f32; 4];
    let mut launch = kcache::backend::Launch {
        buffers: vec![std::mem::take(&mut x)],
        scalars: vec![4],
        global: [1, 1, 1],
        local: [1, 1, 1],
    };
    r.backend()
        .launch(
            &second.answers[0].program,
            &second.answers[0].symbol,
            &mut launch,
        )
        .unwrap();
    assert_eq!(launch.buffers[0], vec![2.0; 4], "the new header's value");
    // Replaced by another file (a rename over it), then restored as it was:
    // the key follows the contents each time.
    let other = dir.path().join("kc_v.h.new");
    std::fs::write(&other, "#define KC_V 3.0f\n").unwrap();
    std::fs::rename(&other, &header).unwrap();
    let third = r.key(&with_header("k")).unwrap();
    assert_ne!(third, second.answers[0].key);
    std::fs::write(&header, "#define KC_V 1.0f\n").unwrap();
    assert_eq!(r.key(&with_header("k")).unwrap(), first.answers[0].key);
}

#[test]
fn a_header_appearing_earlier_in_the_search_misses() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new();
    let Some(backend) = cc(&hooks, dir.path()) else {
        return;
    };
    let inc = dir.path().join("inc");
    std::fs::create_dir(&inc).unwrap();
    std::fs::write(inc.join("kc_v.h"), "#define KC_V 1.0f\n").unwrap();
    let r = Resolver::with(Arc::new(backend), Capacity::Fixed(1 << 30), &hooks);
    let k = with_header("k").options(["-I", inc.to_str().unwrap()]);
    let first = r.resolve_counted(std::slice::from_ref(&k)).unwrap();
    // The source directory is searched first for a quoted include.
    std::fs::write(dir.path().join("kc_v.h"), "#define KC_V 1.0f\n").unwrap();
    let second = r.resolve_counted(std::slice::from_ref(&k)).unwrap();
    assert_ne!(second.answers[0].key, first.answers[0].key);
    assert_eq!(second.answers[0].outcome, Outcome::Compiled);
}

#[test]
fn an_opencl_header_changed_between_two_batches_misses() {
    use kcache::backend::opencl::{OpenCl, OpenClConfig};
    let required = std::env::var("KCACHE_TEST_REQUIRE")
        .is_ok_and(|l| l.split(',').any(|w| w.trim() == "opencl"));
    let hooks = Hooks::new();
    let backend = match OpenCl::with_hooks(&OpenClConfig::default(), &hooks) {
        Ok(b) => b,
        Err(e) if !required => {
            eprintln!("skipping: no OpenCL ({e})");
            return;
        }
        Err(e) => panic!("opencl is required here: {e}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let header = dir.path().join("kc_v.h");
    std::fs::write(&header, "#define KC_V 1.0f\n").unwrap();
    let r = Resolver::with(Arc::new(backend), Capacity::Fixed(1 << 30), &hooks);
    let k = Kernel::new(
        "k",
        "#include \"kc_v.h\"\n__kernel void k(__global float* n1_x) { n1_x[get_global_id(0)] = KC_V; }\n",
    )
    .bound(["n1_x"])
    .options([format!("-I{}", dir.path().display())]);
    let batch = vec![k.clone(), k.clone()];
    let first = r.resolve_counted(&batch).unwrap();
    assert_eq!(first.census.keys_derived, 1, "derived once per batch");
    std::fs::write(&header, "#define KC_V 2.0f\n").unwrap();
    let second = r.resolve_counted(&batch).unwrap();
    assert_ne!(second.answers[0].key, first.answers[0].key);
    assert_eq!(second.answers[0].outcome, Outcome::Compiled);
}
