//! A C compiler wrapper that forces the interleavings of racing `kcache`
//! processes, shared by the single-flight tests (one machine, and machines
//! sharing Redis): every compile of a batch is logged, and with `block` the
//! first one says so on the FIFO `started` and then waits for a line on the
//! FIFO `gate`. A process waiting for a lease is known by its debug line.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread::JoinHandle;

/// What a `kcache` process logs at debug level while it waits for a lease.
pub const WAITING: &str = "waiting for another process's compile lease";

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A scratch directory with kernels, the compiler wrapper `cc.sh`, its log
/// and FIFOs.
pub struct Gated {
    dir: tempfile::TempDir,
    pub kernels: Vec<PathBuf>,
}

impl Gated {
    /// `n` kernels whose bodies add `constant`; with `block`, the first
    /// compile (only) blocks on the gate.
    pub fn new(n: usize, constant: &str, block: bool) -> Gated {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let kernels = (0..n)
            .map(|i| {
                let p = d.join(format!("k{i}.c"));
                fs::write(
                    &p,
                    format!(
                        "void k{i}(float* x, int n) {{ for (int j = 0; j < n; j++) x[j] = x[j] * {i}.0f + {constant}; }}\n"
                    ),
                )
                .unwrap();
                p
            })
            .collect();
        let block = if block {
            format!(
                "if mkdir {d}/first 2>/dev/null; then echo started > {d}/started; read x < {d}/gate; fi",
                d = d.display()
            )
        } else {
            String::new()
        };
        let script = format!(
            "#!/bin/sh\ncase \"$*\" in *kernels.so*) echo $$ >> {d}/compiles; {block};; esac\nexec cc \"$@\"\n",
            d = d.display()
        );
        let cc = d.join("cc.sh");
        fs::write(&cc, script).unwrap();
        fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();
        mkfifo(&d.join("started"));
        mkfifo(&d.join("gate"));
        Gated { dir, kernels }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Blocks until the first compile is under way (and blocked on the gate).
    pub fn await_started(&self) {
        let mut line = String::new();
        File::open(self.path("started"))
            .unwrap()
            .read_to_string(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "started");
    }

    pub fn open_gate(&self) {
        // Non-blocking: after a SIGKILL the wrapper may still be reading, or
        // gone; either way the test goes on.
        if let Ok(mut f) = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.path("gate"))
        {
            let _ = writeln!(f, "go");
        }
    }

    /// The compiles the wrapper logged.
    pub fn compiles(&self) -> usize {
        fs::read_to_string(self.path("compiles"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

/// A running `kcache compile --json`: its stderr read on a thread.
pub struct Running {
    pub child: Child,
    pub stderr: JoinHandle<String>,
}

impl Running {
    /// Starts reading stderr; with `until_waiting`, returns only once the
    /// process has said it waits for a lease.
    pub fn new(mut child: Child, until_waiting: bool) -> Running {
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        if until_waiting {
            loop {
                let mut line = String::new();
                let n = err.read_line(&mut line).unwrap();
                assert!(n > 0, "exited without waiting for a lease:\n{seen}");
                seen.push_str(&line);
                if line.contains(WAITING) {
                    break;
                }
            }
        }
        let stderr = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
            seen + &rest
        });
        Running { child, stderr }
    }

    /// Its JSON report and stderr, after checking it exited 0 with `kernels`
    /// kernels answered.
    pub fn report(self, kernels: usize) -> (serde_json::Value, String) {
        let out = self.child.wait_with_output().unwrap();
        let stderr = self.stderr.join().unwrap();
        assert!(out.status.success(), "kcache failed: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["kernels"].as_array().unwrap().len(), kernels, "{v}");
        (v, stderr)
    }
}
