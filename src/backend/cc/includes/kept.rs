//! Closures kept across processes, beside the base's kept probes: a later
//! process checks a closure's files and missed directories by stat instead
//! of reading, lexing and digesting every header again (a warm hit on a
//! kernel that includes `math.h` read 23 headers, some 150 KB, and spent
//! most of its time on them).
//!
//! # When a kept closure is used
//!
//! Only under the very name a scan would compute it for (the closure's memo
//! key: the search, whether absence is digested, the roots; with this
//! file's format and the crate's version), and only while every entry of
//! its validation (every file read, every directory a lookup missed in)
//! has the identity it had and is older than `memo.rs`'s "too recent"
//! window: the rule the in-process memo already trusts between batches,
//! taken across a process boundary. A closure with a recent entry is never
//! kept. The record is one of the compilers folder's private files (the
//! user's, 0600, read without following a link, checksummed); anything
//! that does not decode exactly is no record, and the scan runs as before.
//!
//! A change to what a scan gives for the same files (a new refusal, another
//! digest) must change [`FORMAT`].

use std::path::Path;

use super::super::identity_cache::{read_private, write_private};
use super::super::wire::{sealed, unsealed, Reader, Writer};
use super::memo::{StatId, Validation};
use super::{Closure, Define};
use crate::key::{Digest, PartsHasher};

/// The record's format, in its magic and its name.
const FORMAT: u32 = 2;

const MAGIC: &[u8; 16] = b"kcache-closure\0\x02";

/// The file name a closure of memo key `key` is kept under.
fn name(key: &Digest) -> String {
    let d = PartsHasher::new()
        .part("kcache-kept-closure")
        .part(FORMAT.to_le_bytes())
        .part(env!("CARGO_PKG_VERSION"))
        .part(key.as_bytes())
        .finish();
    format!("closure-{}", d.to_hex())
}

/// The closure kept in `dir` for memo key `key`, when a sound record holds
/// one and everything it rests on is as it was (stat-ed after `clock` was
/// read).
pub(super) fn load(dir: &Path, key: &Digest, clock: u64) -> Option<Closure> {
    let name = name(key);
    let bytes = read_private(&dir.join(&name))?;
    let (digest, files, defines, uncacheable, entries) = decode(&bytes, &name)?;
    let validation = Validation::loaded(entries, clock)?;
    #[cfg(test)]
    tests::LOADS.with(|n| n.set(n.get() + 1));
    Some(Closure {
        digest,
        files,
        defines,
        uncacheable,
        validation,
    })
}

/// Keeps `c` in `dir` for memo key `key`, unless something it rests on is
/// too recent to be told apart from a later change. Failures are ignored:
/// the next process scans again.
pub(super) fn save(dir: &Path, key: &Digest, c: &Closure) {
    if c.validation.volatile {
        return;
    }
    let name = name(key);
    let _ = write_private(dir, &name, &encode(c, &name));
}

type Decoded = (
    Digest,
    Vec<std::path::PathBuf>,
    Vec<Define>,
    Option<String>,
    Vec<(std::path::PathBuf, Option<StatId>)>,
);

fn encode(c: &Closure, name: &str) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(4 << 10));
    w.0.extend_from_slice(MAGIC);
    w.bytes(name.as_bytes());
    w.0.extend_from_slice(c.digest.as_bytes());
    w.list(&c.files, |w, p| w.path(p));
    w.list(&c.defines, |w, d| w.define(&d.name, d.pastes, &d.body));
    match &c.uncacheable {
        Some(why) => {
            w.u64(1);
            w.bytes(why.as_bytes());
        }
        None => w.u64(0),
    }
    w.list(&c.validation.entries, |w, (p, id)| {
        w.path(p);
        w.stat_or_absent(id);
    });
    sealed(w.0)
}

fn decode(bytes: &[u8], name: &str) -> Option<Decoded> {
    let mut r = Reader(unsealed(bytes)?.strip_prefix(MAGIC.as_slice())?);
    if r.bytes()? != name.as_bytes() {
        return None;
    }
    let digest = Digest(r.take(32)?.try_into().ok()?);
    let files = r.list(Reader::path)?;
    let defines = r.list(|r| {
        let (name, pastes, body) = r.define()?;
        Some(Define {
            name: name.into(),
            body,
            pastes,
        })
    })?;
    let uncacheable = match r.u64()? {
        0 => None,
        1 => Some(String::from_utf8(r.bytes()?.to_vec()).ok()?),
        _ => return None,
    };
    let entries = r.list(|r| Some((r.path()?, r.stat_or_absent()?)))?;
    r.0.is_empty()
        .then_some((digest, files, defines, uncacheable, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cc::includes::memo::test_hooks::ALL_OLD;
    use crate::backend::cc::includes::{scan_text, Search};
    use crate::backend::cc::options::Flags;

    thread_local! {
        /// How many kept closures this thread has loaded.
        pub(super) static LOADS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A scan in a fresh process, as far as the closures go: the
    /// in-process memo forgotten first.
    fn scan(search: &Search, text: &[u8]) -> std::sync::Arc<Closure> {
        super::super::closures()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        scan_text(search, "k", text, false).unwrap().closure
    }

    #[test]
    fn a_kept_closure_is_what_the_scan_gives_until_a_file_or_a_missed_directory_changes() {
        ALL_OLD.with(|o| o.set(true));
        let t = tempfile::tempdir().unwrap();
        let (kept, early, late) = (
            t.path().join("kept"),
            t.path().join("i1"),
            t.path().join("i2"),
        );
        for d in [&early, &late] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(late.join("h.h"), "#include \"deep.h\"\n#define H(x) x\n").unwrap();
        std::fs::write(late.join("deep.h"), "#define DEEP 1\n").unwrap();
        let flags = Flags {
            bracket: vec![early.clone(), late.clone()],
            nostdinc: true,
            ..Flags::default()
        };
        let search = Search::new(&flags, t.path(), &[]).kept_in(Some(kept.clone()));
        let text = b"#include <h.h>\nint k;\n";
        let loads = || LOADS.with(std::cell::Cell::get);

        let fresh = scan(&search, text);
        assert_eq!(loads(), 0);
        let kept_one = scan(&search, text);
        assert_eq!(loads(), 1, "the second process loads the kept closure");
        assert_eq!(kept_one.digest, fresh.digest);
        assert_eq!(kept_one.files, fresh.files);
        assert_eq!(kept_one.defines, fresh.defines);
        assert_eq!(kept_one.uncacheable, fresh.uncacheable);

        // A header appearing earlier in the chain: the missed directory moved.
        std::fs::write(early.join("h.h"), "#define H(x) (x)\n").unwrap();
        let shadowed = scan(&search, text);
        assert_eq!(loads(), 1, "not loaded: a missed directory changed");
        assert_ne!(shadowed.digest, fresh.digest);
        std::fs::remove_file(early.join("h.h")).unwrap();
        assert_eq!(scan(&search, text).digest, fresh.digest);

        // A file read, edited in place (another size).
        std::fs::write(late.join("deep.h"), "#define DEEP 22\n").unwrap();
        let edited = scan(&search, text);
        assert_ne!(edited.digest, fresh.digest);

        // A damaged record is no record: the scan runs and is right.
        for e in std::fs::read_dir(&kept).unwrap() {
            let p = e.unwrap().path();
            let mut b = std::fs::read(&p).unwrap();
            let mid = b.len() / 2;
            b[mid] ^= 1;
            std::fs::write(&p, b).unwrap();
        }
        let before = loads();
        assert_eq!(scan(&search, text).digest, edited.digest);
        assert_eq!(loads(), before, "a damaged record is not loaded");
    }

    fn closure(dir: &Path) -> Closure {
        let file = dir.join("a.h");
        std::fs::write(&file, "#define A(x) x + y\n").unwrap();
        let id = StatId::of(&file).unwrap();
        Closure {
            digest: Digest([9; 32]),
            files: vec![file.clone()],
            defines: vec![
                Define {
                    name: (*b"A").into(),
                    body: [b"x", b"y"].into_iter().collect(),
                    pastes: false,
                },
                // Whether a body pastes is kept too (review 2026-12-02,
                // GPU F19b): a kernel calling `CAT` is raw-keyed.
                Define {
                    name: (*b"CAT").into(),
                    body: Default::default(),
                    pastes: true,
                },
            ],
            uncacheable: Some("why".into()),
            validation: Validation::new(
                vec![(file, Some(id)), (dir.join("gone"), None)],
                super::super::memo::now(),
            ),
        }
    }

    #[test]
    fn a_record_decodes_to_what_was_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let c = closure(dir.path());
        let name = name(&Digest([1; 32]));
        let (digest, files, defines, uncacheable, entries) =
            decode(&encode(&c, &name), &name).expect("a record");
        assert_eq!(digest, c.digest);
        assert_eq!(files, c.files);
        assert_eq!(defines, c.defines);
        assert_eq!(uncacheable, c.uncacheable);
        assert_eq!(entries, c.validation.entries);
    }

    #[test]
    fn a_damaged_or_misnamed_record_is_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let c = closure(dir.path());
        let name = name(&Digest([1; 32]));
        let bytes = encode(&c, &name);
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(&b, &name).is_none(), "byte {i} flipped");
        }
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], &name).is_none(), "cut at {cut}");
        }
        // Another key's record, under this key's name: refused.
        assert!(decode(&bytes, &super::name(&Digest([2; 32]))).is_none());
    }
}
