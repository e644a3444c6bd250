use super::*;

fn canon_with(text: &str, f: impl FnOnce(&mut CanonOptions)) -> Canonical {
    let mut o = CanonOptions::default();
    f(&mut o);
    Renamer::new(&o).unverified().canonicalize(text.as_bytes())
}

fn canon(text: &str, f: impl FnOnce(&mut CanonOptions)) -> String {
    String::from_utf8(canon_with(text, f).text).unwrap()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn symbols_and_scope_locals_are_numbered_by_first_occurrence() {
    assert_eq!(
        canon(
            "for (int i7 = 0; i7 < n; i7++) v3_acc += i2 * v3_acc;",
            |_| {}
        ),
        "for (int kc1 = 0; kc1 < n; kc1++) kc2 += kc3 * kc2;"
    );
}

#[test]
fn bound_names_and_their_derivations_are_renamed() {
    let out = canon("float a_local = a[i1] + b + t42 + tmp_i3;", |o| {
        o.bound = strs(&["a", "b"]);
        o.derivations = vec![
            Derivation::parse("*_local").unwrap(),
            Derivation::parse("t*").unwrap(),
            Derivation::parse("tmp_*").unwrap(),
        ];
    });
    assert_eq!(out, "float kc1 = kc2[kc3] + kc4 + kc5 + kc6;");
}

#[test]
fn a_derivation_needs_a_renamable_base() {
    let out = canon("x_local + tx", |o| {
        o.derivations = vec![
            Derivation::parse("*_local").unwrap(),
            Derivation::parse("t*").unwrap(),
        ];
    });
    assert_eq!(out, "x_local + tx");
}

#[test]
fn kernel_name_becomes_its_token() {
    let c = canon_with("void mm__seg3(float* a) { mm__seg3(a); }", |o| {
        o.kernel_name = Some("mm__seg3".into());
        o.bound = strs(&["a"]);
    });
    assert_eq!(c.text, b"void mm__seg(float* kc1) { mm__seg(kc1); }");
    assert_eq!(c.kernel_token.as_deref(), Some("mm__seg"));
    assert_eq!(
        c.renamed,
        vec![
            ("mm__seg3".to_string(), "mm__seg".to_string()),
            ("a".to_string(), "kc1".to_string())
        ]
    );
}

#[test]
fn keep_and_free_names_are_never_renamed() {
    let out = canon("i1 + i2 + a + b", |o| {
        o.keep = strs(&["i1"]);
        o.free = strs(&["a"]);
        o.bound = strs(&["b"]);
    });
    assert_eq!(out, "i1 + kc1 + a + kc2");
}

#[test]
fn names_after_member_operators_are_kept() {
    let out = canon(
        "i1.i2 + i1->i3 + i1 :: i4 + i1 . /* c */ i5 + i1.\\\ni6",
        |_| {},
    );
    assert_eq!(
        out,
        "kc1.i2 + kc1->i3 + kc1 :: i4 + kc1 . /* c */ i5 + kc1.\\\ni6"
    );
}

#[test]
fn opaque_regions_are_kept() {
    let src = "#define i1 i2\n[[i3::i4]] \"i5\" 'i6' i8";
    assert_eq!(
        canon(src, |_| {}),
        "#define i1 i2\n[[i3::i4]] \"i5\" 'i6' kc1"
    );
}

#[test]
fn comments_are_renamed_like_code_and_quotes_there_open_nothing() {
    assert_eq!(
        canon("i4 /* i4's i9 */ // it's i9\n i9 2i9", |_| {}),
        "kc1 /* kc1's kc2 */ // it's kc2\n kc2 2i9"
    );
}

#[test]
fn splices_inside_a_renamed_identifier_are_spelled_out() {
    assert_eq!(canon("i\\\n1 + i1", |_| {}), "kc1 + kc1");
}

#[test]
fn bound_meeting_free_refuses_bound_renaming_only() {
    let c = canon_with("a + a_l + i3 + v1_x", |o| {
        o.bound = strs(&["a"]);
        o.free = strs(&["a"]);
        o.derivations = vec![Derivation::parse("*_l").unwrap()];
    });
    assert_eq!(c.text, b"a + a_l + kc1 + kc2");
    assert!(!c.bound_renamed);
    assert_eq!(c.reason.as_deref(), Some("bound name `a` is also free"));
}

#[test]
fn reserved_or_keyword_bound_names_refuse_bound_renaming() {
    for bad in ["__x", "_X", "int"] {
        let c = canon_with("a + i1", |o| o.bound = strs(&["a", bad]));
        assert_eq!(c.text, b"a + kc1", "{bad}");
        assert!(c.reason.unwrap().contains(bad));
    }
    // `_x` (lowercase) is not reserved at this level.
    assert!(canon_with("a", |o| o.bound = strs(&["_x"])).bound_renamed);
}

#[test]
fn keywords_are_never_renamed_even_when_derived() {
    assert_eq!(
        canon("float lo", |o| {
            o.bound = strs(&["lo"]);
            o.derivations = vec![Derivation::parse("f*at").unwrap()];
        }),
        "float kc1"
    );
}

#[test]
fn pattern_classes_can_be_switched_off() {
    assert_eq!(
        canon("i1 + v1_a + xi1", |o| {
            o.symbols = false;
            o.scope_locals = false;
            o.derivations = vec![Derivation::parse("x*").unwrap()];
        }),
        "i1 + v1_a + xi1"
    );
}

#[test]
fn a_kept_name_spelled_like_a_canonical_name_moves_the_prefix() {
    let c = canon("i5 + kc1 + kc_1", |_| {});
    assert_eq!(c, "/*kc0 kc__*/kc__1 + kc1 + kc_1");
    // Without the marker the two kernels below would both read `kc1 + kc1`.
    assert_ne!(canon("i5 + kc1", |_| {}), canon("i5 + i5", |_| {}));
}

#[test]
fn a_kept_name_equal_to_the_kernel_token_moves_the_prefix() {
    let recursive = canon("void k__seg(){ k__seg(); }", |o| {
        o.kernel_name = Some("k__seg".into())
    });
    let calls_other = canon("void k__seg1(){ k__seg(); }", |o| {
        o.kernel_name = Some("k__seg1".into())
    });
    assert_eq!(recursive, "void k__seg(){ k__seg(); }");
    assert_eq!(calls_other, "/*kc0 kc_*/void kc_0(){ k__seg(); }");
}

#[test]
fn a_token_spelled_like_a_canonical_name_moves_the_prefix() {
    assert_eq!(
        canon("void kc1(){ i1; }", |o| o.kernel_name = Some("kc1".into())),
        "/*kc0 kc_*/void kc_0(){ kc_1; }"
    );
}

#[test]
fn an_unmarked_text_never_contains_kc0() {
    // `kc0` kept forces the marked form, so the marker cannot be forged.
    assert_eq!(canon("/*kc0 kc_*/i1", |_| {}), "/*kc0 kc_*//*kc0 kc_*/kc_1");
}

#[test]
fn keywords_are_recognised() {
    assert!(is_keyword(b"int") && is_keyword(b"__global__") && is_keyword(b"while"));
    assert!(!is_keyword(b"x") && !is_keyword(b"Int") && !is_keyword(b"ints"));
}

#[test]
fn derivation_templates_parse_with_one_star() {
    assert_eq!(
        Derivation::parse("p*s"),
        Some(Derivation {
            prefix: "p".into(),
            suffix: "s".into()
        })
    );
    assert_eq!(Derivation::parse("ps"), None);
    assert_eq!(Derivation::parse("p**s"), None);
}

#[test]
fn a_raw_keyed_kernel_is_never_renamed_and_the_binder_is_not_consulted() {
    // `i1` is a symbol the binder verifies, but `__LINE__` raw-keys the kernel.
    let text = b"void k(float* a) { for (int i1 = 0; i1 < 4; i1++) a[i1] = __LINE__; }";
    let o = CanonOptions {
        kernel_name: Some("k".into()),
        infer: true,
        ..CanonOptions::default()
    };
    let c = Renamer::new(&o).canonicalize(text);
    assert!(c.raw.is_some());
    assert_eq!(c.text, [RAW_MARKER, text.as_slice()].concat());
    assert!(c.renamed.is_empty() && c.inferred.is_empty() && c.kept.is_empty());
    assert_eq!(c.given_up, None);
    // Without it the same kernel is renamed, where the binder verifies.
    let text = b"#define N i1\nvoid k(float* a) { for (int i1 = 0; i1 < 4; i1++) a[i1] = 0; for (int i2 = 0; i2 < 4; i2++) a[i2] = 1; }";
    let c = Renamer::new(&o).canonicalize(text);
    assert_eq!(c.raw, None);
    assert!(c.kept.iter().any(|(n, _)| n == "i1"));
    assert!(c.renamed.iter().any(|(n, _)| n == "i2"));
}

#[test]
fn increment_decimal_counts_in_place_before_the_slack() {
    let mut name = b"kc".to_vec();
    name.extend_from_slice(&[0; 4]);
    let mut end = 2;
    for n in 1..=1001 {
        end = super::names::increment_decimal(&mut name, 2, end);
        assert_eq!(&name[..end], format!("kc{n}").as_bytes());
        assert_eq!(name[end..], [0; 4], "the slack moves up, untouched");
    }
}

#[test]
fn a_trigraph_raw_keys_the_kernel_when_the_scan_rides_along_the_pass() {
    // The scan riding along the pass leaves the trigraph search to the
    // binder, which gives a text holding one up whole: if it ever stopped
    // searching, these kernels would be renamed.
    for text in [
        &b"void k(float* a) { a[0] = 1; /* ??= */ }"[..],
        b"void k(float* a) { a[0] = 1; } // ??/",
        b"void k(const char* s) { s = \"??<\"; }",
    ] {
        for kernel_name in [None, Some("k".to_string())] {
            let o = CanonOptions {
                kernel_name,
                infer: true,
                ..CanonOptions::default()
            };
            let r = Renamer::new(&o);
            let c = r.canonicalize(text);
            assert_eq!(c.raw.as_deref(), Some("holds a trigraph sequence"));
            assert_eq!(r.key_form(text).text, [RAW_MARKER, text].concat());
        }
    }
}

#[test]
fn a_plain_directive_still_shows_the_kernel_name_and_position_macros() {
    // A plain directive hands the scan only the words it can care about.
    let o = CanonOptions {
        kernel_name: Some("k".into()),
        ..CanonOptions::default()
    };
    for (text, raw) in [
        (
            &b"#pragma unroll k\nvoid k(float* a) { a[0] = 1; }"[..],
            true,
        ),
        (
            b"#pragma unroll __LINE__\nvoid k(float* a) { a[0] = 1; }",
            true,
        ),
        (b"#pragma unroll kk\nvoid k(float* a) { a[0] = 1; }", false),
        (b"#pragma unroll 4\nvoid k(float* a) { a[0] = 1; }", false),
    ] {
        let c = Renamer::new(&o).canonicalize(text);
        assert_eq!(c.raw.is_some(), raw, "{}", String::from_utf8_lossy(text));
    }
    let c = Renamer::new(&o).canonicalize(b"#pragma x __TIME__\nvoid k(float* a) { a[0] = 1; }");
    assert!(c.uncacheable.is_some());
}

#[test]
fn inference_lists_each_unverified_declared_name_once() {
    // `i1` is refused (the rules select it), `x` is only declared: both are
    // kept for the same reason, each listed once, refused names first.
    let text = b"void k(float* a) {\n#if 1\n  float x = 0; int i1 = 0;\n#endif\n  a[0] = 1;\n}\n";
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let c = Renamer::new(&o).canonicalize(text);
    let why = crate::canon::bind::Reason::Conditional
        .describe()
        .to_string();
    assert_eq!(
        c.kept,
        vec![("i1".to_string(), why.clone()), ("x".to_string(), why)]
    );
    assert_eq!(c.inferred, vec!["a".to_string()]);
}

/// Review 2026-12-02 (GPU F1, F2 note): a driver defines macros in the
/// reserved namespace no list covers (NVRTC's `__volatile__`, PoCL's
/// `_CL_*`), so inference keeps every reserved name; `_q` is not reserved.
#[test]
fn inference_keeps_every_name_in_the_reserved_namespace() {
    let text =
        b"void k(float* a) { float __q = 1; float _Q = 2; float _q = 3; a[0] = __q + _Q + _q; }\n";
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let c = Renamer::new(&o).canonicalize(text);
    assert_eq!(c.inferred, vec!["a".to_string(), "_q".to_string()]);
    let kept: Vec<&str> = c.kept.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(kept, ["__q", "_Q"]);
    assert!(
        c.kept
            .iter()
            .all(|(_, why)| why.contains("reserved namespace")),
        "{:?}",
        c.kept
    );
}

#[test]
fn a_position_macro_or_asm_in_code_is_seen_when_only_one_name_starts_with_an_underscore() {
    // The walk hands the riding scan no name at all when no name's spelling
    // starts with `_` or `a`: one such name among plain ones must still be
    // handed over.
    for (text, raw) in [
        (
            &b"void k(float* x) { int i1 = __LINE__; x[i1] = 1; }"[..],
            true,
        ),
        (b"void k(float* x) { int i1 = 0; x[i1] = 1; }", false),
    ] {
        for kernel_name in [None, Some("k".to_string())] {
            let o = CanonOptions {
                kernel_name,
                ..CanonOptions::default()
            };
            let c = Renamer::new(&o).canonicalize(text);
            assert_eq!(c.raw.is_some(), raw, "{}", String::from_utf8_lossy(text));
        }
    }
    let o = CanonOptions {
        kernel_name: Some("k".into()),
        ..CanonOptions::default()
    };
    let c = Renamer::new(&o).canonicalize(b"void k(const char* s) { s = \"x\"; }\nchar* t = \"asm .incbin\";\nvoid f(void) { asm(\"nop\"); }");
    assert!(c.uncacheable.is_some(), "{:?}", c.reason);
}

/// A text longer than the binder takes is raw-keyed whole, nothing renamed
/// (at a low limit: the path a text over 4 GiB takes); at the limit it is
/// renamed as ever.
#[test]
fn a_text_over_the_limit_is_raw_keyed() {
    let text = b"void k(float* a) { for (int i2 = 0; i2 < 4; i2++) a[i2] = 1; }";
    let o = CanonOptions {
        kernel_name: Some("k".into()),
        infer: true,
        ..CanonOptions::default()
    };
    let at = Renamer::new(&o).with_limit(text.len()).canonicalize(text);
    assert!(at.raw.is_none());
    assert!(!at.renamed.is_empty());
    let over = Renamer::new(&o)
        .with_limit(text.len() - 1)
        .canonicalize(text);
    assert_eq!(over.text, raw_text(text));
    assert!(over.renamed.is_empty());
    assert!(over.raw.as_deref().unwrap().contains("bytes long"));
    assert_eq!(
        Renamer::new(&o)
            .with_limit(text.len() - 1)
            .canonical_text(text),
        raw_text(text)
    );
    // What makes a kernel uncacheable still does over the limit.
    let text = b"void k(const char* s) { s = \"x\"; }\nchar* t = \"asm .incbin\";\nvoid f(void) { asm(\"nop\"); }";
    assert!(Renamer::new(&o).canonicalize(text).uncacheable.is_some());
    let over = Renamer::new(&o)
        .with_limit(text.len() - 1)
        .canonicalize(text);
    assert!(over.uncacheable.is_some());
}

#[test]
fn a_raw_keyed_renamer_renames_nothing_and_still_finds_the_uncacheable() {
    let o = CanonOptions {
        kernel_name: Some("k".into()),
        infer: true,
        ..CanonOptions::default()
    };
    let text = b"void k(float* a) { for (int i2 = 0; i2 < 4; i2++) a[i2] = 1; }";
    let renamer = Renamer::new(&o).raw_keyed("option `-g`");
    let raw = renamer.key_form(text);
    assert_eq!(raw.text, raw_text(text));
    assert_eq!(raw.kernel_token, Some(&b"k"[..]), "its full name");
    let full = Renamer::new(&o).raw_keyed("option `-g`").canonicalize(text);
    assert!(full.renamed.is_empty());
    assert_eq!(full.raw.as_deref(), Some("option `-g`"));
    let timed = b"void k(const char** s) { *s = __TIME__; }";
    assert!(renamer.key_form(timed).uncacheable.is_some());
}

#[test]
fn a_local_spelled_like_a_namespace_keeps_its_name() {
    // Review 2026-12-02, GPU F11: `float cfg; cfg::s * cfg` and
    // `float alt; alt::s * alt` read different namespaces' `s`.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let r = Renamer::new(&o);
    let text = |name: &str| {
        let t = format!(
            "__global__ void k(float* x) {{ float {name} = 1.0f; x[0] = {name}::s * {name}; }}"
        );
        r.canonicalize(t.as_bytes()).text
    };
    let cfg = text("cfg");
    assert_ne!(cfg, text("alt"));
    assert_eq!(
        String::from_utf8(cfg).unwrap(),
        "__global__ void k(float* kc1) { float cfg = 1.0f; kc1[0] = cfg::s * cfg; }"
    );
}

#[test]
fn a_local_spelled_like_a_designated_member_keeps_its_name() {
    // Review 2026-12-02, GPU F14: `div_t d = { quot: quot }` and
    // `{ rem: rem }` set different members of a header's struct.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let r = Renamer::new(&o);
    let text = |name: &str| {
        let t = format!(
            "int k(int v) {{ int {name} = v; div_t d = {{ {name}: {name} }}; return d.rem * 10 + d.quot; }}"
        );
        r.canonicalize(t.as_bytes()).text
    };
    let quot = text("quot");
    assert_ne!(quot, text("rem"));
    assert_eq!(
        String::from_utf8(quot).unwrap(),
        "int k(int kc1) { int quot = kc1; div_t d = { quot: quot }; return d.rem * 10 + d.quot; }"
    );
}

#[test]
fn vec_step_is_an_opencl_keyword_never_renamed() {
    // Review 2026-12-02, GPU F15: `float vec_step = 3.0f;` does not compile
    // as OpenCL C, so it must not share its twin's key, whose `q` does.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let r = Renamer::new(&o);
    let kernel = |name: &str| {
        format!("__kernel void k(__global float* x) {{ float {name} = 3.0f; x[0] = {name}; }}")
    };
    let vs = r.canonicalize(kernel("vec_step").as_bytes());
    assert_ne!(vs.text, r.canonicalize(kernel("q").as_bytes()).text);
    assert!(
        vs.kept
            .contains(&("vec_step".to_string(), "is a keyword".to_string())),
        "{:?}",
        vs.kept
    );
    // Clang's other OpenCL operator is in the reserved namespace: kept too.
    let astype = r.canonicalize(kernel("__builtin_astype").as_bytes());
    assert!(String::from_utf8(astype.text)
        .unwrap()
        .contains("float __builtin_astype = 3.0f"));
    // A renderer binding it refuses bound renaming, as for any keyword.
    let c = canon_with("float vec_step = a;", |o| {
        o.bound = strs(&["vec_step", "a"])
    });
    assert_eq!(
        c.reason.as_deref(),
        Some("bound name `vec_step` is a keyword")
    );
}

#[test]
fn a_name_an_outside_macro_may_paste_keeps_its_name() {
    // Review 2026-12-02, GPU F19b: with a header's `#define CAT(a, b) a##b`,
    // `CAT(q, 1)` reads the local `q1`, which no token of the kernel spells.
    let o = CanonOptions {
        infer: true,
        ..CanonOptions::default()
    };
    let cat: std::sync::Arc<crate::canon::MacroNames> =
        std::sync::Arc::new(["CAT"].into_iter().collect());
    let r = Renamer::new(&o)
        .with_macros(cat.clone())
        .with_pasting(cat.clone());
    let text = |local: &str| {
        format!("void k(float* x) {{ float {local} = x[0], acc = 1.0f; x[1] = CAT(q, 1) + acc; }}")
    };
    let q1 = r.canonicalize(text("q1").as_bytes());
    assert_ne!(q1.text, r.canonicalize(text("r1").as_bytes()).text);
    assert_eq!(
        String::from_utf8(q1.text).unwrap(),
        "void k(float* kc1) { float q1 = kc1[0], kc2 = 1.0f; kc1[1] = CAT(q, 1) + kc2; }"
    );
    assert!(q1.kept.contains(&(
        "q1".to_string(),
        "may be spelled by a paste (`##`) in a macro the kernel uses".to_string()
    )));
    // A kernel whose own name a paste may spell is raw-keyed: its kernel
    // token would not follow `CAT(k__seg, 1)`.
    let seg = |n: &str| {
        let o = CanonOptions {
            infer: true,
            kernel_name: Some(format!("k__seg{n}")),
            ..CanonOptions::default()
        };
        Renamer::new(&o)
            .with_macros(cat.clone())
            .with_pasting(cat.clone())
            .canonicalize(
                format!("void k__seg{n}(float* x) {{ x[0] = CAT(k__seg, 1)(x); }}").as_bytes(),
            )
    };
    assert!(seg("1").raw.is_some());
    assert_ne!(seg("1").text, seg("2").text);
}
