//! `kcache compile` on a full disk and on a read-only filesystem (real ones:
//! a small tmpfs, remounted read-only): at most one warning, exit 0. Needs
//! `mount` (root); skipped where it is refused.

mod cli_support;
use cli_support::compile_command;
use cli_support::have_cc;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tmpfs of `size` mounted for the test's lifetime.
struct Tmpfs {
    _t: tempfile::TempDir,
    at: PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let t = tempfile::tempdir().unwrap();
        let at = t.path().join("m");
        fs::create_dir(&at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&at)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(Tmpfs { _t: t, at })
    }

    fn remount_read_only(&self) {
        let out = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.at)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Fills the filesystem until it refuses another byte.
    fn fill(&self) {
        let mut f = fs::File::create(self.at.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).output();
    }
}

fn kernel(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(format!("{name}.c"));
    fs::write(
        &p,
        format!("void {name}(float* n1_x, int n) {{ for (int i1 = 0; i1 < n; i1++) n1_x[i1] *= 2.0f; }}\n"),
    )
    .unwrap();
    p
}

fn compile(root: &Path, kind: &str, file: &Path) -> Output {
    compile_command(root, kind, file).output().unwrap()
}

fn warnings(out: &Output) -> usize {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("WARN"))
        .count()
}

fn outcome(out: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["kernels"][0]["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn check(out: &Output, what: &str, expect_warnings: std::ops::RangeInclusive<usize>) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{what}: {err}");
    assert!(expect_warnings.contains(&warnings(out)), "{what}: {err}");
}

#[test]
fn a_full_disk_is_one_warning_and_the_compile_exits_0() {
    if !have_cc() {
        return;
    }
    for kind in ["file", "sqlite"] {
        let Some(fs_) = Tmpfs::mount("256k") else {
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let root = fs_.at.join("store");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
        fs_.fill();
        let out = compile(&root, kind, &kernel(t.path(), "a"));
        check(&out, &format!("{kind}: full disk"), 1..=1);
        assert_eq!(outcome(&out), "compiled");
    }
}

#[test]
fn a_read_only_store_serves_what_it_has_and_a_compile_exits_0() {
    if !have_cc() {
        return;
    }
    for kind in ["file", "sqlite"] {
        let Some(fs_) = Tmpfs::mount("8m") else {
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let root = fs_.at.join("store");
        let a = kernel(t.path(), "a");
        check(&compile(&root, kind, &a), &format!("{kind}: fill"), 0..=0);
        fs_.remount_read_only();
        // What is stored may still be served; a store that cannot even be
        // read is one warning.
        let again = compile(&root, kind, &a);
        check(&again, &format!("{kind}: read-only hit"), 0..=1);
        let b = compile(&root, kind, &kernel(t.path(), "b"));
        check(&b, &format!("{kind}: read-only miss"), 1..=1);
        assert_eq!(outcome(&b), "compiled");
        if kind == "file" {
            assert_eq!(outcome(&again), "stored", "{kind}");
        }
    }
}

#[test]
fn a_read_only_fresh_directory_is_one_warning_and_the_compile_exits_0() {
    if !have_cc() {
        return;
    }
    for kind in ["file", "sqlite"] {
        let Some(fs_) = Tmpfs::mount("1m") else {
            return;
        };
        let t = tempfile::tempdir().unwrap();
        let fresh = fs_.at.join("fresh");
        fs::create_dir(&fresh).unwrap();
        fs::set_permissions(&fresh, fs::Permissions::from_mode(0o700)).unwrap();
        fs_.remount_read_only();
        for root in [fresh.clone(), fresh.join("below")] {
            let out = compile(&root, kind, &kernel(t.path(), "a"));
            check(&out, &format!("{kind}: {}", root.display()), 1..=1);
            assert_eq!(outcome(&out), "compiled");
        }
    }
}
