//! Properties of `make_key` and `digest_parts` that the docs claim.

use kcache::key::{digest_parts, make_key, Source, DIGEST_HEX_LEN};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1024),
        ..ProptestConfig::default()
    }
}

/// Short strings over an alphabet rich in the separators a naive join would
/// confuse (`:`, `=`, `,`), so field shifts are tried often.
fn field() -> impl Strategy<Value = String> {
    "[ab:=,]{0,4}"
}

fn options() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec((field(), field()), 0..3)
}

fn key(d: &str, n: &str, s: &str, o: &[(String, String)]) -> String {
    make_key(d, n, &Source::from(s), o)
}

fn sorted(o: &[(String, String)]) -> Vec<(String, String)> {
    let mut o = o.to_vec();
    o.sort();
    o
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn keys_collide_only_for_equal_inputs(
        a in (field(), field(), field(), options()),
        b in (field(), field(), field(), options()),
    ) {
        let equal_inputs = a.0 == b.0 && a.1 == b.1 && a.2 == b.2 && sorted(&a.3) == sorted(&b.3);
        prop_assert_eq!(key(&a.0, &a.1, &a.2, &a.3) == key(&b.0, &b.1, &b.2, &b.3), equal_inputs);
    }

    #[test]
    fn every_field_is_fixed_width_hex(a in (field(), field(), field(), options())) {
        let k = key(&a.0, &a.1, &a.2, &a.3);
        let fields: Vec<&str> = k.split(':').collect();
        prop_assert_eq!(fields.len(), 4);
        for f in fields {
            prop_assert_eq!(f.len(), DIGEST_HEX_LEN);
            prop_assert!(f.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn option_order_never_matters(o in options(), seed in any::<u64>()) {
        let mut shuffled = o.clone();
        let len = shuffled.len().max(1);
        shuffled.rotate_left((seed as usize) % len);
        shuffled.reverse();
        prop_assert_eq!(key("d", "n", "s", &o), key("d", "n", "s", &shuffled));
    }

    #[test]
    fn each_input_changes_only_its_own_field(a in (field(), field(), field(), options()), which in 0usize..4) {
        let mut b = a.clone();
        match which {
            0 => b.0.push('x'),
            1 => b.1.push('x'),
            2 => b.2.push('x'),
            _ => b.3.push(("x".into(), "y".into())),
        }
        let ka = key(&a.0, &a.1, &a.2, &a.3);
        let kb = key(&b.0, &b.1, &b.2, &b.3);
        let fa: Vec<&str> = ka.split(':').collect();
        let fb: Vec<&str> = kb.split(':').collect();
        for i in 0..4 {
            prop_assert_eq!(fa[i] == fb[i], i != which, "field {}", i);
        }
    }

    #[test]
    fn digests_of_part_lists_collide_only_for_equal_lists(
        a in proptest::collection::vec("[ab]{0,3}", 0..4),
        b in proptest::collection::vec("[ab]{0,3}", 0..4),
    ) {
        prop_assert_eq!(digest_parts(&a) == digest_parts(&b), a == b);
    }
}
