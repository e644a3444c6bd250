//! Logging to stderr, filtered by `KCACHE_LOG` (default: warnings).
//!
//! Without `KCACHE_LOG` the subscriber is built on the first warning, not at
//! start: a command that warns about nothing (a warm hit) never builds
//! tracing-subscriber's span registry and formatter, which cost a short
//! command about 70,000 instructions and the pages they touch. What is
//! printed is unchanged: the same subscriber formats every event.

use std::any::TypeId;
use std::sync::OnceLock;

use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::util::SubscriberInitExt as _;

/// Installs the global subscriber (and the `log` bridge, at its level).
pub(super) fn init() {
    match std::env::var_os("KCACHE_LOG") {
        None => {
            let _ = Deferred::default().try_init();
        }
        Some(_) => {
            let _ = tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_ansi(super::colour())
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_env("KCACHE_LOG")
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
                )
                .try_init();
        }
    }
}

/// The level without `KCACHE_LOG`.
const LEVEL: Level = Level::WARN;

/// The warnings-only subscriber, built when an event first passes [`LEVEL`].
/// Everything at or above it goes to that one subscriber (spans included,
/// so their ids stay its own); nothing below it is enabled, as the
/// subscriber's own level filter would say. `Span::current()` is not
/// answered (the CLI opens no spans); the formatter finds an event's spans
/// through its own registry.
#[derive(Default)]
struct Deferred(OnceLock<Box<dyn Subscriber + Send + Sync>>);

impl Deferred {
    fn inner(&self) -> &(dyn Subscriber + Send + Sync) {
        &**self.0.get_or_init(|| {
            Box::new(
                tracing_subscriber::fmt()
                    .with_writer(std::io::stderr)
                    .with_ansi(super::colour())
                    .with_max_level(LEVEL)
                    .finish(),
            )
        })
    }
}

impl Subscriber for Deferred {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if *metadata.level() <= LEVEL {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= LEVEL
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(LEVEL))
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.inner().new_span(span)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.inner().record(span, values)
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.inner().record_follows_from(span, follows)
    }

    fn event_enabled(&self, event: &Event<'_>) -> bool {
        self.inner().event_enabled(event)
    }

    fn event(&self, event: &Event<'_>) {
        self.inner().event(event)
    }

    fn enter(&self, span: &Id) {
        self.inner().enter(span)
    }

    fn exit(&self, span: &Id) {
        self.inner().exit(span)
    }

    fn clone_span(&self, id: &Id) -> Id {
        self.inner().clone_span(id)
    }

    fn try_close(&self, id: Id) -> bool {
        self.inner().try_close(id)
    }

    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            return Some(self as *const Self as *const ());
        }
        // Nothing is built yet: none of its types exist to be found.
        let inner = self.0.get()?;
        // SAFETY: forwarded as is; the inner subscriber answers for its own
        // types, and lives as long as `self`.
        unsafe { inner.downcast_raw(id) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_built_until_an_event_passes_the_level() {
        let d = tracing::Dispatch::new(Deferred::default());
        tracing::dispatcher::with_default(&d, || {
            tracing::info!("below the level");
            tracing::debug!("below the level");
        });
        let deferred = d.downcast_ref::<Deferred>().unwrap();
        assert!(deferred.0.get().is_none());
        tracing::dispatcher::with_default(&d, || tracing::warn!("kept"));
        assert!(deferred.0.get().is_some());
    }
}
