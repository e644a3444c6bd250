//! Ways to change a header behind an armed validation's back, each made for
//! real on a tempdir and drained through real inotify: every one must end
//! the validation's trust (or, where noted, is one the kernel reports by
//! construction, kept so a regression shows).

use super::*;
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

fn watcher() -> Watcher<inotify::Inotify> {
    Watcher::new(inotify::Inotify::new().expect("inotify on Linux"))
}

fn c(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Arms `paths` on `w`, checks they are trusted, applies `change`, and says
/// whether the next drain still trusts them (no sleep: the kernel queues a
/// report before the call that caused it returns).
fn trusted_after_on(
    w: &mut Watcher<inotify::Inotify>,
    paths: &[&Path],
    change: impl FnOnce(),
) -> bool {
    let armed = w.arm(paths.iter().copied());
    assert!(armed.poll.is_empty(), "a tempdir is on a local filesystem");
    w.drain();
    assert!(armed.holds(), "nothing changed yet");
    change();
    w.drain();
    armed.holds()
}

fn trusted_after(path: &Path, change: impl FnOnce()) -> bool {
    trusted_after_on(&mut watcher(), &[path], change)
}

#[test]
fn a_header_written_through_a_hard_link_elsewhere_is_reported() {
    let (dir, _inc, h) = tree();
    let other = dir.path().join("elsewhere");
    fs::create_dir(&other).unwrap();
    let alias = other.join("alias.h");
    fs::hard_link(&h, &alias).unwrap();
    // The watch is on the inode: no name on the header's path is touched.
    assert!(!trusted_after(&h, || fs::write(&alias, "#define V 2\n").unwrap()));
    // Only the link count changes: its attributes.
    assert!(!trusted_after(&h, || fs::remove_file(&alias).unwrap()));
}

#[test]
fn a_header_truncated_is_reported_even_to_its_own_size() {
    let (_dir, _inc, h) = tree();
    let len = fs::metadata(&h).unwrap().len();
    let open = || File::options().write(true).open(&h).unwrap();
    // The writer keeps it open: no close-after-write report helps.
    let f = open();
    assert!(!trusted_after(&h, || f.set_len(3).unwrap()));
    let f = open();
    assert!(!trusted_after(&h, || f.set_len(len).unwrap()));
    drop(f);
}

#[test]
fn bytes_changed_by_fallocate_copy_file_range_splice_or_sendfile_are_reported() {
    let (dir, _inc, h) = tree();
    let len = fs::metadata(&h).unwrap().len() as i64;
    let src = dir.path().join("src");
    fs::write(&src, "#define V 9\n").unwrap();
    // Each writer stays open across the drain, so only the write's own
    // report can end the trust.
    let f = File::options().write(true).open(&h).unwrap();
    assert!(!trusted_after(&h, || {
        // Zeroes bytes in place: size unchanged.
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: `f` is open for writing; no pointer is passed.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, 0, len) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    }));
    let f = File::options().write(true).open(&h).unwrap();
    let s = File::open(&src).unwrap();
    assert!(!trusted_after(&h, || {
        let (mut a, mut b) = (0i64, 0i64);
        // SAFETY: both descriptors are open; the offsets are valid for the
        // call.
        let n =
            unsafe { libc::copy_file_range(s.as_raw_fd(), &mut a, f.as_raw_fd(), &mut b, 12, 0) };
        assert_eq!(n, 12, "{}", std::io::Error::last_os_error());
    }));
    let f = File::options().write(true).open(&h).unwrap();
    assert!(!trusted_after(&h, || {
        let mut p = [0; 2];
        // SAFETY: `p` is valid for two descriptors.
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        // SAFETY: `p[1]` is the pipe's write end, `b` valid for 12 bytes.
        let b = b"#define V 7\n";
        assert_eq!(unsafe { libc::write(p[1], b.as_ptr().cast(), 12) }, 12);
        let mut off = 0i64;
        // SAFETY: `p[0]` and `f` are open; `off` is valid for the call.
        let n = unsafe { libc::splice(p[0], std::ptr::null_mut(), f.as_raw_fd(), &mut off, 12, 0) };
        assert_eq!(n, 12, "{}", std::io::Error::last_os_error());
        // SAFETY: both ends are ours and closed once.
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }));
    let f = File::options().write(true).open(&h).unwrap();
    assert!(!trusted_after(&h, || {
        let mut off = 0i64;
        // SAFETY: both descriptors are open; `off` is valid for the call.
        let n = unsafe { libc::sendfile(f.as_raw_fd(), s.as_raw_fd(), &mut off, 12) };
        assert_eq!(n, 12, "{}", std::io::Error::last_os_error());
    }));
    drop(f);
}

#[test]
fn a_rewrite_to_the_same_size_with_its_times_restored_is_reported() {
    let (_dir, _inc, h) = tree();
    let before = fs::metadata(&h).unwrap();
    let mut keep = None;
    assert!(!trusted_after(&h, || {
        let mut f = File::create(&h).unwrap(); // O_TRUNC
        f.write_all(b"#define V 2\n").unwrap();
        let times = fs::FileTimes::new()
            .set_accessed(before.accessed().unwrap())
            .set_modified(before.modified().unwrap());
        f.set_times(times).unwrap();
        // Still open: the report is the truncation's or the write's.
        keep = Some(f);
    }));
    let after = fs::metadata(&h).unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    drop(keep);
}

/// `renameat2(a, b, RENAME_EXCHANGE)`.
fn exchange(a: &Path, b: &Path) {
    let (a, b) = (c(a), c(b));
    // SAFETY: both paths are NUL-terminated and alive for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
}

#[test]
fn a_header_or_a_directory_on_its_path_exchanged_with_a_sibling_is_reported() {
    let (dir, inc, h) = tree();
    let sib = inc.join("sibling.h");
    fs::write(&sib, "#define V 2\n").unwrap();
    assert!(!trusted_after(&h, || exchange(&h, &sib)));
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("h.h"), "#define V 3\n").unwrap();
    assert!(!trusted_after(&h, || exchange(&inc, &other)));
    // A directory the validation holds itself, exchanged.
    assert!(!trusted_after(&inc, || exchange(&inc, &other)));
}

#[test]
fn a_symlink_replaced_in_place_by_unlink_and_symlink_is_reported() {
    let (dir, _inc, _h) = tree();
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("h.h"), "#define V 2\n").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("inc", &link).unwrap();
    assert!(!trusted_after(&link.join("h.h"), || {
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("other", &link).unwrap();
    }));
}

#[test]
fn a_relative_symlink_is_resolved_from_its_own_directory_not_the_path() {
    // d/s -> deep/dir, d/deep/dir/up -> ../h.h: the kernel resolves `..`
    // from where the link lives, so `d/s/up` is `d/deep/h.h`, and so is
    // `d/s/../h.h` (`..` after a symlink is the target's parent).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("deep/dir")).unwrap();
    fs::write(d.join("deep/h.h"), "#define V 1\n").unwrap();
    fs::write(d.join("h.h"), "#define V 0\n").unwrap();
    std::os::unix::fs::symlink("deep/dir", d.join("s")).unwrap();
    std::os::unix::fs::symlink("../h.h", d.join("deep/dir/up")).unwrap();
    for path in [d.join("s/up"), d.join("s/../h.h")] {
        assert_eq!(
            fs::read(&path).unwrap(),
            fs::read(d.join("deep/h.h")).unwrap()
        );
        assert!(!trusted_after(&path, || {
            fs::write(d.join("deep/h.h"), "#define V 2\n").unwrap()
        }));
        // The lexical reading's file is not what the path rests on.
        assert!(trusted_after(&path, || fs::write(d.join("h.h"), "x").unwrap()));
        // The directory holding the link moved away and another put there:
        // the same names now mean something else.
        assert!(!trusted_after(&path, || {
            fs::rename(d.join("deep"), d.join("deep.old")).unwrap();
            fs::create_dir_all(d.join("deep/dir")).unwrap();
            fs::write(d.join("deep/h.h"), "#define V 3\n").unwrap();
            std::os::unix::fs::symlink("../h.h", d.join("deep/dir/up")).unwrap();
        }));
        fs::remove_dir_all(d.join("deep.old")).unwrap();
    }
}

#[test]
fn a_header_created_where_a_lookup_missed_is_reported() {
    let (dir, inc, h) = tree();
    let missing = inc.join("early.h");
    let deeper = dir.path().join("a").join("b").join("x.h");
    // Created by a write, a hard link, a rename into place, a symlink.
    assert!(!trusted_after(&missing, || fs::write(&missing, "").unwrap()));
    fs::remove_file(&missing).unwrap();
    assert!(!trusted_after(&missing, || fs::hard_link(&h, &missing).unwrap()));
    fs::remove_file(&missing).unwrap();
    let staged = dir.path().join("staged.h");
    fs::write(&staged, "").unwrap();
    assert!(!trusted_after(&missing, || fs::rename(&staged, &missing).unwrap()));
    fs::remove_file(&missing).unwrap();
    assert!(!trusted_after(&missing, || {
        std::os::unix::fs::symlink("h.h", &missing).unwrap()
    }));
    // Two directories short: the first one made is reported.
    assert!(!trusted_after(&deeper, || {
        fs::create_dir_all(deeper.parent().unwrap()).unwrap()
    }));
    // A search directory held itself: any entry made in it.
    assert!(!trusted_after(&inc, || fs::create_dir(inc.join("sub")).unwrap()));
}

#[test]
fn a_deleted_headers_watch_number_is_not_reused_for_another_file() {
    // The kernel hands out watch numbers cyclically: a number freed by a
    // dropped watch is not given to the next one, so a late report for the
    // old file never lands on a new file's interest (and if it did, it
    // would only end trust: the safe direction).
    let (_dir, inc, h) = tree();
    let mut w = watcher();
    let first = w.arm([h.as_path()].into_iter());
    let old = w.feed.watch(&h).unwrap();
    fs::remove_file(&h).unwrap();
    w.drain();
    assert!(!first.holds());
    fs::write(&h, "#define V 2\n").unwrap();
    // Its creation reported on the directory, before the new arm: a report
    // queued before an arm may still end it (the safe direction).
    w.drain();
    let new = w.feed.watch(&h).unwrap();
    assert_ne!(old, new);
    let second = w.arm([h.as_path()].into_iter());
    w.drain();
    assert!(second.holds());
    fs::write(inc.join("h.h"), "#define V 3\n").unwrap();
    w.drain();
    assert!(!second.holds());
}

#[test]
fn a_watch_shared_by_two_validations_still_reports_after_one_is_dropped() {
    let (_dir, _inc, h) = tree();
    let mut w = watcher();
    let a = w.arm([h.as_path()].into_iter());
    let b = w.arm([h.as_path()].into_iter());
    w.drain();
    drop(a);
    // Re-arming more than the pruning threshold over the same watch.
    let many: Vec<_> = (0..20).map(|_| w.arm([h.as_path()].into_iter())).collect();
    drop(many);
    w.drain();
    assert!(b.holds());
    fs::write(&h, "#define V 2\n").unwrap();
    w.drain();
    assert!(!b.holds());
}

#[test]
fn more_reports_than_one_read_holds_are_all_applied() {
    // Long names, many reports on other entries of the header's directory:
    // more than the 64 KiB one read takes, and the header's own report last.
    let (_dir, inc, h) = tree();
    let mut w = watcher();
    let armed = w.arm([h.as_path()].into_iter());
    w.drain();
    let long = "n".repeat(250);
    for i in 0..400 {
        fs::write(inc.join(format!("{long}{i}")), "").unwrap();
    }
    fs::write(&h, "#define V 2\n").unwrap();
    w.drain();
    assert!(!armed.holds());
    // And reports on other names only, as many, leave it trusted.
    let armed = w.arm([h.as_path()].into_iter());
    w.drain();
    for i in 0..400 {
        fs::remove_file(inc.join(format!("{long}{i}"))).unwrap();
    }
    w.drain();
    assert!(armed.holds());
}

#[test]
fn an_overflowed_queue_ends_every_trust() {
    let (_dir, inc, h) = tree();
    let max: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let mut w = watcher();
    let armed = w.arm([h.as_path()].into_iter());
    w.drain();
    // Reports on two other names, alternating so none merges with the one
    // before; none of them touches the header.
    let (a, b) = (inc.join("a"), inc.join("b"));
    fs::write(&a, "").unwrap();
    fs::write(&b, "").unwrap();
    let (fa, fb) = (File::open(&a).unwrap(), File::open(&b).unwrap());
    let now = std::time::SystemTime::now();
    for _ in 0..max / 2 + 8 {
        fa.set_modified(now).unwrap();
        fb.set_modified(now).unwrap();
    }
    w.drain();
    assert!(!armed.holds(), "lost reports: nothing is trusted");
}

/// Runs `f` on a thread in a mount namespace of its own whose mounts do
/// not propagate back; `false` (skipped) where this process may not make
/// one (no `CAP_SYS_ADMIN`).
fn in_own_mount_namespace(f: impl FnOnce() + Send) -> bool {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: no pointer is passed; only this thread's namespace
            // changes (a thread may unshare its own).
            if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                eprintln!("skipping: {}", std::io::Error::last_os_error());
                return false;
            }
            let root = c(Path::new("/"));
            // SAFETY: `root` is NUL-terminated; the other pointers may be
            // null for a propagation change.
            let r = unsafe {
                libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            };
            assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
            f();
            true
        })
        .join()
        .unwrap()
    })
}

fn bind(from: &Path, to: &Path) {
    let (from, to) = (c(from), c(to));
    // SAFETY: both paths are NUL-terminated and alive for the call.
    let r = unsafe {
        libc::mount(
            from.as_ptr(),
            to.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
}

fn unmount(at: &Path) {
    let at = c(at);
    // SAFETY: `at` is NUL-terminated and alive for the call.
    assert_eq!(unsafe { libc::umount2(at.as_ptr(), 0) }, 0);
}

#[test]
fn a_bind_mount_over_a_directory_or_the_header_on_its_path_is_reported() {
    let (dir, inc, h) = tree();
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("h.h"), "#define V 2\n").unwrap();
    in_own_mount_namespace(|| {
        assert!(!trusted_after(&h, || bind(&other, &inc)));
        assert_eq!(fs::read(&h).unwrap(), b"#define V 2\n");
        unmount(&inc);
        assert!(!trusted_after(&h, || bind(&other.join("h.h"), &h)));
        unmount(&h);
        // And the unmount itself.
        bind(&other, &inc);
        assert!(!trusted_after(&h, || unmount(&inc)));
    });
}

#[test]
fn a_thread_in_another_mount_namespace_does_not_use_the_process_watcher() {
    // The process's watcher polls the mount table of the namespace it was
    // made in: a thread resolving paths in another one must not trust it.
    assert!(global().is_some(), "made on this thread");
    let (_dir, _inc, h) = tree();
    in_own_mount_namespace(|| {
        assert!(!super::super::drain());
        assert!(super::super::arm([h.as_path()].into_iter()).is_none());
    });
    assert!(super::super::arm([h.as_path()].into_iter()).is_some());
}

#[test]
fn a_missing_name_is_ended_by_any_entry_made_beside_it() {
    // In a case-folding directory `SUB` makes `sub` resolve: a missing name
    // has no object to watch, so any entry of its directory ends the trust.
    let (_dir, inc, _h) = tree();
    let missing = inc.join("sub").join("x.h");
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([missing.as_path()].into_iter());
    assert!(armed.poll.is_empty());
    w.report(&inc, Change::Child("h.h".into()));
    assert!(armed.holds(), "a file beside it written: nothing made");
    w.report(&inc, name("SUB"));
    assert!(!armed.holds());
}

#[test]
fn a_re_arm_after_a_report_stats_afresh_not_from_the_batchs_shared_stats() {
    // A report that changed nothing (closed after opening for writing)
    // ends the trust; in the next batch another validation stats the
    // header (shared for the batch), the header changes, and only then is
    // the first re-armed: its new watch came after the change (and the
    // change's reports were read by another thread), so only a fresh stat
    // sees it.
    use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
    use crate::backend::cc::includes::memo::{self, StatId, Validation};
    ALL_OLD.with(|o| o.set(true));
    let (_dir, _inc, h) = tree();
    let over = || Validation::new(vec![(h.clone(), StatId::of(&h))], memo::now());
    let (v, other) = (over(), over());
    // Re-validated once, armed the second time, then trusted on its flag.
    for _ in 0..3 {
        assert!(memo::batch(|| v.holds()));
    }
    drop(File::options().write(true).open(&h).unwrap());
    memo::batch(|| {
        assert!(other.holds());
        fs::write(&h, "#define V 22\n").unwrap();
        // Another thread's batch drains the change's reports before the
        // re-arm registers anything: only its stat can see the change.
        std::thread::spawn(|| memo::batch(|| ())).join().unwrap();
        // Either answer keeps a batch's promise (the change came after it
        // began), but the next batch must see it.
        v.holds();
    });
    assert!(!memo::batch(|| v.holds()), "the change is seen");
}

/// The `struct iocb` of linux/aio_abi.h, on a little-endian machine.
#[cfg(target_endian = "little")]
#[repr(C)]
#[derive(Default)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: i32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// A write through Linux AIO (`io_submit`) queues no report of its own
/// (Linux 6.18: the write path fsnotify hooks are the syscalls', which AIO
/// does not go through), so the module docs list it among what no watch
/// sees until the writer closes the file; this guards that the close is
/// reported.
#[cfg(target_endian = "little")]
#[test]
fn a_write_through_linux_aio_is_reported_when_the_writer_closes() {
    let (_dir, _inc, h) = tree();
    let f = File::options().write(true).open(&h).unwrap();
    let bytes = b"#define V 8\n";
    assert!(!trusted_after(&h, move || {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: `ctx` is valid for the write of the context's id.
        assert_eq!(unsafe { libc::syscall(libc::SYS_io_setup, 1, &mut ctx) }, 0);
        let cb = Iocb {
            opcode: 1, // IOCB_CMD_PWRITE
            fildes: f.as_raw_fd() as u32,
            buf: bytes.as_ptr() as u64,
            nbytes: bytes.len() as u64,
            ..Iocb::default()
        };
        let mut list = [&cb as *const Iocb];
        // SAFETY: `list` holds one valid iocb whose buffer outlives the
        // wait below.
        let n = unsafe { libc::syscall(libc::SYS_io_submit, ctx, 1, list.as_mut_ptr()) };
        assert_eq!(n, 1, "{}", std::io::Error::last_os_error());
        let mut events = [0u64; 4]; // one struct io_event
                                    // SAFETY: `events` is valid for one event; no timeout.
        let n = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                ctx,
                1,
                1,
                events.as_mut_ptr(),
                std::ptr::null::<libc::timespec>(),
            )
        };
        assert_eq!(n, 1);
        assert_eq!(events[2], bytes.len() as u64, "written");
        // SAFETY: `ctx` is ours, destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
        drop(f);
    }));
}

/// Mounts an overlay at `at`; `false` (skipped) where the kernel has none.
fn mount_overlay(lower: &Path, upper: &Path, work: &Path, at: &Path) -> bool {
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    let (kind, at, opts) = (c(Path::new("overlay")), c(at), CString::new(opts).unwrap());
    // SAFETY: every pointer is a NUL-terminated string alive for the call.
    let r = unsafe {
        libc::mount(
            kind.as_ptr(),
            at.as_ptr(),
            kind.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    let e = std::io::Error::last_os_error();
    if r != 0 && e.raw_os_error() == Some(libc::ENODEV) {
        eprintln!("skipping: no overlayfs");
        return false;
    }
    assert_eq!(r, 0, "{e}");
    true
}

#[test]
fn a_header_on_an_overlay_written_and_copied_up_is_reported() {
    // A container's root: the header is in the lower layer until the first
    // write copies it up, so the write lands on another inode below.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["lower/inc", "upper", "work", "merged"] {
        fs::create_dir_all(d.join(sub)).unwrap();
    }
    fs::write(d.join("lower/inc/h.h"), "#define V 1\n").unwrap();
    fs::write(d.join("lower/inc/m.h"), "").unwrap();
    let merged = d.join("merged");
    let h = merged.join("inc/h.h");
    in_own_mount_namespace(|| {
        if !mount_overlay(&d.join("lower"), &d.join("upper"), &d.join("work"), &merged) {
            return;
        }
        assert!(!trusted_after(&h, || fs::write(&h, "#define V 2\n").unwrap()));
        assert!(d.join("upper/inc/h.h").exists(), "copied up");
        // Once up, written again; then replaced by rename in the merged view.
        assert!(!trusted_after(&h, || fs::write(&h, "#define V 3\n").unwrap()));
        let new = merged.join("inc/h.h.new");
        fs::write(&new, "#define V 4\n").unwrap();
        assert!(!trusted_after(&h, || fs::rename(&new, &h).unwrap()));
        // A header only in the lower layer, copied up by a change of mode.
        let m = merged.join("inc/m.h");
        assert!(!trusted_after(&m, || {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&m, fs::Permissions::from_mode(0o600)).unwrap()
        }));
        unmount(&merged);
    });
}
