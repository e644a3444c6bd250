//! [`Lifecycle`]: a GPU backend's side of the teardown contract, its device
//! handle and its per-device cache of loaded programs.

use std::sync::{Arc, PoisonError, RwLock};

use super::{kernel_names, unavailable};
use crate::backend::{BackendError, BuildError, CompileJob, Compiled};
use crate::cache::guarded::{GuardedCache, GuardedError, Handles, KernelCache};
use crate::cache::hooks::Hooks;
use crate::key::Source;

/// The kernel name a program loaded from bytes is cached under: the bytes
/// are its source, so loading the same bytes twice finds one program.
pub(crate) const LOADED: &str = "<binary>";

/// The handle-cache key of a compiled group on `device`: the group's symbols
/// joined, the concatenated program `source`, and the option list.
///
/// [`KernelCache::key`] sorts options (they are named flags to it), but a
/// compiler's option list is ordered (`-DX=1 -UX` is not `-UX -DX=1`), so
/// each option is keyed by its position.
pub(crate) fn compile_key(device: usize, job: &CompileJob<'_>, source: &str) -> String {
    let options: Vec<(String, &str)> = job
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| (i.to_string(), option.as_str()))
        .collect();
    // Symbols are identifiers (`check_job`), so `,` cannot occur in one.
    let names = kernel_names(job).join(",");
    KernelCache::<()>::key(device, &names, &Source::from(source), &options)
}

/// The handle-cache key of a program loaded from `binary` on `device`.
pub(crate) fn load_key(device: usize, binary: &[u8]) -> String {
    KernelCache::<()>::key::<&str, &str>(device, LOADED, &Source::new(binary), &[])
}

/// The device a build runs on, for a backend that holds one until destroyed
/// (OpenCL, Vulkan; `Lifecycle` refuses builds after a destroy).
pub(crate) fn opened<D>(
    family: &'static str,
    device: Option<Arc<D>>,
) -> Result<Arc<D>, BackendError> {
    device.ok_or_else(|| unavailable(family, "the backend holds no device"))
}

/// Where a backend's device stands.
enum Slot<D> {
    /// Usable; `None` where the backend has no device handles at all (CUDA
    /// compile only).
    Open(Option<Arc<D>>),
    /// [`Lifecycle::destroy_device`] ran: the backend let go of the device.
    Destroyed,
}

/// A GPU backend's side of the teardown contract (see
/// [`crate::cache::hooks`]): its device handle and its per-device cache of
/// loaded programs.
///
/// * Programs live in a [`KernelCache`] keyed by [`compile_key`] or
///   [`load_key`] on the backend's device index, so compiling (or loading)
///   the same group twice in a process answers the same program while anyone
///   holds it (a program only the cache holds is let go as the cache grows:
///   [`GuardedCache::sweep_unheld`]). Values own
///   their handles (each program holds its device by `Arc`), so the cache is
///   [`Handles::Owned`]: a program built across a clear is still good.
/// * The cache's device-destroy listener is registered on the hooks the
///   backend was given, for the backend's family.
/// * [`Lifecycle::clear`] is [`KernelCache::clear`], inside `around_clear`.
/// * [`Lifecycle::destroy_device`] notifies first, then lets go of the
///   device, completing even when a listener fails.
///
/// The build closures receive the device read *inside* the guarded build, so
/// a build that starts after a destroy sees no device, and one that read the
/// device before is rejected by the epoch the destroy bumped.
pub(crate) struct Lifecycle<D, P> {
    family: &'static str,
    index: usize,
    slot: RwLock<Slot<D>>,
    kernels: KernelCache<Compiled<P>>,
}

impl<D, P> Lifecycle<D, P>
where
    D: Send + Sync + 'static,
    P: Send + Sync + 'static,
{
    /// The lifecycle of device `index` of `family`, its listener registered
    /// on `hooks`.
    pub(crate) fn new(
        family: &'static str,
        index: usize,
        device: Option<Arc<D>>,
        hooks: &Hooks,
    ) -> Self {
        Lifecycle {
            family,
            index,
            slot: RwLock::new(Slot::Open(device)),
            // Bounded by what the layers above hold (see `sweep_unheld`): a
            // program is held through its `Compiled` or its `Arc` alone.
            kernels: KernelCache::new(
                family,
                hooks,
                GuardedCache::new(Handles::Owned).sweep_unheld(|c: &Arc<Compiled<P>>| {
                    Arc::strong_count(c) > 1 || Arc::strong_count(&c.program) > 1
                }),
            ),
        }
    }

    /// The device, while the backend holds one.
    pub(crate) fn current(&self) -> Option<Arc<D>> {
        match &*self.slot.read().unwrap_or_else(PoisonError::into_inner) {
            Slot::Open(device) => device.clone(),
            Slot::Destroyed => None,
        }
    }

    /// The device for a build: `Ok(None)` where the backend has none (compile
    /// only), an error once it was destroyed.
    fn for_build(&self) -> Result<Option<Arc<D>>, BackendError> {
        match &*self.slot.read().unwrap_or_else(PoisonError::into_inner) {
            Slot::Open(device) => Ok(device.clone()),
            Slot::Destroyed => Err(unavailable(
                self.family,
                format!(
                    "device {} was destroyed (destroy_device); open a new backend to use it again",
                    self.index
                ),
            )),
        }
    }

    /// The group's program: cached, or built by `build` with the device.
    pub(crate) fn compile(
        &self,
        job: &CompileJob<'_>,
        source: &str,
        build: impl FnOnce(Option<Arc<D>>) -> Result<Compiled<P>, BackendError>,
    ) -> Result<Compiled<P>, BackendError> {
        if job.fresh {
            return build(self.for_build()?);
        }
        let key = compile_key(self.index, job, source);
        let cached = self
            .kernels
            .find_or_build::<BuildError, _>(key, self.index, || Ok(build(self.for_build()?)?))
            .map_err(|e| e.into_backend(self.family))?;
        Ok(Compiled {
            program: Arc::clone(&cached.program),
            binary: cached.binary.clone(),
            uncacheable: None,
        })
    }

    /// The program loaded from `binary`: cached, or built by `build` with the
    /// device. The cache holds no copy of the bytes for it.
    pub(crate) fn load(
        &self,
        binary: &[u8],
        build: impl FnOnce(Option<Arc<D>>) -> Result<Arc<P>, BackendError>,
    ) -> Result<Arc<P>, BackendError> {
        let key = load_key(self.index, binary);
        let cached = self
            .kernels
            .find_or_build::<BuildError, _>(key, self.index, || {
                Ok(Compiled {
                    program: build(self.for_build()?)?,
                    binary: Vec::new(),
                    uncacheable: None,
                })
            })
            .map_err(|e| e.into_backend(self.family))?;
        Ok(Arc::clone(&cached.program))
    }

    /// Clears the cache, telling the layers above before and after.
    pub(crate) fn clear(&self) -> Result<(), BackendError> {
        self.kernels
            .clear()
            .map(drop)
            .map_err(|source| self.teardown_error(source))
    }

    /// Tears the device down: notifies device-destroy listeners (this
    /// backend's cache evicts the device's programs, the layers above forget
    /// theirs), then lets go of the device, then reports a listener failure.
    /// The device's driver objects are released when the last program built
    /// on it is dropped. Idempotent.
    pub(crate) fn destroy_device(&self) -> Result<(), BackendError> {
        self.kernels
            .destroy_device(self.index, || -> Result<(), GuardedError> {
                let released = std::mem::replace(
                    &mut *self.slot.write().unwrap_or_else(PoisonError::into_inner),
                    Slot::Destroyed,
                );
                drop(released);
                // A build that read the device before the slot changed may
                // have installed since the notification evicted: evict again
                // (bumping the epoch once more rejects one still in flight).
                self.kernels.cache().evict_device(self.index).map(drop)
            })
            .map_err(|source| self.teardown_error(source))
    }

    fn teardown_error(&self, source: GuardedError) -> BackendError {
        BackendError::Teardown {
            backend: self.family,
            source,
        }
    }

    /// The handle cache.
    pub(crate) fn kernels(&self) -> &KernelCache<Compiled<P>> {
        &self.kernels
    }

    /// The backend's own device index.
    pub(crate) fn index(&self) -> usize {
        self.index
    }
}

impl<D, P> std::fmt::Debug for Lifecycle<D, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let destroyed = matches!(
            &*self.slot.read().unwrap_or_else(PoisonError::into_inner),
            Slot::Destroyed
        );
        f.debug_struct("Lifecycle")
            .field("family", &self.family)
            .field("index", &self.index)
            .field("destroyed", &destroyed)
            .field("kernels", &self.kernels)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::concatenate;
    use crate::backend::gpu::tests::job;
    use crate::backend::KernelSource;
    use crate::cache::hooks::HookError;

    /// A stand-in device: counts how many holders it has through `Arc`.
    #[derive(Debug)]
    struct Device;

    /// A stand-in program, holding its device as real ones do.
    #[derive(Debug)]
    struct Program {
        device: Option<Arc<Device>>,
        n: usize,
    }

    type Life = Lifecycle<Device, Program>;

    fn life(hooks: &Hooks) -> (Life, Arc<Device>) {
        let device = Arc::new(Device);
        (
            Lifecycle::new("fake", 3, Some(Arc::clone(&device)), hooks),
            device,
        )
    }

    fn kernels() -> [KernelSource<'static>; 2] {
        [
            KernelSource {
                symbol: "a",
                text: "a();",
            },
            KernelSource {
                symbol: "b",
                text: "b();",
            },
        ]
    }

    fn build(
        n: usize,
    ) -> impl FnOnce(Option<Arc<Device>>) -> Result<Compiled<Program>, BackendError> {
        move |device| {
            Ok(Compiled {
                program: Arc::new(Program { device, n }),
                binary: vec![n as u8],
                uncacheable: None,
            })
        }
    }

    fn compile(
        life: &Life,
        options: &[String],
        n: usize,
    ) -> Result<Compiled<Program>, BackendError> {
        let kernels = kernels();
        let job = job(&kernels, options);
        life.compile(&job, &concatenate(&job), build(n))
    }

    #[test]
    fn a_group_compiles_once_per_device_group_and_option_order() {
        let hooks = Hooks::new();
        let (life, _device) = life(&hooks);
        let options = ["-DX=1".to_string(), "-UX".to_string()];
        let a = compile(&life, &options, 1).unwrap();
        let again = compile(&life, &options, 2).unwrap();
        assert!(Arc::ptr_eq(&a.program, &again.program));
        assert_eq!(again.binary, [1], "the bytes come with the cached program");
        let swapped = [options[1].clone(), options[0].clone()];
        let b = compile(&life, &swapped, 3).unwrap();
        assert_eq!(b.program.n, 3, "option order is part of the key");
        assert_eq!(life.kernels().cache().device_len(3), 2);

        let loaded = life.load(b"bytes", |d| Ok(Arc::new(Program { device: d, n: 4 })));
        let reloaded = life.load(b"bytes", |_| panic!("loaded twice"));
        assert!(Arc::ptr_eq(&loaded.unwrap(), &reloaded.unwrap()));
        let other = life.load(b"other", |d| Ok(Arc::new(Program { device: d, n: 5 })));
        assert_eq!(other.unwrap().n, 5);
        assert_ne!(
            compile_key(0, &job(&kernels(), &[]), "s"),
            compile_key(1, &job(&kernels(), &[]), "s")
        );
        assert_ne!(load_key(0, b"x"), load_key(1, b"x"));
    }

    #[test]
    fn a_clear_notifies_twice_and_empties_the_cache() {
        let hooks = Hooks::new();
        let (life, _device) = life(&hooks);
        let clears = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = Arc::clone(&clears);
        let _l = hooks.on_clear_all(move || {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
        let kept = compile(&life, &[], 1).unwrap();
        life.clear().unwrap();
        assert_eq!(clears.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(life.kernels().cache().is_empty());
        assert_eq!(
            compile(&life, &[], 2).unwrap().program.n,
            2,
            "compiled again"
        );
        assert_eq!(kept.program.n, 1, "what was handed out stays");
    }

    #[test]
    fn a_destroy_notifies_while_the_device_is_held_then_lets_it_go() {
        let hooks = Hooks::new();
        let (life, device) = life(&hooks);
        let life = Arc::new(life);
        let handed_out = compile(&life, &[], 1).unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let _l = {
            let (seen, life) = (Arc::clone(&seen), Arc::downgrade(&life));
            hooks.on_device_destroy(move |family, index| {
                let held = life.upgrade().is_some_and(|l| l.current().is_some());
                seen.lock().unwrap().push((family.to_string(), index, held));
                Ok(())
            })
        };
        life.destroy_device().unwrap();
        assert_eq!(*seen.lock().unwrap(), [("fake".to_string(), 3, true)]);
        assert!(life.current().is_none());
        assert!(life.kernels().cache().is_empty());
        let err = compile(&life, &[], 2).unwrap_err();
        assert!(matches!(err, BackendError::Unavailable { .. }), "{err:?}");
        let err = life
            .load(b"x", |_| panic!("built after a destroy"))
            .unwrap_err();
        assert!(matches!(err, BackendError::Unavailable { .. }), "{err:?}");
        // Only the program handed out (and this test) still hold the device.
        assert_eq!(Arc::strong_count(&device), 2);
        drop(handed_out);
        assert_eq!(Arc::strong_count(&device), 1);
        life.destroy_device().unwrap(); // idempotent
    }

    /// A compile that starts once listeners were told but before the
    /// backend let go of its device (forced here from inside a listener)
    /// builds on the device; the destroy evicts it anyway, so nothing keeps
    /// the device alive in the cache.
    #[test]
    fn a_compile_inside_the_destroy_window_is_not_kept() {
        let hooks = Hooks::new();
        let (life, device) = life(&hooks);
        let life = Arc::new(life);
        let built = Arc::new(std::sync::Mutex::new(None));
        let _l = {
            let (built, life) = (Arc::clone(&built), Arc::downgrade(&life));
            hooks.on_device_destroy(move |_, _| {
                if let Some(life) = life.upgrade() {
                    *built.lock().unwrap() = Some(compile(&life, &[], 7).unwrap());
                }
                Ok(())
            })
        };
        life.destroy_device().unwrap();
        let built = built.lock().unwrap().take().expect("the listener compiled");
        assert!(built.program.device.is_some(), "built on the held device");
        assert!(life.kernels().cache().is_empty(), "not kept");
        drop(built);
        assert_eq!(Arc::strong_count(&device), 1);
    }

    /// A build that read the device before the destroy is rejected at its
    /// re-check (the destroy bumped the device's epoch) and reported as an
    /// invalidation; the value it built is dropped.
    #[test]
    fn a_build_spanning_a_destroy_is_rejected() {
        let hooks = Hooks::new();
        let (life, device) = life(&hooks);
        let kernels = kernels();
        let job = job(&kernels, &[]);
        let err = life
            .compile(&job, &concatenate(&job), |d| {
                life.destroy_device().unwrap();
                build(1)(d)
            })
            .unwrap_err();
        assert!(matches!(err, BackendError::Invalidated { .. }), "{err:?}");
        assert!(life.kernels().cache().is_empty());
        assert_eq!(Arc::strong_count(&device), 1);
    }

    #[test]
    fn a_failing_listener_does_not_stop_the_teardown() {
        let hooks = Hooks::new();
        let (life, device) = life(&hooks);
        compile(&life, &[], 1).unwrap();
        let _l = hooks.on_device_destroy(|_, _| Err(HookError::listener("refused")));
        let err = life.destroy_device().unwrap_err();
        assert!(
            matches!(
                &err,
                BackendError::Teardown {
                    backend: "fake",
                    source: GuardedError::Listener(_)
                }
            ),
            "{err:?}"
        );
        assert!(life.current().is_none(), "torn down anyway");
        assert!(life.kernels().cache().is_empty());
        assert_eq!(Arc::strong_count(&device), 1);

        let _c = hooks.on_clear_all(|| Err(HookError::listener("refused")));
        let err = life.clear().unwrap_err();
        assert!(matches!(err, BackendError::Teardown { .. }), "{err:?}");
    }

    #[test]
    fn a_foreign_or_other_device_notification_evicts_nothing() {
        let hooks = Hooks::new();
        let (life, _device) = life(&hooks);
        compile(&life, &[], 1).unwrap();
        for (family, index) in [("other", 3), ("fakex", 3), ("fake", 0), ("fake/", 3)] {
            hooks.notify_device_destroy(family, index).unwrap();
            assert_eq!(life.kernels().cache().len(), 1, "({family}, {index})");
        }
        hooks.notify_device_destroy("fake/variant", 3).unwrap();
        assert!(life.kernels().cache().is_empty());
        assert!(
            life.current().is_some(),
            "a notification alone releases nothing"
        );
    }
}
