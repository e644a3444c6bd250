//! The cold-cache scope. In a test binary of its own: a cold scope empties
//! every code cache of the process, so it must not run beside other tests'
//! resolves (the scope's documented limit).

use kcache::backend::{Backend, BackendError, CompileJob, Compiled};
use kcache::cache::code::{with_cold_caches, Capacity};
use kcache::cache::hooks::Hooks;
use kcache::resolve::{Kernel, Outcome, Resolver};
use std::sync::{Arc, Mutex};

/// A program: the symbols compiled into it.
#[derive(Debug)]
struct Program(Vec<String>);

impl Program {
    fn has(&self, symbol: &str) -> bool {
        self.0.iter().any(|s| s == symbol)
    }
}

struct Recorder;

impl Backend for Recorder {
    type Program = Program;

    fn family(&self) -> &'static str {
        "test"
    }

    fn identity(&self) -> &str {
        "test"
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<Program>, BackendError> {
        Ok(Compiled {
            program: Arc::new(Program(
                job.kernels.iter().map(|k| k.symbol.to_string()).collect(),
            )),
            binary: vec![0; 10],
            uncacheable: None,
        })
    }

    fn load(&self, _binary: &[u8], _symbols: &[&str]) -> Result<Arc<Program>, BackendError> {
        unreachable!("no store here")
    }
}

fn resolver(_rec: &Arc<()>, hooks: &Hooks) -> Resolver<Recorder> {
    Resolver::with(Arc::new(Recorder), Capacity::Fixed(1 << 20), hooks)
}

fn kernel(name: &str, body: &str, counter: usize) -> Kernel {
    Kernel::new(
        name,
        format!("void {name}(float* n1_x) {{ for (int i{counter} = 0; i{counter} < 4; i{counter}++) n1_x[i{counter}] {body}; }}"),
    )
    .bound(["n1_x"])
}

/// Serializes the tests that empty every cache of the process.
static COLD: Mutex<()> = Mutex::new(());

#[test]
fn cold_scopes_nest_survive_a_panic_and_restore_what_was_held() {
    let _serial = COLD.lock().unwrap_or_else(|e| e.into_inner());
    let rec = Arc::new(());
    let hooks = Hooks::new();
    let r = resolver(&rec, &hooks);
    let held = r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
    with_cold_caches(|| {
        assert_eq!(r.cache_stats().entries, 0);
        let inside = r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
        assert_eq!(inside[0].outcome, Outcome::Compiled);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_cold_caches(|| {
                r.resolve(&[kernel("b", "= 2", 1)]).unwrap();
                panic!("inside the inner scope");
            })
        }));
        assert!(panicked.is_err());
        // The inner scope put back what the outer one held: `a`, not `b`.
        assert_eq!(
            r.resolve(&[kernel("a", "= 1", 1)]).unwrap()[0].outcome,
            Outcome::Reused
        );
        assert_eq!(
            r.resolve(&[kernel("b", "= 2", 1)]).unwrap()[0].outcome,
            Outcome::Compiled
        );
        assert!(inside[0].program.has("a"));
    });
    let after = r
        .resolve(&[kernel("a", "= 1", 1), kernel("b", "= 2", 1)])
        .unwrap();
    assert_eq!(after[0].outcome, Outcome::Reused);
    assert!(
        Arc::ptr_eq(&after[0].program, &held[0].program),
        "what was held on entry is back"
    );
    assert_eq!(
        after[1].outcome,
        Outcome::Compiled,
        "what the scope published is gone"
    );
}

#[test]
fn a_cache_created_inside_a_cold_scope_ends_empty() {
    let _serial = COLD.lock().unwrap_or_else(|e| e.into_inner());
    let rec = Arc::new(());
    let hooks = Hooks::new();
    let r = with_cold_caches(|| {
        let r = resolver(&rec, &hooks);
        r.resolve(&[kernel("a", "= 1", 1)]).unwrap();
        assert_eq!(r.cache_stats().entries, 1);
        r
    });
    assert_eq!(r.cache_stats().entries, 0);
}
