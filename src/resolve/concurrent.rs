//! A split batch's programs, compiled at once.

use super::{Kernel, ResolveError, Resolver, Threads};
use crate::backend::{Backend, Compiled};

impl<B: Backend + 'static> Resolver<B> {
    /// Compiles every program at once: the first on this thread, the others
    /// on rayon or OS threads; all are joined before this returns.
    pub(super) fn compile_all(
        &self,
        batch: &[Kernel],
        programs: &[Vec<usize>],
        uncacheable: &[bool],
    ) -> Vec<Result<Compiled<B::Program>, ResolveError>> {
        let n = programs.len();
        let compile = |p: usize| -> Result<Compiled<B::Program>, ResolveError> {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let fresh = programs[p].iter().any(|&i| uncacheable[i]);
                self.compile_one(batch, &programs[p], p, n, fresh)
            }))
            .unwrap_or_else(|panic| {
                Err(ResolveError::Panicked {
                    program: p,
                    message: panic_message(&*panic),
                })
            })
        };
        let mut results: Vec<Option<Result<Compiled<B::Program>, ResolveError>>> =
            (0..n).map(|_| None).collect();
        let (first, rest) = results.split_first_mut().expect("at least one program");
        match self.threads {
            Threads::Rayon => rayon::in_place_scope(|s| {
                for (p, slot) in rest.iter_mut().enumerate() {
                    let compile = &compile;
                    s.spawn(move |_| *slot = Some(compile(p + 1)));
                }
                *first = Some(compile(0));
            }),
            Threads::Os => std::thread::scope(|s| {
                for (p, slot) in rest.iter_mut().enumerate() {
                    let compile = &compile;
                    s.spawn(move || *slot = Some(compile(p + 1)));
                }
                *first = Some(compile(0));
            }),
        }
        results
            .into_iter()
            .map(|r| r.expect("every compile was joined"))
            .collect()
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
