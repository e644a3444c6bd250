//! [`MacroNames`]: a set of names held in one buffer.
//!
//! A compiler predefines a few hundred macros, and a warm CLI hit loads
//! them all from the kept probe before it keys anything: one allocation
//! per name, as a set of boxed names costs, was about a tenth of the hit's
//! instructions. Here every name's bytes live in one buffer and the table
//! holds where each starts, so building, cloning and dropping the set are
//! a few allocations whatever its size.

use std::fmt;
use std::hash::BuildHasher as _;

/// Names that are macros where a kernel is compiled (spelled as the
/// compiler sees them, splices removed): never renamed, since a macro is not
/// a binding and no declaration shadows it.
#[derive(Clone, Default)]
pub struct MacroNames {
    /// Every name's bytes, one after another.
    bytes: Vec<u8>,
    /// Where each name stands in `bytes`: its start and its length.
    table: hashbrown::HashTable<(u32, u32)>,
}

fn hash(name: &[u8]) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(name)
}

impl MacroNames {
    /// An empty set with room for `names` names of `bytes` bytes together.
    pub fn with_capacity(names: usize, bytes: usize) -> MacroNames {
        MacroNames {
            bytes: Vec::with_capacity(bytes),
            table: hashbrown::HashTable::with_capacity(names),
        }
    }

    fn name(bytes: &[u8], (at, len): (u32, u32)) -> &[u8] {
        &bytes[at as usize..at as usize + len as usize]
    }

    /// Whether `name` is in the set.
    pub fn contains<N: AsRef<[u8]> + ?Sized>(&self, name: &N) -> bool {
        let name = name.as_ref();
        self.table
            .find(hash(name), |&e| Self::name(&self.bytes, e) == name)
            .is_some()
    }

    /// Adds `name`; whether it was not there yet.
    ///
    /// # Panics
    /// When the names together pass 4 GiB (no compile defines that many).
    pub fn insert(&mut self, name: &[u8]) -> bool {
        let h = hash(name);
        let bytes = &self.bytes;
        match self.table.entry(
            h,
            |&e| Self::name(bytes, e) == name,
            |&e| hash(Self::name(bytes, e)),
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                let at = u32::try_from(self.bytes.len()).expect("macro names under 4 GiB");
                let len = u32::try_from(name.len()).expect("a macro name under 4 GiB");
                v.insert((at, len));
                self.bytes.extend_from_slice(name);
                true
            }
        }
    }

    /// How many names the set holds.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the set holds no name.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Room for `names` more names of `bytes` more bytes.
    pub fn reserve(&mut self, names: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        let held = &self.bytes;
        self.table.reserve(names, |&e| hash(Self::name(held, e)));
    }

    /// Every name, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.table.iter().map(|&e| Self::name(&self.bytes, e))
    }
}

impl<T: AsRef<[u8]>> Extend<T> for MacroNames {
    fn extend<I: IntoIterator<Item = T>>(&mut self, names: I) {
        for n in names {
            self.insert(n.as_ref());
        }
    }
}

impl<T: AsRef<[u8]>> FromIterator<T> for MacroNames {
    fn from_iter<I: IntoIterator<Item = T>>(names: I) -> MacroNames {
        let mut set = MacroNames::default();
        set.extend(names);
        set
    }
}

/// Equal when they hold the same names, whatever order they were added in.
impl PartialEq for MacroNames {
    fn eq(&self, other: &MacroNames) -> bool {
        self.len() == other.len() && self.iter().all(|n| other.contains(n))
    }
}

impl Eq for MacroNames {}

impl fmt::Debug for MacroNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.iter().map(String::from_utf8_lossy).collect();
        names.sort();
        f.debug_set().entries(names).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn a_name_is_held_once_and_found_by_its_bytes() {
        let mut m = MacroNames::default();
        assert!(m.insert(b"__GNUC__"));
        assert!(!m.insert(b"__GNUC__"));
        assert!(m.insert(b""));
        assert_eq!(m.len(), 2);
        assert!(m.contains(b"__GNUC__"));
        assert!(m.contains(b""));
        assert!(!m.contains(b"__GNUC"), "a prefix is another name");
        assert!(!m.contains(b"__GNUC__x"), "so is an extension");
    }

    #[test]
    fn sets_are_equal_by_their_names_not_their_order() {
        let a: MacroNames = ["x", "y", "z"].into_iter().collect();
        let b: MacroNames = ["z", "x", "y", "x"].into_iter().collect();
        assert_eq!(a, b);
        let c: MacroNames = ["x", "y"].into_iter().collect();
        assert_ne!(a, c);
        assert_eq!(format!("{a:?}"), r#"{"x", "y", "z"}"#);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The set answers as a standard set of the same names does,
        /// through growth (names added one by one, no room reserved),
        /// a clone and a reservation.
        #[test]
        fn it_answers_as_a_hash_set_does(
            added in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 0..200),
            asked in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 0..50),
        ) {
            let mut m = MacroNames::default();
            let mut s = HashSet::new();
            for (i, n) in added.iter().enumerate() {
                prop_assert_eq!(m.insert(n), s.insert(n.clone()));
                if i == added.len() / 2 {
                    m.reserve(100, 1000);
                }
            }
            let copy = m.clone();
            prop_assert_eq!(m.len(), s.len());
            for n in added.iter().chain(&asked) {
                prop_assert_eq!(m.contains(n), s.contains(n));
                prop_assert_eq!(copy.contains(n), s.contains(n));
            }
            let listed: HashSet<Vec<u8>> = m.iter().map(<[u8]>::to_vec).collect();
            prop_assert_eq!(listed, s);
        }
    }
}
