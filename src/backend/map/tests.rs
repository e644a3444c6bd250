//! The adapter keys as the backend it wraps: a probe answers a value unlike
//! every default from each keying method, and the adapter must answer the
//! same, and the resolver's keys through it must equal the probe's own.

use super::{KeepBinary, MapProgram, ProgramMap};
use crate::backend::{
    Backend, BackendError, CompileJob, Compiled, KernelSource, KeyExtras, KeyValidity, Language,
    Launch,
};
use crate::key::{digest_parts_raw, Digest};
use crate::resolve::{Kernel, Resolver};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A program of the probe: the text it was compiled from.
struct ProbeProgram(Vec<u8>);

/// Counts of the probe's program calls.
#[derive(Default)]
struct Calls {
    loads: AtomicUsize,
    digested_loads: AtomicUsize,
    launches: AtomicUsize,
    clears: AtomicUsize,
}

/// A backend whose every method answers something no default does.
struct Probe {
    validity: KeyValidity,
    calls: Calls,
}

impl Probe {
    fn new() -> Self {
        Probe {
            validity: KeyValidity::new(|| true),
            calls: Calls::default(),
        }
    }
}

const MACRO: &[u8] = b"SCALE";
const POSITION_MACRO: &[u8] = b"HERE";

// The lint makes a method added to `Backend` fail here until the probe
// answers it distinctively (and the tests below compare it).
#[deny(clippy::missing_trait_methods)]
impl Backend for Probe {
    type Program = ProbeProgram;

    fn family(&self) -> &'static str {
        "probe"
    }

    fn identity(&self) -> &str {
        "probe compiler 9.9\nsecond line of the identity"
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<ProbeProgram>, BackendError> {
        let binary: Vec<u8> = job.kernels.iter().flat_map(|k| k.text.bytes()).collect();
        Ok(Compiled {
            program: Arc::new(ProbeProgram(binary.clone())),
            binary,
            uncacheable: Some("probe: the compile's own verdict".into()),
        })
    }

    fn load(&self, binary: &[u8], _symbols: &[&str]) -> Result<Arc<ProbeProgram>, BackendError> {
        self.calls.loads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(ProbeProgram(binary.to_vec())))
    }

    fn load_digested(
        &self,
        binary: &[u8],
        _digest: &Digest,
        _symbols: &[&str],
    ) -> Result<Arc<ProbeProgram>, BackendError> {
        self.calls.digested_loads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(ProbeProgram(binary.to_vec())))
    }

    fn key_version(&self) -> u32 {
        0x5eed
    }

    fn describe(&self) -> String {
        "the probe, described".into()
    }

    fn language(&self) -> Language {
        Language::Glsl
    }

    fn device_index(&self) -> usize {
        7
    }

    fn split_capable(&self) -> bool {
        false
    }

    fn key_extras(
        &self,
        kernel: &KernelSource<'_>,
        options: &[String],
    ) -> Result<KeyExtras, BackendError> {
        if kernel.symbol == "refused" {
            return Err(BackendError::Refused {
                backend: "probe",
                input: kernel.symbol.into(),
                reason: "the probe refuses it".into(),
            });
        }
        let parts = std::iter::once(kernel.text).chain(options.iter().map(String::as_str));
        Ok(KeyExtras {
            digests: vec![digest_parts_raw(parts)],
            macros: Arc::new([MACRO].into_iter().collect()),
            position_macros: Arc::new([POSITION_MACRO].into_iter().collect()),
            pasting: Default::default(),
            reached: Default::default(),
            uncacheable: (kernel.symbol == "timed").then(|| "probe: __TIME__".into()),
            records_names: options
                .iter()
                .any(|o| o == "-O2")
                .then(|| "probe: -O2".into()),
            validity: Some(self.validity.clone()),
        })
    }

    fn isolates_kernels(&self) -> bool {
        true
    }

    fn can_run(&self) -> bool {
        true
    }

    fn launch(
        &self,
        program: &ProbeProgram,
        _symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        self.calls.launches.fetch_add(1, Ordering::SeqCst);
        launch.buffers = vec![vec![program.0.len() as f32]];
        Ok(())
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.calls.clears.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The probe's family and identity, every other method left to its default:
/// what a wrapper that forwards nothing else would key as.
struct Defaults;

impl Backend for Defaults {
    type Program = ProbeProgram;

    fn family(&self) -> &'static str {
        Probe::new().family()
    }

    fn identity(&self) -> &str {
        "probe compiler 9.9\nsecond line of the identity"
    }

    fn compile(&self, _job: &CompileJob<'_>) -> Result<Compiled<ProbeProgram>, BackendError> {
        unreachable!("only keyed")
    }

    fn load(&self, _binary: &[u8], _symbols: &[&str]) -> Result<Arc<ProbeProgram>, BackendError> {
        unreachable!("only keyed")
    }
}

/// A map whose programs hold nothing and are never loaded (the CLI's kind).
struct Nothing;

impl<P> ProgramMap<P> for Nothing {
    type Program = ();
    const RUNS: bool = false;

    fn map(&self, _program: Arc<P>, _binary: &[u8]) {}

    fn load(
        &self,
        _binary: &[u8],
        _load: impl FnOnce() -> Result<Arc<P>, BackendError>,
    ) -> Result<(), BackendError> {
        Ok(())
    }

    fn inner<'a>(&self, _program: &'a ()) -> Option<&'a P> {
        None
    }
}

fn kernels() -> Vec<Kernel> {
    let text = "void k(float *out, int n) { float scale = SCALE; out[n] = scale * HERE; }";
    vec![
        Kernel::new("k", text),
        Kernel::new("k", text).options(["-O2", "-DSCALE=2"]),
        Kernel::new("timed", text.replace("void k", "void timed")),
        Kernel::new("other", "void other(float *p) { p[0] = 1; }").options(["-O1"]),
    ]
}

/// What [`keying`] reads of a backend.
type Keying = (
    (&'static str, String, u32),
    (bool, bool),
    (String, Language, usize),
    Vec<Result<KeyExtras, String>>,
    Result<(), String>,
);

/// Every keying method of `b` (and the other plain answers), as one value.
fn keying<B: Backend>(b: &B) -> Keying {
    let extras: Vec<_> = kernels()
        .iter()
        .map(|k| {
            let source = KernelSource {
                symbol: &k.symbol,
                text: &k.text,
            };
            b.key_extras(&source, &k.options).map_err(|e| e.to_string())
        })
        .collect();
    let refused = b
        .key_extras(
            &KernelSource {
                symbol: "refused",
                text: "",
            },
            &[],
        )
        .map_err(|e| e.to_string());
    (
        (b.family(), b.identity().to_string(), b.key_version()),
        (b.isolates_kernels(), b.split_capable()),
        (b.describe(), b.language(), b.device_index()),
        extras,
        refused.map(|_| ()),
    )
}

#[test]
fn probe_answers_no_default_so_the_comparisons_below_can_fail() {
    let (probe, defaults) = (Probe::new(), Defaults);
    assert_ne!(probe.key_version(), defaults.key_version());
    assert_ne!(probe.isolates_kernels(), defaults.isolates_kernels());
    assert_ne!(probe.split_capable(), defaults.split_capable());
    assert_ne!(probe.describe(), defaults.describe());
    assert_ne!(probe.language(), defaults.language());
    assert_ne!(probe.device_index(), defaults.device_index());
    assert_ne!(probe.can_run(), defaults.can_run());
    assert_ne!(keying(&probe), keying(&defaults));
    let k = &kernels()[0];
    let source = KernelSource {
        symbol: &k.symbol,
        text: &k.text,
    };
    let extras = probe.key_extras(&source, &k.options).unwrap();
    assert_ne!(extras, KeyExtras::default());
}

#[test]
fn adapter_answers_every_keying_method_as_the_inner_backend() {
    let probe = Arc::new(Probe::new());
    let kept = MapProgram::new(Arc::clone(&probe), KeepBinary);
    let nothing = MapProgram::new(Arc::clone(&probe), Nothing);
    assert_eq!(keying(&kept), keying(&*probe));
    assert_eq!(keying(&nothing), keying(&*probe));
    assert_eq!(kept.can_run(), probe.can_run());
    // The validity is the inner backend's own check, not a copy.
    let k = &kernels()[0];
    let source = KernelSource {
        symbol: &k.symbol,
        text: &k.text,
    };
    let extras = kept.key_extras(&source, &k.options).unwrap();
    assert_eq!(extras.validity, Some(probe.validity.clone()));
}

#[test]
fn resolver_keys_through_the_adapter_equal_the_inner_backends() {
    let probe = Arc::new(Probe::new());
    let direct = Resolver::new(Arc::clone(&probe));
    let kept = Resolver::new(Arc::new(MapProgram::new(Arc::clone(&probe), KeepBinary)));
    let nothing = Resolver::new(Arc::new(MapProgram::new(Arc::clone(&probe), Nothing)));
    let defaults = Resolver::new(Arc::new(Defaults));
    for k in kernels() {
        let key = direct.key(&k).unwrap();
        assert_eq!(kept.key(&k).unwrap(), key, "{}", k.symbol);
        assert_eq!(nothing.key(&k).unwrap(), key, "{}", k.symbol);
        // A wrapper keying on the defaults would name another program.
        assert_ne!(defaults.key(&k).unwrap(), key, "{}", k.symbol);
    }
    let refused = Kernel::new("refused", "void refused(void) {}");
    assert!(direct.key(&refused).is_err());
    assert!(kept.key(&refused).is_err());
}

#[test]
fn keep_binary_holds_the_inner_program_and_its_bytes() {
    let probe = Arc::new(Probe::new());
    let kept = MapProgram::new(Arc::clone(&probe), KeepBinary);
    let source = [KernelSource {
        symbol: "k",
        text: "void k(void) {}",
    }];
    let job = CompileJob {
        kernels: &source,
        options: &[],
        group: 0,
        n_groups: 1,
        fresh: false,
    };
    let c = kept.compile(&job).unwrap();
    assert_eq!(c.binary, b"void k(void) {}");
    assert_eq!(c.program.binary(), &c.binary[..]);
    assert_eq!(c.program.program().0, c.binary);
    assert_eq!(
        c.uncacheable.as_deref(),
        Some("probe: the compile's own verdict")
    );

    let loaded = kept.load(b"stored", &["k"]).unwrap();
    assert_eq!(loaded.binary(), b"stored");
    let digest = digest_parts_raw([b"stored"]);
    let digested = kept.load_digested(b"again", &digest, &["k"]).unwrap();
    assert_eq!(digested.binary(), b"again");
    assert_eq!(probe.calls.loads.load(Ordering::SeqCst), 1);
    assert_eq!(probe.calls.digested_loads.load(Ordering::SeqCst), 1);

    let mut launch = Launch::default();
    kept.launch(&loaded, "k", &mut launch).unwrap();
    assert_eq!(launch.buffers, vec![vec![6.0]]);
    assert_eq!(probe.calls.launches.load(Ordering::SeqCst), 1);
    kept.clear_cache().unwrap();
    assert_eq!(probe.calls.clears.load(Ordering::SeqCst), 1);
}

#[test]
fn a_map_that_never_loads_skips_the_inner_load_and_cannot_run() {
    let probe = Arc::new(Probe::new());
    let nothing = MapProgram::new(Arc::clone(&probe), Nothing);
    let program = nothing.load(b"stored", &["k"]).unwrap();
    let digest = digest_parts_raw([b"stored"]);
    nothing.load_digested(b"stored", &digest, &["k"]).unwrap();
    assert_eq!(probe.calls.loads.load(Ordering::SeqCst), 0);
    assert_eq!(probe.calls.digested_loads.load(Ordering::SeqCst), 0);
    assert!(!nothing.can_run());
    let err = nothing.launch(&program, "k", &mut Launch::default());
    assert!(matches!(
        err,
        Err(BackendError::Launch {
            backend: "probe",
            ..
        })
    ));
    assert_eq!(probe.calls.launches.load(Ordering::SeqCst), 0);
}
