//! A spinner for work that takes a while: shown on stderr only when it is a
//! terminal, and only once the work has gone on for a second, so quick runs
//! and logs stay clean.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long work runs before the spinner appears.
const DELAY: Duration = Duration::from_secs(1);

/// A spinner that appears after [`DELAY`] and goes when dropped.
pub struct Spinner {
    done: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts timing `message`'s work; `shown: false` (e.g. with `--json`)
    /// never draws.
    pub fn after_a_second(message: String, shown: bool) -> Spinner {
        if !shown || !std::io::stderr().is_terminal() {
            return Spinner {
                done: None,
                thread: None,
            };
        }
        let (done, wait) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if wait.recv_timeout(DELAY) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(message);
            bar.enable_steady_tick(Duration::from_millis(100));
            // Until the work is done (the sender is dropped).
            let _ = wait.recv();
            bar.finish_and_clear();
        });
        Spinner {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
