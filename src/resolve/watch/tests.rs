//! The watcher's trust rule on a scripted feed, what real inotify reports
//! for each way a header can change, and a resolver over the C backend that
//! stops stat-ing once its keys are armed and re-derives after a change.

use super::*;
use std::fs;

#[cfg(target_os = "linux")]
mod attacks;
mod batches;
#[cfg(target_os = "linux")]
mod misses;

#[test]
fn only_the_spellings_of_off_in_kcache_watch_turn_notification_off() {
    use std::ffi::OsStr;
    for off in ["0", "off", "OFF", "false", "no", " no "] {
        assert!(!env_allows(Some(OsStr::new(off))), "{off:?}");
    }
    for on in ["1", "on", "yes", "", "0ff", "disable"] {
        assert!(env_allows(Some(OsStr::new(on))), "{on:?}");
    }
    assert!(env_allows(None));
}

/// A feed whose reports the test writes.
#[derive(Default)]
struct Script {
    ids: FxHashMap<PathBuf, i32>,
    queued: Vec<Event>,
    lost: bool,
    /// Paths whose watch is refused.
    refuse: Vec<PathBuf>,
    /// Paths under this one are on a filesystem that does not report all.
    remote: Option<PathBuf>,
}

impl Feed for Script {
    fn watch(&mut self, path: &Path) -> Option<i32> {
        if self.refuse.iter().any(|p| p == path) {
            return None;
        }
        let next = self.ids.len() as i32 + 1;
        Some(*self.ids.entry(path.to_path_buf()).or_insert(next))
    }

    fn reports_all(&mut self, path: &Path, _dev: u64) -> bool {
        !self.remote.as_ref().is_some_and(|r| path.starts_with(r))
    }

    fn drain(&mut self, out: &mut Vec<Event>) -> bool {
        out.append(&mut self.queued);
        !std::mem::take(&mut self.lost)
    }
}

impl Watcher<Script> {
    fn report(&mut self, path: &Path, change: Change) {
        let watch = self.feed.ids[path];
        self.feed.queued.push(Event { watch, change });
        self.drain();
    }
}

/// A tempdir holding `inc/h.h`.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let inc = dir.path().join("inc");
    fs::create_dir(&inc).unwrap();
    let h = inc.join("h.h");
    fs::write(&h, "#define V 1\n").unwrap();
    (dir, inc, h)
}

fn name(n: &str) -> Change {
    Change::Entry(n.into())
}

#[test]
fn a_report_on_a_watched_file_ends_its_trust() {
    let (_dir, _inc, h) = tree();
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([h.as_path()].into_iter());
    assert!(armed.poll.is_empty());
    w.drain();
    assert!(armed.holds(), "nothing reported");
    w.report(&h, Change::Itself);
    assert!(!armed.holds());
}

#[test]
fn every_directory_walked_through_reports_the_entry_walked() {
    let (dir, inc, h) = tree();
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([h.as_path()].into_iter());
    // Another entry of a directory on the way changes nothing the path
    // resolves to.
    w.report(&inc, name("other.h"));
    w.report(&inc, Change::Child("other.h".into()));
    w.report(dir.path(), name("other"));
    assert!(armed.holds());
    // Every ancestor, up to the root, reports its entry on the way.
    for a in h.ancestors().skip(1) {
        let mut w = Watcher::new(Script::default());
        let armed = w.arm([h.as_path()].into_iter());
        let below = h.strip_prefix(a).unwrap().components().next().unwrap();
        w.report(a, name(below.as_os_str().to_str().unwrap()));
        assert!(!armed.holds(), "{}", a.display());
    }
    // A directory on the way renamed away, or its attributes changed.
    w.report(&inc, Change::Itself);
    assert!(!armed.holds());
}

#[test]
fn a_directory_held_itself_reports_any_entry_but_not_a_write_inside() {
    let (_dir, inc, _h) = tree();
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([inc.as_path()].into_iter());
    w.report(&inc, Change::Child("h.h".into()));
    assert!(
        armed.holds(),
        "a file inside written: the directory is as it was"
    );
    w.report(&inc, name("new.h"));
    assert!(!armed.holds(), "an entry created");
}

#[test]
fn lost_reports_and_dropped_watches_end_trust() {
    let (_dir, _inc, h) = tree();
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([h.as_path()].into_iter());
    w.feed.lost = true;
    w.drain();
    assert!(!armed.holds(), "lost");
    let armed = w.arm([h.as_path()].into_iter());
    w.report(&h, Change::Gone);
    assert!(!armed.holds(), "gone");
    // A report on a watch nobody relies on any more changes nothing.
    w.report(&h, Change::Itself);
}

#[test]
fn paths_no_watch_covers_are_polled() {
    let (dir, inc, h) = tree();
    let missing = dir.path().join("nowhere").join("x.h");
    let relative = Path::new("inc/h.h");
    let mut w = Watcher::new(Script {
        refuse: vec![h.clone()],
        ..Script::default()
    });
    let armed = w.arm([h.as_path(), relative, inc.as_path(), &missing].into_iter());
    assert_eq!(armed.poll, vec![0, 1], "refused, relative");
    // An absent path is covered by the directory its creation shows in.
    w.report(dir.path(), name("nowhere"));
    assert!(!armed.holds());
    let mut w = Watcher::new(Script {
        remote: Some(inc.clone()),
        ..Script::default()
    });
    let armed = w.arm([h.as_path(), dir.path()].into_iter());
    assert_eq!(armed.poll, vec![0], "not a local filesystem");
}

#[cfg(unix)]
#[test]
fn a_symlink_is_resolved_and_its_directory_watched() {
    let (dir, inc, h) = tree();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("inc", &link).unwrap();
    let through = link.join("h.h");
    let mut w = Watcher::new(Script::default());
    let armed = w.arm([through.as_path()].into_iter());
    assert!(armed.poll.is_empty());
    assert!(w.feed.ids.contains_key(&h), "the target is watched");
    w.report(&inc, name("other.h"));
    assert!(armed.holds());
    w.report(dir.path(), name("link"));
    assert!(!armed.holds(), "retargeted");
    let armed = w.arm([through.as_path()].into_iter());
    w.report(&h, Change::Itself);
    assert!(!armed.holds(), "the target written");
    // A loop is polled.
    std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
    let looped = dir.path().join("loop").join("x.h");
    assert_eq!(w.arm([looped.as_path()].into_iter()).poll, vec![0]);
}

#[test]
fn re_arming_does_not_grow_the_lists_without_bound() {
    let (_dir, inc, h) = tree();
    let mut w = Watcher::new(Script::default());
    for _ in 0..1000 {
        let armed = w.arm([h.as_path()].into_iter());
        w.report(&h, Change::Itself);
        assert!(!armed.holds());
    }
    let watch = w.feed.ids[&inc];
    let names = &w.interest[&watch].names[std::ffi::OsStr::new("h.h")];
    assert!(names.len() <= 16, "{}", names.len());
}

/// What real inotify reports for each way a header changes.
#[cfg(target_os = "linux")]
mod real {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn watcher() -> Watcher<inotify::Inotify> {
        Watcher::new(inotify::Inotify::new().expect("inotify on Linux"))
    }

    /// Arms `path`, applies `change`, and says whether the next drain still
    /// trusts it (no sleep: the report is queued before `change` returns).
    fn trusted_after(path: &Path, change: impl FnOnce()) -> bool {
        let mut w = watcher();
        let armed = w.arm([path].into_iter());
        assert!(armed.poll.is_empty(), "a tempdir is on a local filesystem");
        w.drain();
        assert!(armed.holds());
        change();
        w.drain();
        armed.holds()
    }

    #[test]
    fn a_header_rewritten_in_place_is_reported() {
        let (_dir, _inc, h) = tree();
        // Same size: only the report tells, within one timestamp tick.
        assert!(!trusted_after(&h, || fs::write(&h, "#define V 2\n").unwrap()));
    }

    #[test]
    fn a_header_replaced_by_rename_is_reported() {
        let (_dir, inc, h) = tree();
        let new = inc.join("h.h.new");
        fs::write(&new, "#define V 2\n").unwrap();
        assert!(!trusted_after(&h, || fs::rename(&new, &h).unwrap()));
    }

    #[test]
    fn its_directory_renamed_and_replaced_is_reported() {
        let (dir, inc, h) = tree();
        assert!(!trusted_after(&h, || {
            fs::rename(&inc, dir.path().join("old")).unwrap();
            fs::create_dir(&inc).unwrap();
            fs::write(&h, "#define V 1\n").unwrap();
        }));
    }

    #[test]
    fn a_symlink_retargeted_is_reported() {
        let (dir, _inc, _h) = tree();
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("h.h"), "#define V 2\n").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("inc", &link).unwrap();
        // As `ln -sfn` does it: a new link renamed over the old.
        assert!(!trusted_after(&link.join("h.h"), || {
            let new = dir.path().join("link.new");
            std::os::unix::fs::symlink("other", &new).unwrap();
            fs::rename(&new, &link).unwrap();
        }));
    }

    #[test]
    fn a_header_touched_or_chmod_ed_is_reported() {
        let (_dir, _inc, h) = tree();
        assert!(!trusted_after(&h, || {
            let f = fs::File::options().write(true).open(&h).unwrap();
            f.set_modified(std::time::SystemTime::now()).unwrap();
        }));
        assert!(!trusted_after(&h, || {
            fs::set_permissions(&h, fs::Permissions::from_mode(0o600)).unwrap()
        }));
    }

    #[test]
    fn a_header_appearing_in_a_held_directory_is_reported() {
        let (_dir, inc, _h) = tree();
        assert!(!trusted_after(&inc, || {
            fs::write(inc.join("new.h"), "").unwrap();
        }));
    }

    /// One report as the kernel lays it out: the header, then the name
    /// padded with NULs.
    fn record(wd: i32, mask: u32, name: &str) -> Vec<u8> {
        let padded = if name.is_empty() {
            0
        } else {
            (name.len() + 1).next_multiple_of(16)
        };
        let mut b = Vec::new();
        b.extend_from_slice(&wd.to_ne_bytes());
        b.extend_from_slice(&mask.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&(padded as u32).to_ne_bytes());
        b.extend_from_slice(name.as_bytes());
        b.resize(16 + padded, 0);
        b
    }

    #[test]
    fn reports_parse_into_changes_and_an_overflow_is_a_loss() {
        let bytes = [
            record(1, libc::IN_MODIFY, ""),
            record(2, libc::IN_CREATE, "new.h"),
            record(2, libc::IN_ATTRIB, "h.h"),
            record(3, libc::IN_IGNORED, ""),
        ]
        .concat();
        let mut out = Vec::new();
        assert!(inotify::parse(&bytes, &mut out));
        let want = [
            (1, Change::Itself),
            (2, name("new.h")),
            (2, Change::Child("h.h".into())),
            (3, Change::Gone),
        ];
        let got: Vec<_> = out.iter().map(|e| (e.watch, e.change.clone())).collect();
        assert_eq!(got, want);
        let lost = [
            record(1, libc::IN_MODIFY, ""),
            record(-1, libc::IN_Q_OVERFLOW, ""),
        ]
        .concat();
        assert!(!inotify::parse(&lost, &mut Vec::new()), "overflow");
        assert!(!inotify::parse(&bytes[..20], &mut Vec::new()), "cut short");
    }

    #[test]
    fn a_forked_child_never_reads_its_parents_queue() {
        assert!(global().is_some(), "the process's watcher starts");
        // SAFETY: the child only loads atomics and calls `_exit`, which are
        // async-signal-safe, as a child of a threaded process must be.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = i32::from(usable());
            // SAFETY: ends the child without running the parent's handlers.
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0, "forked");
        let mut status = 0;
        // SAFETY: `status` is valid for the write; `pid` is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 0, "the child found it usable");
    }

    #[test]
    fn another_file_written_beside_the_path_is_not_a_change() {
        let (dir, _inc, h) = tree();
        assert!(trusted_after(&h, || {
            fs::write(dir.path().join("unrelated"), "x").unwrap();
        }));
    }
}

/// A resolver over the C backend: once armed, a batch stats nothing, and
/// every change to the header makes the next batch re-derive the key.
#[cfg(target_os = "linux")]
mod resolver {
    use super::*;
    use crate::backend::cc::includes::memo::test_hooks::{ALL_OLD, STATS};
    use crate::backend::cc::CcBackend;
    use crate::backend::{Backend, Launch};
    use crate::cache::code::Capacity;
    use crate::cache::hooks::Hooks;
    use crate::key::Digest;
    use crate::resolve::{Kernel, Outcome, Resolver};
    use std::os::unix::fs::PermissionsExt;

    struct Fixture {
        dir: tempfile::TempDir,
        link: PathBuf,
        resolver: Resolver<CcBackend>,
    }

    /// A source directory holding `inc/kc_v.h` and `link -> inc`; `None`
    /// (skipped) without a C compiler unless CI requires one.
    fn fixture() -> Option<Fixture> {
        // Files written now would be too recent to trust for 2 s.
        ALL_OLD.with(|o| o.set(true));
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        fs::create_dir(&inc).unwrap();
        fs::write(inc.join("kc_v.h"), "#define KC_V 1.0f\n").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("inc", &link).unwrap();
        let hooks = Hooks::new();
        let required = std::env::var("KCACHE_TEST_REQUIRE")
            .is_ok_and(|l| l.split(',').any(|w| w.trim() == "cc"));
        let backend = match CcBackend::builder()
            .source_dir(dir.path())
            .hooks(&hooks)
            .build()
        {
            Ok(b) => b,
            Err(e) if !required => {
                eprintln!("skipping: no C compiler ({e})");
                return None;
            }
            Err(e) => panic!("cc is required here: {e}"),
        };
        let resolver = Resolver::with(Arc::new(backend), Capacity::Fixed(1 << 30), &hooks);
        Some(Fixture {
            dir,
            link,
            resolver,
        })
    }

    impl Fixture {
        fn kernel(&self) -> Kernel {
            Kernel::new(
                "k",
                "#include \"kc_v.h\"\nvoid k(float* n1_x, int n) {\n  for (int i0 = 0; i0 < n; i0++) n1_x[i0] = KC_V;\n}\n",
            )
            .bound(["n1_x"])
            .options(["-I", self.link.to_str().unwrap()])
        }

        /// One batch: the key, the stats it took, its outcome and what the
        /// program writes.
        fn batch(&self) -> (Digest, u64, Outcome, f32) {
            let before = STATS.with(Cell::get);
            let b = self.resolver.resolve_counted(&[self.kernel()]).unwrap();
            let stats = STATS.with(Cell::get) - before;
            let a = &b.answers[0];
            let mut launch = Launch {
                buffers: vec![vec![0.0; 2]],
                scalars: vec![2],
                global: [1, 1, 1],
                local: [1, 1, 1],
            };
            self.resolver
                .backend()
                .launch(&a.program, &a.symbol, &mut launch)
                .unwrap();
            (a.key, stats, a.outcome, launch.buffers[0][0])
        }

        /// Batches until the key is armed: the second re-validation arms,
        /// the batch after it stats nothing.
        fn armed(&self) -> Digest {
            for _ in 0..3 {
                self.batch();
            }
            let (key, stats, outcome, _) = self.batch();
            assert_eq!(stats, 0, "armed: trusted without a stat");
            assert_eq!(outcome, Outcome::Reused);
            key
        }
    }

    use std::cell::Cell;

    /// What a change is, what the header then says, and how it is made.
    type Edit<'a> = (&'a str, f32, Box<dyn Fn() + 'a>);

    #[test]
    fn an_armed_key_is_re_derived_after_each_change_to_its_header() {
        let Some(f) = fixture() else {
            return;
        };
        let d = f.dir.path();
        let header = f.link.join("kc_v.h");
        let changes: [Edit<'_>; 4] = [
            (
                "rewritten in place",
                2.0,
                Box::new(|| fs::write(&header, "#define KC_V (2.0f)\n").unwrap()),
            ),
            (
                "replaced by rename",
                3.0,
                Box::new(|| {
                    let new = d.join("inc").join("kc_v.h.new");
                    fs::write(&new, "#define KC_V 3.0f\n").unwrap();
                    fs::rename(&new, d.join("inc").join("kc_v.h")).unwrap();
                }),
            ),
            (
                "its directory renamed and replaced",
                4.0,
                Box::new(|| {
                    fs::rename(d.join("inc"), d.join("inc.old")).unwrap();
                    fs::create_dir(d.join("inc")).unwrap();
                    fs::write(d.join("inc").join("kc_v.h"), "#define KC_V 4.0f\n").unwrap();
                }),
            ),
            (
                "the symlink on its path retargeted",
                5.0,
                Box::new(|| {
                    fs::create_dir(d.join("other")).unwrap();
                    fs::write(d.join("other").join("kc_v.h"), "#define KC_V 5.0f\n").unwrap();
                    let new = d.join("link.new");
                    std::os::unix::fs::symlink("other", &new).unwrap();
                    fs::rename(&new, &f.link).unwrap();
                }),
            ),
        ];
        let (first, _, _, v) = f.batch();
        assert_eq!(v, 1.0);
        let mut keys = vec![first];
        for (what, value, change) in &changes {
            let before = f.armed();
            change();
            let (key, _, outcome, v) = f.batch();
            assert_ne!(key, before, "{what}: a new key");
            assert!(!keys.contains(&key), "{what}: never an earlier key");
            assert_eq!(outcome, Outcome::Compiled, "{what}");
            assert_eq!(v, *value, "{what}: the new header's program");
            keys.push(key);
        }
    }

    #[test]
    fn a_header_touched_or_chmod_ed_is_re_validated_by_the_next_batch() {
        let Some(f) = fixture() else {
            return;
        };
        let header = f.link.join("kc_v.h");
        f.batch();
        let key = f.armed();
        let touch = || {
            let h = fs::File::options().write(true).open(&header).unwrap();
            h.set_modified(std::time::SystemTime::now()).unwrap();
        };
        let chmod = || fs::set_permissions(&header, fs::Permissions::from_mode(0o600)).unwrap();
        for (what, change) in [("touched", &touch as &dyn Fn()), ("chmod", &chmod)] {
            f.armed();
            change();
            let (again, stats, _, v) = f.batch();
            assert!(stats > 0, "{what}: re-validated by stat");
            assert_eq!(again, key, "{what}: the same contents, the same key");
            assert_eq!(v, 1.0);
        }
    }
}
