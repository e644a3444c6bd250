//! The names a key must keep as written: every macro the compile may expand
//! in a kernel, among them those whose expansion depends on where it
//! happens, and those that may paste tokens.
//!
//! The sources, merged per kernel: the compiler's predefined macros (cc asks
//! the compiler itself with `-dM -E` on the backend's exact flags; a GPU
//! backend lists its driver's documented ones), names an option defines or
//! undefines (`-D`, `-U`, `--define-macro`, ...), every `#define` and
//! `#undef` of every header the compile reads, and the kernel's own. A
//! macro is *positional* when its body names `__LINE__`, `__FILE__`,
//! `__func__` or another positional macro (`assert`, through
//! `__ASSERT_FUNCTION`); a kernel that uses one is keyed on its raw text. A
//! macro from outside the kernel *pastes* when its body pastes tokens
//! (`#define CAT(a, b) a##b`) or names a macro that pastes: `CAT(q, 1)`
//! reaches a local `q1` that no token spells, so a kernel that names one
//! keeps as written every name a paste may spell (see `canon::pastes`;
//! review 2026-12-02, GPU F19b). The kernel's own pasting macro already
//! makes it uncacheable (see `canon::dialect`).
//!
//! The words of a body from outside the kernel (a header's, an option's, a
//! predefined one; a function-like macro's parameters aside) are kept as
//! written too, in a set of their own (they are no macros): `#define GET v1_a` in a header, expanded in a kernel that
//! declares a local `v1_a`, reads that local, and a renaming would make it
//! read something else (review 2026-12-02). Keywords among them need no
//! keeping: no declaration rebinds one.
//!
//! The merge is memoized by what went into it, so a hit costs a lookup.

use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet};

use super::includes::{parse_directive, Body, Closure, Define};
use crate::canon::MacroNames;

/// Identifiers whose expansion depends on where they are expanded (the
/// lexer's list: one list for the renamer and the key).
pub(crate) const POSITIONAL: &[&str] = &crate::canon::dialect::POSITION_MACROS;

/// A name with no body (an option's `-DX`, a documented predefined macro).
pub(crate) fn bare(name: &str) -> Define {
    Define {
        name: name.as_bytes().into(),
        body: Body::default(),
        pastes: false,
    }
}

/// The definitions of a `-dM` listing (`#define NAME BODY` lines).
pub(crate) fn parse_dm(listing: &str) -> Vec<Define> {
    listing
        .lines()
        .filter_map(|line| parse_directive(line.as_bytes()).ok()?.define)
        .collect()
}

/// The names `options` define or undefine: `-DX`, `-D X`, `-DX=1`, `-UX`,
/// `-U X`, `--define-macro=X`, `--define-macro X`, `--undefine-macro=X`,
/// glslang's `--D X` and `--U X`, with the identifiers of the value as the
/// body.
pub(crate) fn option_defines(options: &[String]) -> Vec<Define> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < options.len() {
        let o = options[i].as_str();
        i += 1;
        let mut value = None;
        for flag in [
            "-D",
            "-U",
            "--define-macro",
            "--undefine-macro",
            "-define-macro",
            // glslang's spellings (review 2026-12-02, GPU F9).
            "--D",
            "--U",
            "--undef-macro",
        ] {
            if let Some(rest) = o.strip_prefix(flag) {
                let rest = rest.strip_prefix('=').unwrap_or(rest);
                if rest.is_empty() {
                    value = options.get(i).map(String::as_str);
                    i += 1;
                } else if flag.len() == 2 || o.as_bytes()[flag.len()] == b'=' {
                    value = Some(rest);
                }
                break;
            }
        }
        let Some(v) = value else { continue };
        let (name, body) = v.split_once('=').unwrap_or((v, ""));
        let name = name.split('(').next().unwrap_or(name).trim();
        if name.is_empty() {
            continue;
        }
        let line = format!("#define {name} {body}");
        out.extend(parse_directive(line.as_bytes()).ok().and_then(|d| d.define));
    }
    out
}

/// Every name in `parts` (all from outside the kernel), those of them that
/// are positional, and those that paste.
#[cfg(test)]
pub(crate) fn names(parts: &[&[Define]]) -> (MacroNames, MacroNames, MacroNames) {
    let all = parts
        .iter()
        .flat_map(|p| p.iter())
        .map(|d| &d.name)
        .collect();
    let (positional, pasting) = reach(parts, &[]);
    (all, positional, pasting)
}

/// The names in `outside` and `own` (the kernel's own definitions) that are
/// positional (their body names a positional identifier, or a macro that
/// is), and those that paste (from outside, their body pastes; or it names
/// a macro that pastes).
fn reach(outside: &[&[Define]], own: &[Define]) -> (MacroNames, MacroNames) {
    let outside = || outside.iter().flat_map(|p| p.iter());
    let defines = || outside().chain(own);
    // Nothing is positional unless some body names a positional identifier
    // itself, nothing pastes unless some outside body does: a listing with
    // neither skips the map of who names what. (gcc's predefines
    // `__INT64_C` and its kin, which paste: for it the map is built once per
    // seed and per merge, which the memo below keeps.)
    let names_one = |d: &Define| {
        d.body
            .iter()
            .any(|b| POSITIONAL.iter().any(|p| p.as_bytes() == b))
    };
    let positional = defines().any(names_one);
    let pastes = outside().any(|d| d.pastes);
    if !positional && !pastes {
        return Default::default();
    }
    // ident -> the macros whose body names it
    let mut users: FxHashMap<&[u8], Vec<&[u8]>> = FxHashMap::default();
    for d in defines() {
        for b in d.body.iter() {
            users.entry(b).or_default().push(&d.name);
        }
    }
    // The macros whose body names one of `seeds`, or names one of those
    // (a seed only if so).
    let users_of = |seeds: Vec<&[u8]>| -> FxHashSet<&[u8]> {
        let mut found: FxHashSet<&[u8]> = FxHashSet::default();
        let mut work = seeds;
        while let Some(n) = work.pop() {
            for &u in users.get(n).map(Vec::as_slice).unwrap_or_default() {
                if found.insert(u) {
                    work.push(u);
                }
            }
        }
        found
    };
    let positional = if positional {
        users_of(POSITIONAL.iter().map(|p| p.as_bytes()).collect())
            .into_iter()
            .collect()
    } else {
        MacroNames::default()
    };
    let pasting = if pastes {
        let seeds: Vec<&[u8]> = outside().filter(|d| d.pastes).map(|d| &*d.name).collect();
        let mut pasting: MacroNames = seeds.iter().collect();
        pasting.extend(users_of(seeds));
        pasting
    } else {
        MacroNames::default()
    };
    (positional, pasting)
}

/// The merged names, memoized.
#[derive(Clone, Debug)]
pub(crate) struct Merged {
    pub macros: Arc<MacroNames>,
    pub positional: Arc<MacroNames>,
    /// The macros that paste (see the module docs).
    pub pasting: Arc<MacroNames>,
    /// The words the bodies of macros from outside the kernel name (the
    /// kernel's own the binder reads itself), keywords and parameters
    /// aside: kept as written, but no macros themselves.
    pub reached: Arc<MacroNames>,
}

/// A compiler's predefined macros (its `-dM` listing) as a merge needs
/// them: the names of those whose body names nothing and pastes nothing,
/// which are most, in one set, and the others whole. So a warm hit that
/// loads the kept listing allocates a few buffers for it, not one or more
/// per definition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Predefined {
    /// The names of the definitions whose body names nothing and pastes
    /// nothing.
    pub bare: MacroNames,
    /// The other definitions, in listing order.
    pub bodied: Vec<Define>,
}

impl From<Vec<Define>> for Predefined {
    fn from(defines: Vec<Define>) -> Predefined {
        let mut p = Predefined::default();
        for d in defines {
            if d.body.is_empty() && !d.pastes {
                p.bare.insert(&d.name);
            } else {
                p.bodied.push(d);
            }
        }
        p
    }
}

/// The kernel-independent definitions (predefined, options, headers read
/// before the kernels), held as what a merge needs of them: every name, and
/// the definitions whose body names or pastes anything (only those can make
/// a name positional or pasting).
#[derive(Debug)]
pub(crate) struct Seed {
    names: Arc<MacroNames>,
    positional: Arc<MacroNames>,
    pasting: Arc<MacroNames>,
    /// The words the bodies name (see [`Merged::reached`]).
    reached: Arc<MacroNames>,
    bodied: Vec<Define>,
}

impl Seed {
    /// The names of `defines`.
    pub(crate) fn new(defines: Vec<Define>) -> Seed {
        Seed::with_predefined(Predefined::default(), defines)
    }

    /// The names of `predefined` and of `defines`. The predefined set is
    /// taken over, not copied: a warm hit's few hundred names stay where
    /// the kept probe's decode put them.
    pub(crate) fn with_predefined(predefined: Predefined, defines: Vec<Define>) -> Seed {
        let Predefined {
            bare: mut names,
            mut bodied,
        } = predefined;
        let more = bodied.len() + defines.len();
        let bytes = bodied.iter().chain(&defines).map(|d| d.name.len()).sum();
        names.reserve(more, bytes);
        for d in &bodied {
            names.insert(&d.name);
        }
        for d in defines {
            names.insert(&d.name);
            if !d.body.is_empty() || d.pastes {
                bodied.push(d);
            }
        }
        let mut reached = MacroNames::default();
        insert_reached(&mut reached, &bodied);
        let (positional, pasting) = reach(&[&bodied], &[]);
        Seed {
            names: Arc::new(names),
            positional: Arc::new(positional),
            pasting: Arc::new(pasting),
            reached: Arc::new(reached),
            bodied,
        }
    }
}

impl Seed {
    /// Also keeps `words` as written (see [`Merged::reached`]): a GPU
    /// driver's aliases and the words they expand to.
    pub(crate) fn keeping(mut self, words: &MacroNames) -> Seed {
        let reached = Arc::make_mut(&mut self.reached);
        for w in words.iter() {
            reached.insert(w);
        }
        self
    }
}

/// Adds the words the bodies of `defines` name (keywords aside) to `names`.
/// (The kernel's own definitions are not among those passed: the binder
/// reads their bodies itself, and a word it took for a macro would make
/// every argument of a macro calling it opaque.)
fn insert_reached(names: &mut MacroNames, defines: &[Define]) {
    for d in defines {
        for w in d.body.iter() {
            if !crate::canon::rename::is_keyword(w) {
                names.insert(w);
            }
        }
    }
}

type MergeKey = (usize, usize, Vec<Define>);
/// The inputs are held so their addresses stay unique while keyed by.
type MergeMemo = Mutex<FxHashMap<MergeKey, (Arc<Seed>, Arc<Closure>, Merged)>>;

fn merges() -> &'static MergeMemo {
    static MERGES: OnceLock<MergeMemo> = OnceLock::new();
    MERGES.get_or_init(Default::default)
}

/// `seed`'s names (predefined, options, kernel-independent headers), those
/// of the headers in `closure`, and the kernel's `own` definitions.
pub(crate) fn merge(seed: &Arc<Seed>, closure: &Arc<Closure>, own: &[Define]) -> Merged {
    let key = (
        Arc::as_ptr(seed) as usize,
        Arc::as_ptr(closure) as usize,
        own.to_vec(),
    );
    let mut memo = merges().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, m)) = memo.get(&key) {
        return m.clone();
    }
    let m = if closure.defines.is_empty() && own.is_empty() {
        // Nothing to add (a kernel that includes nothing and defines
        // nothing): the seed's own names, shared. (Still memoized: the memo
        // holding the seed is also what spares a one-shot process freeing
        // its few hundred names at exit.)
        Merged {
            macros: Arc::clone(&seed.names),
            positional: Arc::clone(&seed.positional),
            pasting: Arc::clone(&seed.pasting),
            reached: Arc::clone(&seed.reached),
        }
    } else {
        let mut macros = (*seed.names).clone();
        let added = closure.defines.iter().chain(own);
        macros.extend(added.map(|d| &d.name));
        let reached = if closure.defines.iter().any(|d| !d.body.is_empty()) {
            let mut r = (*seed.reached).clone();
            insert_reached(&mut r, &closure.defines);
            Arc::new(r)
        } else {
            Arc::clone(&seed.reached)
        };
        // A definition whose body names and pastes nothing makes no name
        // positional or pasting: the seed's bodied definitions stand for all
        // of them.
        let (positional, pasting) = reach(&[&seed.bodied, &closure.defines], own);
        Merged {
            macros: Arc::new(macros),
            positional: Arc::new(positional),
            pasting: Arc::new(pasting),
            reached,
        }
    };
    memo.insert(key, (Arc::clone(seed), Arc::clone(closure), m.clone()));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> MacroNames {
        names.iter().map(|n| n.as_bytes()).collect()
    }

    #[test]
    fn a_dm_listing_gives_names_and_bodies() {
        let d = parse_dm("#define __x86_64__ 1\n#define linux 1\n#define F(a) (a + __LINE__)\n");
        let (all, pos, _) = names(&[&d]);
        assert_eq!(all, set(&["__x86_64__", "linux", "F"]));
        assert_eq!(pos, set(&["F"]));
    }

    #[test]
    fn positional_macros_are_found_through_other_macros() {
        let d = parse_dm(
            "#define __ASSERT_FUNCTION __extension__ __PRETTY_FUNCTION__\n\
             #define assert(e) ((e) ? 0 : fail(#e, __ASSERT_FUNCTION))\n\
             #define plain 3\n",
        );
        let (_, pos, _) = names(&[&d]);
        assert_eq!(pos, set(&["__ASSERT_FUNCTION", "assert"]));
    }

    #[test]
    fn a_listing_naming_no_positional_identifier_has_no_positional_macro() {
        let d = parse_dm("#define __x86_64__ 1\n#define A B\n#define B(x) (x + A)\n");
        let (all, pos, _) = names(&[&d]);
        assert_eq!(all, set(&["__x86_64__", "A", "B"]));
        assert!(pos.is_empty());
    }

    #[test]
    fn a_chain_across_parts_is_positional() {
        let seed = parse_dm("#define USES_HERE HERE\n#define plain 1\n");
        let closure = parse_dm("#define HERE __LINE__\n");
        let (_, pos, _) = names(&[&seed, &closure]);
        assert_eq!(pos, set(&["USES_HERE", "HERE"]));
    }

    #[test]
    fn a_macro_from_outside_that_pastes_or_names_one_that_does_pastes() {
        // Review 2026-12-02, GPU F19b: `CAT(q, 1)` reaches a local `q1` that
        // no token spells, and so does a macro whose body names `CAT`.
        let d = parse_dm(
            "#define CAT(a, b) a##b\n#define CAT1(a) CAT(a, 1)\n\
             #define __INT64_C(c) c ## L\n#define plain 1\n#define F(a) a\n",
        );
        let (_, pos, pasting) = names(&[&d]);
        assert_eq!(pasting, set(&["CAT", "CAT1", "__INT64_C"]));
        assert!(pos.is_empty(), "a paste is no position");
        // A predefined one (gcc's `__INT64_C`) survives the split into bare
        // names, and a header's a merge; the kernel's own pasting macro is
        // left to the dialect scan, which makes the kernel uncacheable.
        let predefined = Predefined::from(parse_dm("#define __INT64_C(c) c ## L\n"));
        assert!(predefined.bare.is_empty());
        let seed = Arc::new(Seed::with_predefined(predefined, Vec::new()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cat.h"), "#define CAT(a, b) a##b\n").unwrap();
        let search = super::super::includes::search_in_dirs(&[], dir.path());
        let text = b"#include \"cat.h\"\n#define MINE(a) a##2\nint k;\n";
        let scanned = super::super::includes::scan_text(&search, "test", text, false).unwrap();
        let m = merge(&seed, &scanned.closure, &scanned.defines);
        assert_eq!(*m.pasting, set(&["__INT64_C", "CAT"]));
        assert!(m.positional.is_empty());
    }

    #[test]
    fn option_names_cover_every_spelling() {
        let opts: Vec<String> = [
            "-Dv1_x=3",
            "-D",
            "v2_y",
            "-Uv3_z",
            "-U",
            "v4",
            "--define-macro=v5=__LINE__",
            "--define-macro",
            "v6",
            "-DF(a)=a",
            "-O2",
            "-I",
            "-Dnot_a_macro",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let d = option_defines(&opts);
        let (all, pos, _) = names(&[&d]);
        // `-I -Dnot_a_macro` is still read as a -D by this scan: more names
        // kept as written is only less reuse.
        assert_eq!(
            all,
            set(&["v1_x", "v2_y", "v3_z", "v4", "v5", "v6", "F", "not_a_macro"])
        );
        assert_eq!(pos, set(&["v5"]));
    }

    /// A merge through a [`Seed`] (names moved out, only bodied definitions
    /// kept) must give what the names of every part together give, with and
    /// without a kernel's own definitions.
    #[test]
    fn a_merge_through_a_seed_equals_the_names_of_all_its_parts() {
        let seed = parse_dm(
            "#define __x86_64__ 1\n#define USES_HERE HERE\n#define plain 1\n\
             #define F(a) (a + __LINE__)\n",
        );
        let own = parse_dm("#define HERE __LINE__\n#define mine 2\n#define OWNED only_own\n");
        let cwd = std::env::temp_dir();
        let search = super::super::includes::search_in_dirs(&[], &cwd);
        let scanned =
            super::super::includes::scan_text(&search, "test", b"int k;\n", false).unwrap();
        let held = Arc::new(Seed::new(seed.clone()));
        for kernel in [&own[..], &[]] {
            let m = merge(&held, &scanned.closure, kernel);
            let (all, pos, pasting) = names(&[&seed, &scanned.closure.defines, kernel]);
            assert_eq!(*m.macros, all);
            // The words the outside bodies name, the kernel's own aside.
            let mut reached = MacroNames::default();
            insert_reached(&mut reached, &seed);
            assert!(reached.contains(b"__LINE__") && !reached.contains(b"only_own"));
            assert_eq!(*m.reached, reached);
            assert_eq!(*m.positional, pos);
            assert_eq!(*m.pasting, pasting);
        }
    }
}
