//! The resolver's configuration from the environment. In a test binary of
//! its own: it sets `KCACHE_CODE_CACHE_BYTES` and clears the process's hooks.

use kcache::backend::{Backend, BackendError, CompileJob, Compiled};
use kcache::cache::code::{CAPACITY_ENV, DEFAULT_CAPACITY};
use kcache::cache::hooks;
use kcache::resolve::{Kernel, Outcome, Resolver};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Debug)]
struct Program;

struct Fake;

impl Backend for Fake {
    type Program = Program;

    fn family(&self) -> &'static str {
        "test"
    }

    fn identity(&self) -> &str {
        "test"
    }

    fn compile(&self, _job: &CompileJob<'_>) -> Result<Compiled<Program>, BackendError> {
        Ok(Compiled {
            program: Arc::new(Program),
            binary: vec![0; 10],
            uncacheable: None,
        })
    }

    fn load(&self, _binary: &[u8], _symbols: &[&str]) -> Result<Arc<Program>, BackendError> {
        unreachable!("no store here")
    }
}

/// A candidate's worth of kernels.
fn candidate() -> Vec<Kernel> {
    (0..4)
        .map(|j| {
            Kernel::new(
                format!("k{j}"),
                format!("void k{j}(float* x) {{ x[0] = {j}; }}"),
            )
        })
        .collect()
}

/// A log sink the test reads back.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One test, so nothing else reads the environment while it is changed.
#[test]
fn the_code_cache_capacity_is_read_once_at_build_and_a_bad_value_warns_once() {
    std::env::remove_var(CAPACITY_ENV);
    assert_eq!(
        Resolver::builder(Arc::new(Fake)).build().code_cache_bytes(),
        DEFAULT_CAPACITY,
        "unset: 256 MiB"
    );
    std::env::set_var(CAPACITY_ENV, "1MiB");
    let r = Resolver::builder(Arc::new(Fake)).build();
    std::env::set_var(CAPACITY_ENV, "2MiB");
    assert_eq!(r.code_cache_bytes(), 1 << 20, "read at build, not later");
    assert_eq!(
        Resolver::builder(Arc::new(Fake))
            .code_cache_bytes(7)
            .build()
            .code_cache_bytes(),
        7,
        "a setting wins over the environment"
    );

    std::env::set_var(CAPACITY_ENV, "lots");
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        // Hooks of its own: the other test of this binary clears the
        // process's, which would empty this resolver's code cache mid-test.
        let r = Resolver::builder(Arc::new(Fake))
            .hooks(&hooks::Hooks::new())
            .build();
        assert_eq!(r.code_cache_bytes(), DEFAULT_CAPACITY);
        r.resolve(&candidate()).unwrap();
        let again = r.resolve(&candidate()).unwrap();
        assert!(again.iter().all(|a| a.outcome == Outcome::Reused));
    });
    std::env::remove_var(CAPACITY_ENV);
    let log = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        log.matches("is not a byte count").count(),
        1,
        "one warning for one resolver: {log}"
    );
}

#[test]
fn the_builder_defaults_to_the_process_hooks() {
    let r = Resolver::builder(Arc::new(Fake))
        .code_cache_bytes(1 << 20)
        .build();
    let batch = [Kernel::new("only", "void only(float* x) { x[0] = 1; }")];
    r.resolve(&batch).unwrap();
    assert_eq!(r.resolve(&batch).unwrap()[0].outcome, Outcome::Reused);
    hooks::notify_clear_all().unwrap();
    assert_eq!(r.resolve(&batch).unwrap()[0].outcome, Outcome::Compiled);
}
