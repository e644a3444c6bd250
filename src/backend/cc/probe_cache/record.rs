//! The kept file's bytes: a compact record read with one `read` and
//! decoded without a parser (the macro listing kept already split into
//! its definitions), so a process that finds its answers kept spends
//! microseconds on them, not the tenth of a millisecond JSON and the
//! listing's lexing took.
//!
//! Layout: [`MAGIC`], then the fields of [`super::File`] in order, in the
//! encoding of [`super::super::wire`]. Anything that does not decode
//! exactly (another magic, a short or long file, a count larger than the
//! bytes left, a bad checksum) is no record: the caller probes again.

use super::super::includes::Define;
use super::super::macros::Predefined;
use super::super::wire::{sealed, unsealed, Reader, Writer};
use super::{Answers, File, PathList};
use crate::canon::MacroNames;

/// What a record starts with; its last bytes are the format version.
const MAGIC: &[u8; 16] = b"kcache-probes\0\0\x05";

/// The record of `file`.
pub(super) fn encode(file: &File) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(16 << 10));
    w.0.extend_from_slice(MAGIC);
    w.bytes(file.key.as_bytes());
    let a = &file.answers;
    // The bare names, then the bodied definitions: one list of
    // definitions, each with whether it pastes and its body's (possibly
    // empty) list of names.
    let p = &a.defines;
    w.u64((p.bare.len() + p.bodied.len()) as u64);
    for name in p.bare.iter() {
        w.define(name, false, &Default::default());
    }
    for d in &p.bodied {
        w.define(&d.name, d.pastes, &d.body);
    }
    w.list(&a.read, |w, p| w.path(p));
    w.list(&a.link_line, |w, s| w.bytes(s.as_bytes()));
    w.list(&a.linked, |w, p| w.path(p));
    w.list(&a.unlinked, |w, p| w.path(p));
    w.u64(file.watch.len() as u64);
    for (p, id) in file.watch.iter() {
        w.path(p);
        w.stat_or_absent(id);
    }
    w.u64(file.digests.len() as u64);
    for (p, (id, d)) in file.digests.iter() {
        w.path(p);
        w.stat(id);
        w.0.extend_from_slice(d);
    }
    sealed(w.0)
}

/// The file `bytes` record, or `None` when they are not exactly one.
pub(super) fn decode(bytes: &[u8]) -> Option<File> {
    let mut r = Reader(unsealed(bytes)?.strip_prefix(MAGIC.as_slice())?);
    let key = String::from_utf8(r.bytes()?.to_vec()).ok()?;
    let defines = predefined(&mut r)?;
    let read = r.list(Reader::path)?;
    let link_line = r.list(|r| String::from_utf8(r.bytes()?.to_vec()).ok())?;
    let linked = r.list(Reader::path)?;
    let unlinked = r.list(Reader::path)?;
    let n = r.count()?;
    let mut watch = PathList::with_capacity(n);
    for _ in 0..n {
        let p = r.bytes()?;
        watch.push(p, r.stat_or_absent()?);
    }
    let n = r.count()?;
    let mut digests = PathList::with_capacity(n);
    for _ in 0..n {
        let p = r.bytes()?;
        let id = r.stat()?;
        digests.push(p, (id, r.take(32)?.try_into().ok()?));
    }
    if !r.0.is_empty() {
        return None;
    }
    Some(File {
        key,
        answers: Answers {
            defines,
            read,
            link_line,
            linked,
            unlinked,
        },
        watch,
        digests,
    })
}

/// The definitions list: a bare name goes straight into the set (no
/// allocation of its own), a bodied definition is built whole.
fn predefined(r: &mut Reader<'_>) -> Option<Predefined> {
    let n = r.count()?;
    let mut p = Predefined {
        // A predefined name is about 20 bytes (`__INT_LEAST16_WIDTH__`).
        bare: MacroNames::with_capacity(n, n * 24),
        bodied: Vec::new(),
    };
    for _ in 0..n {
        let (name, pastes, body) = r.define()?;
        if body.is_empty() && !pastes {
            p.bare.insert(name);
            continue;
        }
        p.bodied.push(Define {
            name: name.into(),
            body,
            pastes,
        });
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cc::includes::memo::StatId;
    use crate::backend::cc::includes::Body;
    use std::path::Path;

    fn file() -> File {
        let here = StatId::of(Path::new("/")).expect("/ is there");
        File {
            key: "ab".repeat(32),
            answers: Answers {
                defines: Predefined::from(vec![
                    Define {
                        name: (*b"__GNUC__").into(),
                        body: Body::default(),
                        pastes: false,
                    },
                    Define {
                        name: (*b"MAX").into(),
                        body: [b"a", b"b"].into_iter().collect(),
                        pastes: false,
                    },
                    Define {
                        name: (*b"__x86_64__").into(),
                        body: Body::default(),
                        pastes: false,
                    },
                    // gcc's `__INT64_C(c) c ## L`: its body names nothing,
                    // and it still must stay apart from the bare names
                    // (review 2026-12-02, GPU F19b).
                    Define {
                        name: (*b"__INT64_C").into(),
                        body: Body::default(),
                        pastes: true,
                    },
                ]),
                read: vec!["/usr/include/stdc-predef.h".into()],
                link_line: vec!["collect2".into(), "-lc".into()],
                linked: vec!["/lib/libc.so.6".into()],
                unlinked: vec![],
            },
            watch: [("/", Some(here)), ("/no/such", None)]
                .into_iter()
                .collect(),
            digests: [("/lib/libc.so.6", (here, [9; 32]))].into_iter().collect(),
        }
    }

    #[test]
    fn a_record_decodes_to_what_was_encoded() {
        let f = file();
        let back = decode(&encode(&f)).expect("decodes");
        assert_eq!(back.key, f.key);
        assert_eq!(back.answers.defines, f.answers.defines);
        assert_eq!(back.answers.read, f.answers.read);
        assert_eq!(back.answers.link_line, f.answers.link_line);
        assert_eq!(back.answers.linked, f.answers.linked);
        assert_eq!(back.answers.unlinked, f.answers.unlinked);
        assert_eq!(back.watch, f.watch);
        assert_eq!(back.digests, f.digests);
    }

    /// The body's words are kept NUL-terminated in one buffer: a word
    /// holding a NUL would read back as two.
    #[test]
    fn a_body_word_holding_a_nul_is_no_record() {
        let record = |word: &[u8]| {
            let mut w = Writer(MAGIC.to_vec());
            w.bytes(b"k");
            w.u64(1);
            // The name, no paste, one word.
            w.bytes(b"M");
            w.u64(0);
            w.u64(1);
            w.bytes(word);
            for _ in 0..6 {
                w.u64(0);
            }
            let sum = crate::checksum::xxh3_64(&w.0);
            w.u64(sum);
            w.0
        };
        let good = decode(&record(b"ab")).expect("a plain word decodes");
        let words: Vec<&[u8]> = good.answers.defines.bodied[0].body.iter().collect();
        assert_eq!(words, [b"ab"]);
        assert!(decode(&record(b"a\0b")).is_none());
    }

    #[test]
    fn a_damaged_record_is_no_record() {
        let bytes = encode(&file());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_none(), "cut to {n} bytes");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x20;
            assert!(decode(&b).is_none(), "byte {i} flipped");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        assert!(
            decode(b"{\"format\":2}").is_none(),
            "a JSON file of the last format"
        );
    }
}
