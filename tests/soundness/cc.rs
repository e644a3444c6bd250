//! The system C compiler: every case runs its kernels on the host.

use std::path::Path;

use kcache::backend::cc::CcBackend;
use kcache::backend::BackendError;
use kcache::cache::hooks::Hooks;

use crate::harness::{k, Case, Spec, Subject};

impl Subject for CcBackend {
    const NAME: &'static str = "cc";

    fn open(dir: &Path, hooks: &Hooks) -> Result<Self, BackendError> {
        CcBackend::builder().source_dir(dir).hooks(hooks).build()
    }
}

/// `top`, then `void name(float* x, int n)` running `body` for each `x[i0]`.
fn kern(name: &str, top: &str, body: &str) -> String {
    format!(
        "{top}\nvoid {name}(float* x, int n) {{\n  for (int i0 = 0; i0 < n; i0++) {{\n    {body}\n  }}\n}}\n"
    )
}

/// A kernel named `name`: [`kern`] as a [`Spec`].
fn kc(name: &str, top: &str, body: &str) -> Spec {
    k(name, kern(name, top, body))
}

/// `#define` hidden from a lexer that misreads a line (`hide`, e.g. a
/// digraph or a lone CR), then a real `#ifdef` of the name it defines: with
/// `name` = `i3` the kernel adds 11, with any other name 1 (`#ifdef i3` is a
/// preprocessor line, never renamed).
fn hidden_define(hide: &str, name: &str) -> Spec {
    k(
        "kl",
        format!(
            "{hide}{name} 5\nvoid kl(float* x, int n) {{\n  for (int i0 = 0; i0 < n; i0++) {{\n    x[i0] += 1.0f;\n#ifdef i3\n    x[i0] += 10.0f;\n#endif\n  }}\n}}\n"
        ),
    )
}

/// `__TIME__`-like text as seconds within the hour: `digits` are the
/// offsets of `mm` and `ss` in `macro`.
fn clock(name: &str, macro_: &str, m: usize, s: usize) -> Spec {
    kc(
        name,
        &format!("static const char kc_when[] = {macro_};"),
        &format!(
            "x[i0] = (kc_when[{m}] - '0') * 600 + (kc_when[{}] - '0') * 60 + (kc_when[{s}] - '0') * 10 + (kc_when[{}] - '0');",
            m + 1,
            s + 1
        ),
    )
}

/// A header `rel` defining `KC_V` as `v`.
fn v_header(v: &str) -> String {
    format!("#define KC_V {v}\n")
}

/// A kernel adding `KC_V` after `include`.
fn adds_v(include: &str) -> Spec {
    kc("kh", include, "x[i0] += KC_V;")
}

/// A header defining the globals `v1_a` (100) and `v1_b` (200), once.
const GLOB_HEADER: &str =
    "#ifndef KC_GLOB_H\n#define KC_GLOB_H\nfloat v1_a = 100.0f, v1_b = 200.0f;\n#endif\n";

/// Two segment kernels of one routine, `f__seg0` and `f__seg1`, with one
/// text up to the renaming (each `top` and `body`).
fn segments(top: &str, body: &str) -> Case {
    Case::new(kc("f__seg0", top, body), kc("f__seg1", top, body))
}

cases!(CcBackend {
    // ---------------------------------------------- 1. group leaks ---
    /// A's `#define` before B's `#ifndef` default.
    group_leak_macro_in_a_changes_default_in_b: Case::new(
        kc("ka", "#define KC_SCALE 3.0f", "x[i0] *= KC_SCALE;"),
        kc("kb", "#ifndef KC_SCALE\n#define KC_SCALE 2.0f\n#endif", "x[i0] *= KC_SCALE;"),
    ),
    /// B uses a macro only A defines: B alone does not compile.
    group_leak_macro_in_a_defines_name_used_by_b: Case::new(
        kc("ka", "#define KC_OFF 1.0f", "x[i0] += KC_OFF;"),
        kc("kb", "", "x[i0] += KC_OFF + 1.0f;"),
    ),
    /// A's macro is spelled like B's scope local: together they break B.
    group_leak_macro_in_a_breaks_declaration_in_b: Case::new(
        kc("ka", "#define v1_s 4.0f", "x[i0] *= v1_s;"),
        kc("kb", "", "float v1_s = 5.0f; x[i0] *= v1_s;"),
    ),
    /// A's macro renames B's entry point away.
    group_leak_macro_in_a_renames_b_kernel: Case::new(
        kc("ka", "#define kb kc_elsewhere", "x[i0] += 1.0f;"),
        kc("kb", "", "x[i0] += 2.0f;"),
    ),
    /// An unpopped `#pragma pack` in A changes B's struct layout.
    group_leak_pragma_pack_in_a_changes_layout_in_b: Case::new(
        kc("ka", "#pragma pack(1)\nstruct ka_s { char c; float f; };", "x[i0] = sizeof(struct ka_s);"),
        kc("kb", "struct kb_s { char c; float f; };", "x[i0] = sizeof(struct kb_s) + 10;"),
    ),
    /// A poisons a name B defines.
    group_leak_pragma_poison_in_a_rejects_b: Case::new(
        kc("ka", "#pragma GCC poison kc_gone", "x[i0] += 1.0f;"),
        kc("kb", "static float kc_gone(float v) { return v * 2.0f; }", "x[i0] = kc_gone(x[i0]);"),
    ),
    /// B calls a function only A defines.
    group_leak_helper_defined_in_a_used_by_b: Case::new(
        kc("ka", "float kc_helper(float v) { return v * 3.0f; }", "x[i0] = kc_helper(x[i0]);"),
        kc("kb", "float kc_helper(float v);", "x[i0] = kc_helper(x[i0]) + 1.0f;"),
    ),
    /// B calls a function it never declared; A defines it.
    group_leak_implicit_declaration_resolved_by_a: Case::new(
        kc("ka", "int kc_implicit(int v) { return v * 2; }", "x[i0] += kc_implicit(1);"),
        kc("kb", "", "x[i0] += kc_implicit(3);"),
    ),
    /// B uses a typedef only A declares.
    group_leak_typedef_in_a_used_by_b: Case::new(
        kc("ka", "typedef float kc_real;", "kc_real t = 2.0f; x[i0] *= t;"),
        kc("kb", "", "kc_real t = 3.0f; x[i0] *= t;"),
    ),
    /// A and B define one struct tag differently.
    group_leak_struct_tag_defined_by_both: Case::new(
        kc("ka", "struct kc_pt { float a; };", "struct kc_pt p = { 2.0f }; x[i0] *= p.a;"),
        kc(
            "kb",
            "struct kc_pt { float a; float b; };",
            "struct kc_pt p = { 3.0f, 1.0f }; x[i0] = x[i0] * p.a + p.b;",
        ),
    ),
    /// A and B each define a static global of one name.
    group_leak_static_global_defined_by_both: Case::new(
        kc("ka", "static float kc_g = 2.0f;", "x[i0] *= kc_g;"),
        kc("kb", "static float kc_g = 3.0f;", "x[i0] *= kc_g;"),
    ),
    /// B uses an enum constant only A declares.
    group_leak_enum_constant_in_a_used_by_b: Case::new(
        kc("ka", "enum { KC_K = 3 };", "x[i0] += KC_K;"),
        kc("kb", "", "x[i0] += KC_K + 1;"),
    ),
    /// `__COUNTER__` counts A's uses before B's.
    group_leak_counter_in_a_shifts_b: Case::new(
        kc("ka", "static const int ka_c = __COUNTER__;", "x[i0] += ka_c;"),
        kc("kb", "static const int kb_c = __COUNTER__;", "x[i0] += kb_c + 10;"),
    ),
    /// A `#line` at A's end must not move B's `__LINE__`.
    group_leak_line_directive_at_end_of_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "#line 40\n"),
        kc("kb", "", "x[i0] = __LINE__;"),
    ),
    /// A trailing backslash in A splices the next line (what the backend
    /// writes before B) into A's `#define`, moving B's `__LINE__`.
    group_leak_backslash_at_end_of_a_moves_b_line: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "#define KC_TAIL 1 \\"),
        kc("kb", "", "x[i0] = __LINE__;"),
    ),
    /// A's constructor (weakly) calls into B when B is in its object.
    group_leak_constructor_in_a_runs_code_of_b: Case::new(
        kc(
            "ka",
            "void kb_hook(void) __attribute__((weak));\n__attribute__((constructor)) static void ka_init(void) { if (kb_hook) kb_hook(); }",
            "x[i0] += 1.0f;",
        ),
        kc(
            "kb",
            "static float kb_state = 1.0f;\nvoid kb_hook(void) { kb_state = 5.0f; }",
            "x[i0] *= kb_state;",
        ),
    ),
    /// B's weak reference resolves to A's definition in one object.
    group_leak_weak_symbol_resolved_by_a: Case::new(
        kc("ka", "float kc_weak_v = 7.0f;", "x[i0] += kc_weak_v;"),
        kc(
            "kb",
            "extern float kc_weak_v __attribute__((weak));",
            "x[i0] += &kc_weak_v ? kc_weak_v : -1.0f;",
        ),
    ),
    /// A defines, by `alias`, a function B calls.
    group_leak_alias_in_a_defines_function_b_calls: Case::new(
        kc(
            "ka",
            "static float ka_impl(float v) { return v + 2.0f; }\nfloat kc_aliased(float v) __attribute__((alias(\"ka_impl\")));",
            "x[i0] = kc_aliased(x[i0]);",
        ),
        kc("kb", "float kc_aliased(float v);", "x[i0] = kc_aliased(x[i0]) * 2.0f;"),
    ),
    /// A ends inside a comment that B's first line closes.
    group_leak_unterminated_comment_at_end_of_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "/* unterminated\n"),
        k("kb", format!("// closes it: */\n{}", kern("kb", "", "x[i0] += 2.0f;"))),
    ),
    /// A ends inside an `#if` that B closes: each alone fails.
    group_leak_unterminated_if_in_a_closed_by_b: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "#if 1\n"),
        k("kb", format!("#endif\n{}", kern("kb", "", "x[i0] += 2.0f;"))),
    )
    .alike(),
    /// A hides everything after it: B's entry point is not exported.
    group_leak_visibility_pragma_in_a_hides_b: Case::new(
        kc("ka", "", "x[i0] += 1.0f;").text_after("#pragma GCC visibility push(hidden)\n"),
        kc("kb", "", "x[i0] += 2.0f;"),
    ),
    /// A undefines a predefined macro B uses.
    group_leak_undef_in_a_of_predefined_macro: Case::new(
        kc("ka", "", "x[i0] += 1.0f;").text_after("#undef unix\n"),
        kc("kb", "", "x[i0] += 2.0f * unix;"),
    ),
    /// B uses what a header A includes declares.
    group_leak_header_included_by_a_used_by_b: Case::new(
        kc("ka", "#define _GNU_SOURCE\n#include <math.h>", "x[i0] += (float)M_PI;"),
        kc("kb", "", "x[i0] += 2.0f * (float)M_PI;"),
    ),
    /// B's name is a helper A defines.
    kernel_name_of_b_is_a_helper_in_a: Case::new(
        kc("ka", "static float kb(float v) { return v * 2.0f; }", "x[i0] = kb(x[i0]);"),
        kc("kb", "", "x[i0] += 3.0f;"),
    ),

    // --------------------------------------------------- 2. headers ---
    header_quoted_edited_between_compiles: Case::same(adds_v("#include \"kc_q.h\""))
        .file("kc_q.h", &v_header("1.0f"))
        .edit("kc_q.h", &v_header("2.0f")),
    header_angle_in_include_dir_edited: Case::same(
        adds_v("#include <kc_angle.h>").opts(&["-I@DIR@/inc"]),
    )
    .file("inc/kc_angle.h", &v_header("1.0f"))
    .edit("inc/kc_angle.h", &v_header("2.0f")),
    system_header_edit: Case::same(adds_v("#include <kc_sys.h>").opts(&["-isystem", "@DIR@/sys"]))
        .file("sys/kc_sys.h", &v_header("1.0f"))
        .edit("sys/kc_sys.h", &v_header("2.0f")),
    header_idirafter_edited: Case::same(
        adds_v("#include <kc_after.h>").opts(&["-idirafter", "@DIR@/after"]),
    )
    .file("after/kc_after.h", &v_header("1.0f"))
    .edit("after/kc_after.h", &v_header("2.0f")),
    header_include_next_edited: Case::same(
        adds_v("#include <kc_next.h>").opts(&["-I@DIR@/a", "-I@DIR@/b"]),
    )
    .file("a/kc_next.h", "#include_next <kc_next.h>\n")
    .file("b/kc_next.h", &v_header("1.0f"))
    .edit("b/kc_next.h", &v_header("2.0f")),
    header_has_include_appears_between_compiles: Case::same(adds_v(
        "#if __has_include(\"kc_opt.h\")\n#include \"kc_opt.h\"\n#else\n#define KC_V 1.0f\n#endif",
    ))
    .edit("kc_opt.h", &v_header("2.0f")),
    /// Review 2026-12-02, C F14: the unit was `<work>/kernels.c`, which
    /// the compiler searched first, so this answer was "found" from the
    /// start, whatever the source directory held.
    header_named_like_the_unit_file_appears: Case::same(adds_v(
        "#if __has_include(\"kernels.c\")\n#define KC_V 2.0f\n#else\n#define KC_V 1.0f\n#endif",
    ))
    .edit("kernels.c", "\n"),
    header_shadowed_by_a_new_file_earlier_in_the_search: Case::same(
        adds_v("#include <kc_sh.h>").opts(&["-I@DIR@/a", "-I@DIR@/b"]),
    )
    .file("b/kc_sh.h", &v_header("1.0f"))
    .edit("a/kc_sh.h", &v_header("2.0f")),
    header_edited_keeping_size_and_mtime: Case::same(adds_v("#include \"kc_st.h\""))
        .file("kc_st.h", &v_header("1.0f"))
        .edit_keeping_stat("kc_st.h", &v_header("7.0f")),
    header_quoted_relative_to_including_header: Case::same(
        adds_v("#include <kc_outer.h>").opts(&["-I@DIR@/inc"]),
    )
    .file("inc/kc_outer.h", "#include \"../side/kc_sib.h\"\n")
    .file("side/kc_sib.h", &v_header("1.0f"))
    .edit("side/kc_sib.h", &v_header("2.0f")),
    header_forced_include_edited: Case::same(
        kc("kh", "", "x[i0] += KC_V;").opts(&["-include", "@DIR@/kc_forced.h"]),
    )
    .file("kc_forced.h", &v_header("1.0f"))
    .edit("kc_forced.h", &v_header("2.0f")),
    header_iquote_dir_edited: Case::same(
        adds_v("#include \"kc_iq.h\"").opts(&["-iquote", "@DIR@/q"]),
    )
    .file("q/kc_iq.h", &v_header("1.0f"))
    .edit("q/kc_iq.h", &v_header("2.0f")),
    /// The header is a symbolic link, pointed elsewhere between compiles.
    header_symlink_retargeted: Case::same(adds_v("#include \"kc_ln.h\""))
        .file("v1.h", &v_header("1.0f"))
        .file("v2.h", &v_header("2.0f"))
        .symlink("kc_ln.h", "v1.h")
        .relink("kc_ln.h", "v2.h"),
    /// The header found first goes away: the search finds a later one.
    header_removed_falls_back_to_a_later_dir: Case::same(
        adds_v("#include <kc_fb.h>").opts(&["-I@DIR@/a", "-I@DIR@/b"]),
    )
    .file("a/kc_fb.h", &v_header("1.0f"))
    .file("b/kc_fb.h", &v_header("2.0f"))
    .remove("a/kc_fb.h"),
    /// `#include` of a macro: the file read depends on preprocessing
    /// (refusing it is sound; compiling it must key what it reads).
    header_computed_include_edited: Case::same(adds_v("#define KC_H \"kc_c.h\"\n#include KC_H"))
        .file("kc_c.h", &v_header("1.0f"))
        .edit("kc_c.h", &v_header("2.0f"))
        .alike(),
    /// The header's name comes from an option.
    header_named_by_an_option_edited: Case::same(
        adds_v("#include KC_H").opts(&["-DKC_H=\"kc_o.h\""]),
    )
    .file("kc_o.h", &v_header("1.0f"))
    .edit("kc_o.h", &v_header("2.0f"))
    .alike(),
    /// `.incbin` makes the assembler read a file the preprocessor never sees.
    asm_incbin_reads_a_file: Case::same(kc(
        "kh",
        "__asm__(\".pushsection .rodata\\n.globl kc_blob\\nkc_blob:\\n.incbin \\\"@DIR@/kc_blob.bin\\\"\\n.popsection\");\nextern const unsigned char kc_blob[];",
        "x[i0] += kc_blob[0];",
    ))
    .file("kc_blob.bin", "A")
    .edit("kc_blob.bin", "B"),
    /// The same `.incbin`, handed to the kernel's `asm` by a header macro:
    /// the kernel itself spells no string.
    asm_incbin_from_a_header_macro: Case::same(kc(
        "kh",
        "#include \"kc_asm.h\"\nKC_BLOB\nextern const unsigned char kc_blob[];",
        "x[i0] += kc_blob[0];",
    ))
    .file(
        "kc_asm.h",
        "#define KC_BLOB __asm__(\".pushsection .rodata\\n.globl kc_blob\\nkc_blob:\\n.incbin \\\"@DIR@/kc_blob.bin\\\"\\n.popsection\");\n",
    )
    .file("kc_blob.bin", "A")
    .edit("kc_blob.bin", "B"),

    // --------------------------------------------------- 3. options ---
    option_defines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-Di7=3.0f", "-Di8=5.0f"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-Di7=3.0f", "-Di8=5.0f"]),
    ),
    option_defines_scope_local_name: Case::new(
        kc("ko", "", "x[i0] *= v1_x;").opts(&["-Dv1_x=3.0f", "-Dv2_x=5.0f"]),
        kc("ko", "", "x[i0] *= v2_x;").opts(&["-Dv1_x=3.0f", "-Dv2_x=5.0f"]),
    ),
    option_defines_bound_name: Case::new(
        kc("ko", "", "x[i0] *= n1_w;").opts(&["-Dn1_w=3.0f", "-Dn2_w=5.0f"]).bound(&["n1_w"]),
        kc("ko", "", "x[i0] *= n2_w;").opts(&["-Dn1_w=3.0f", "-Dn2_w=5.0f"]).bound(&["n2_w"]),
    ),
    /// `-U` leaves B's name undeclared.
    option_undefines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-Di7=3.0f", "-Di8=5.0f", "-Ui8"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-Di7=3.0f", "-Di8=5.0f", "-Ui8"]),
    ),
    option_imacros_defines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-imacros", "@DIR@/kc_m.h"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-imacros", "@DIR@/kc_m.h"]),
    )
    .file("kc_m.h", "#define i7 3.0f\n#define i8 5.0f\n"),
    option_forced_include_defines_scope_local_name: Case::new(
        kc("ko", "", "x[i0] *= v1_k;").opts(&["-include", "@DIR@/kc_f.h"]),
        kc("ko", "", "x[i0] *= v2_k;").opts(&["-include", "@DIR@/kc_f.h"]),
    )
    .file("kc_f.h", "#define v1_k 3.0f\n#define v2_k 5.0f\n"),
    /// `unix` is predefined (1): bound, it would be renamed like a declared name.
    predefined_macro_unix_is_not_a_bound_name: Case::new(
        kc("kp", "", "x[i0] += n1_y;").bound(&["n1_y"]),
        kc("kp", "", "x[i0] += unix;").bound(&["unix"]),
    ),
    predefined_macro_linux_is_not_a_bound_name: Case::new(
        kc("kp", "", "x[i0] += 2.0f * n1_y;").bound(&["n1_y"]),
        kc("kp", "", "x[i0] += 2.0f * linux;").bound(&["linux"]),
    ),
    /// A static library found through `LIBRARY_PATH`, rebuilt between compiles.
    link_input_static_library_edited: Case::same(
        kc("kl", "float kcx_val(void);", "x[i0] += kcx_val();").opts(&["-lkcx"]),
    )
    .env("LIBRARY_PATH", "@DIR@")
    .library("libkcx.a", "float kcx_val(void) { return 2.0f; }\n")
    .edit_library("libkcx.a", "float kcx_val(void) { return 5.0f; }\n"),
    /// A static library named by path on the command line.
    link_input_archive_named_by_path: Case::same(
        kc("kl", "float kcy_val(void);", "x[i0] += kcy_val();").opts(&["@DIR@/libkcy.a"]),
    )
    .library("libkcy.a", "float kcy_val(void) { return 2.0f; }\n")
    .edit_library("libkcy.a", "float kcy_val(void) { return 5.0f; }\n")
    .alike(),

    // ----------------------------------------------- environment ---
    /// `CPATH` set for B's process puts a shadowing `limits.h` first.
    environment_cpath_shadows_system_header: Case::same(adds_v(
        "#include <limits.h>\n#ifdef KC_SHADOWED\n#define KC_V 2.0f\n#else\n#define KC_V 1.0f\n#endif",
    ))
    .file("shadow/limits.h", "#define KC_SHADOWED 1\n#include_next <limits.h>\n")
    .env_for_b("CPATH", "@DIR@/shadow")
    .alike(),
    environment_c_include_path_shadows_system_header: Case::same(adds_v(
        "#include <limits.h>\n#ifdef KC_SHADOWED\n#define KC_V 2.0f\n#else\n#define KC_V 1.0f\n#endif",
    ))
    .file("shadow/limits.h", "#define KC_SHADOWED 1\n#include_next <limits.h>\n")
    .env_for_b("C_INCLUDE_PATH", "@DIR@/shadow")
    .alike(),

    // -------------------------------------- 4. time and position ---
    time_macro_is_uncacheable: Case::same(clock("kt", "__TIME__", 3, 6)).fresh(),
    time_date_and_time_macros_are_uncacheable: Case::same(clock("kt", "__DATE__ \" \" __TIME__", 15, 18)).fresh(),
    /// The translation unit's `__TIMESTAMP__` is the time it was written.
    time_timestamp_macro_is_uncacheable: Case::same(clock("kt", "__TIMESTAMP__", 14, 17)).fresh(),
    /// A header's `__TIMESTAMP__` is its mtime: touched, its text unchanged.
    time_timestamp_macro_in_header_is_uncacheable: Case::same(kc(
        "kt",
        "#include \"kc_ts.h\"",
        "x[i0] += kc_ts[i0];",
    ))
    .file("kc_ts.h", "static const char kc_ts[] = __TIMESTAMP__;\n")
    .touched("kc_ts.h", 1_000_000_000)
    .touch("kc_ts.h", 1_500_000_000),
    position_file_macro_names_the_segment: segments("", "x[i0] = __FILE__[sizeof(__FILE__) - 2];"),
    position_file_name_macro_names_the_segment: segments("", "x[i0] = __FILE_NAME__[6];"),
    position_func_macro_names_the_segment: segments("", "x[i0] = __func__[6];"),
    position_function_macro_names_the_segment: segments("", "x[i0] = __FUNCTION__[6];"),
    position_pretty_function_names_the_segment: segments("", "x[i0] = __PRETTY_FUNCTION__[6];"),
    /// A header's macro expands `__func__` where the kernel uses it.
    position_macro_from_header_names_the_segment: segments(
        "#include \"kc_where.h\"",
        "x[i0] = KC_WHERE();",
    )
    .file("kc_where.h", "#define KC_WHERE() (__func__[6])\n"),

    // ------------------------------------------------- 5. lexing ---
    /// GCC ends the `#define` at the CR: `float i3` is code, declared.
    lone_cr_ends_directive: Case::new(
        k("kl", kern("kl", "#define KC_M 1\r float i3 = 2.0f;", "x[i0] += i3;")),
        k("kl", kern("kl", "#define KC_M 1\r float i3 = 2.0f;", "x[i0] += i4;")),
    ),
    /// After a CR, `#define` starts a line (GCC) though a lexer may see it
    /// mid-line.
    lone_cr_hides_directive_from_lexer: Case::new(
        hidden_define("float kc_pad;\r#define ", "i3"),
        hidden_define("float kc_pad;\r#define ", "i4"),
    ),
    digraph_define_is_a_directive: Case::new(
        hidden_define("%:define ", "i3"),
        hidden_define("%:define ", "i4"),
    ),
    trigraph_define_with_std_c11: Case::new(
        hidden_define("??=define ", "i3").opts(&["-std=c11"]),
        hidden_define("??=define ", "i4").opts(&["-std=c11"]),
    ),
    /// GCC splices a backslash, spaces, then a newline.
    backslash_space_newline_splices_directive: Case::new(
        hidden_define("#define \\ \n", "i3"),
        hidden_define("#define \\ \n", "i4"),
    ),
    /// With `-std=c11` `R"kc(` is `R` and a string: the `i3` after it is code.
    raw_string_in_c11_is_not_raw: Case::new(
        kc("kr", "#define R 0 *", "float i3 = 1.0f; x[i0] += R\"kc(\"[0] + i3; /* )kc\" */").opts(&["-std=c11"]),
        kc("kr", "#define R 0 *", "float i4 = 1.0f; x[i0] += R\"kc(\"[0] + i3; /* )kc\" */").opts(&["-std=c11"]),
    ),
    /// GNU C has raw strings: the `i3` inside one is text.
    raw_string_in_gnu_c_is_raw: Case::new(
        kc("kr", "", "x[i0] += R\"kc( \" i3 \" )kc\"[4];"),
        kc("kr", "", "x[i0] += R\"kc( \" i4 \" )kc\"[4];"),
    ),
    /// A UCN may not spell `i`: B does not compile.
    ucn_spelling_a_basic_char: Case::new(
        kc("ku", "", "float i3 = 2.0f; x[i0] += i3;"),
        kc("ku", "", "float \\u00693 = 2.0f; x[i0] += \\u00693;"),
    ),
    comment_opener_inside_a_string: Case::new(
        kc("ks", "", "float i3 = 1.0f; x[i0] += \"/*\"[0] - 47.0f + i3; /* */"),
        kc("ks", "", "float i4 = 1.0f; x[i0] += \"/*\"[0] - 47.0f + i3; /* */"),
    ),

    // ----------------------------------------------- renaming ---
    renaming_bound_name_is_a_macro_from_a_header: Case::new(
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n1_x;").bound(&["n1_x"]),
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n2_x;").bound(&["n2_x"]),
    )
    .file("kc_b.h", "#define n1_x 3.0f\n#define n2_x 5.0f\n"),
    /// `log*` derives names from digits: `log2` and `log10` are libm's.
    renaming_derivation_template_matches_log2: Case::new(
        kc("kn", "#include <math.h>", "x[i0] = log2(x[i0] + 1.0f);").derive("log*"),
        kc("kn", "#include <math.h>", "x[i0] = log10(x[i0] + 1.0f);").derive("log*"),
    ),
    /// A macro body (a preprocessor line, kept as written) names a loop
    /// symbol the code declares.
    renaming_loop_symbol_named_in_a_macro_body: Case::new(
        kc("kn", "#define KC_M (2.0f * i3)", "float i3 = 3.0f; x[i0] += KC_M;"),
        kc("kn", "#define KC_M (2.0f * i3)", "float i4 = 3.0f; x[i0] += KC_M;"),
    ),
    renaming_stringified_loop_symbol: Case::new(
        kc("kn", "#define KC_STR(a) #a", "x[i0] += KC_STR(i3)[1];"),
        kc("kn", "#define KC_STR(a) #a", "x[i0] += KC_STR(i4)[1];"),
    ),
    renaming_token_paste_of_loop_symbol: Case::new(
        kc(
            "kn",
            "#define KC_CAT(a, b) a##b\nstatic const float i3_w = 2.0f, i4_w = 5.0f;",
            "x[i0] *= KC_CAT(i3, _w);",
        ),
        kc(
            "kn",
            "#define KC_CAT(a, b) a##b\nstatic const float i3_w = 2.0f, i4_w = 5.0f;",
            "x[i0] *= KC_CAT(i4, _w);",
        ),
    ),
    /// An `alias("...")` string names a scope-local-like function.
    renaming_scope_local_named_in_an_alias_string: Case::new(
        kc(
            "kn",
            "static float v1_impl(float v) { return v * 3.0f; }\nfloat kc_alias(float) __attribute__((alias(\"v1_impl\")));",
            "x[i0] = kc_alias(x[i0]);",
        ),
        kc(
            "kn",
            "static float v2_impl(float v) { return v * 3.0f; }\nfloat kc_alias(float) __attribute__((alias(\"v1_impl\")));",
            "x[i0] = kc_alias(x[i0]);",
        ),
    ),
    /// An asm label names a scope-local-like global.
    renaming_scope_local_named_in_an_asm_label: Case::new(
        kc("kn", "float v1_x = 3.0f;\nextern float v1_y __asm__(\"v1_x\");", "x[i0] *= v1_y;"),
        kc("kn", "float v2_x = 3.0f;\nextern float v2_y __asm__(\"v1_x\");", "x[i0] *= v2_y;"),
    ),
    /// `_Pragma("GCC poison ...")` names a loop symbol in a string.
    renaming_loop_symbol_poisoned_in_a_pragma_string: Case::new(
        kc("kn", "_Pragma(\"GCC poison i9\")", "float i5 = 2.0f; x[i0] *= i5;"),
        kc("kn", "_Pragma(\"GCC poison i9\")", "float i9 = 2.0f; x[i0] *= i9;"),
    ),
    kernel_name_stringified_keeps_its_index: Case::new(
        kc("f__seg0", "#define KC_S(a) #a", "x[i0] = KC_S(f__seg0)[6];"),
        kc("f__seg1", "#define KC_S(a) #a", "x[i0] = KC_S(f__seg1)[6];"),
    ),

    // ------------------------------------------------ more attacks ---
    option_define_separate_argument_defines_loop_symbol: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-D", "i7=3.0f", "-D", "i8=5.0f"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-D", "i7=3.0f", "-D", "i8=5.0f"]),
    ),
    header_absolute_path_edited: Case::same(adds_v("#include \"@DIR@/kc_abs.h\""))
        .file("kc_abs.h", &v_header("1.0f"))
        .edit("kc_abs.h", &v_header("2.0f")),
    /// `-Iinc` is relative to the directory the compiler runs in.
    header_relative_include_dir_edited: Case::same(adds_v("#include <kc_rel.h>").opts(&["-Iinc"]))
        .file("inc/kc_rel.h", &v_header("1.0f"))
        .edit("inc/kc_rel.h", &v_header("2.0f")),
    header_imacros_edited: Case::same(
        kc("kh", "", "x[i0] += KC_V;").opts(&["-imacros", "@DIR@/kc_im.h"]),
    )
    .file("kc_im.h", &v_header("1.0f"))
    .edit("kc_im.h", &v_header("2.0f")),
    option_forced_include_nested_header_edited: Case::same(
        kc("kh", "", "x[i0] += KC_V;").opts(&["-include", "@DIR@/kc_outer.h"]),
    )
    .file("kc_outer.h", "#include \"kc_nested.h\"\n")
    .file("kc_nested.h", &v_header("1.0f"))
    .edit("kc_nested.h", &v_header("2.0f")),
    option_forced_include_relative_path_edited: Case::same(
        kc("kh", "", "x[i0] += KC_V;").opts(&["-include", "kc_frel.h"]),
    )
    .file("kc_frel.h", &v_header("1.0f"))
    .edit("kc_frel.h", &v_header("2.0f")),
    /// `.include` makes the assembler read a file.
    asm_include_reads_a_file: Case::same(kc(
        "kh",
        "__asm__(\".include \\\"@DIR@/kc_inc.s\\\"\");\nextern const unsigned char kc_byte[];",
        "x[i0] += kc_byte[0];",
    ))
    .file("kc_inc.s", ".pushsection .rodata\n.globl kc_byte\nkc_byte: .byte 65\n.popsection\n")
    .edit("kc_inc.s", ".pushsection .rodata\n.globl kc_byte\nkc_byte: .byte 66\n.popsection\n"),
    /// B's text does not define its entry point; A's does.
    kernel_name_b_defined_only_by_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + &kern("kb", "", "x[i0] += 5.0f;")),
        k("kb", kern("kb_other", "", "x[i0] += 2.0f;")),
    ),
    /// GCC takes `$` into identifiers: `i3$x` is one name.
    dollar_in_identifier: Case::new(
        kc("kd", "", "float i3$x = 2.0f; x[i0] += i3$x;"),
        kc("kd", "", "float i4$x = 5.0f; x[i0] += i4$x;"),
    ),
    /// `??/` then a newline splices `i` and `3` (trigraphs on).
    trigraph_splice_in_identifier: Case::new(
        kc("kt", "", "float i??/\n3 = 2.0f; x[i0] += i3;").opts(&["-std=c11"]),
        kc("kt", "", "float i??/\n3 = 2.0f; x[i0] += i4;").opts(&["-std=c11"]),
    ),
    backslash_space_newline_in_identifier: Case::new(
        kc("kt", "", "float i\\ \n3 = 2.0f; x[i0] += i3;"),
        kc("kt", "", "float i\\ \n3 = 2.0f; x[i0] += i4;"),
    ),
    /// A backslash before a lone CR splices too.
    backslash_cr_splices_identifier: Case::new(
        kc("kt", "", "float i\\\r3 = 2.0f; x[i0] += i3;"),
        kc("kt", "", "float i\\\r3 = 2.0f; x[i0] += i4;"),
    ),
    /// `v1_\u00e9` and `v1_é` are one identifier to GCC.
    ucn_and_utf8_spell_one_identifier: Case::new(
        kc("kt", "", "float v1_é = 2.0f; x[i0] += v1_\\u00e9;"),
        kc("kt", "", "float v2_é = 2.0f; x[i0] += v1_\\u00e9;"),
    ),

    // ------------------------------- review 2026-12-02 (adversarial) ---
    /// A header's macro body names a local: renamed, it reads the header's
    /// global instead.
    header_macro_body_names_a_local: Case::new(
        kc("kg", "#include \"kc_get.h\"", "float v1_a = x[i0] + 1.0f; x[i0] = GET;"),
        kc("kg", "#include \"kc_get.h\"", "float v1_b = x[i0] + 1.0f; x[i0] = GET;"),
    )
    .file(
        "kc_get.h",
        "#ifndef KC_GET_H\n#define KC_GET_H\nstatic float v1_a = 100.0f;\n#define GET v1_a\n#endif\n",
    ),
    /// The same through an option's macro.
    option_macro_body_names_a_local: Case::new(
        kc("kg", "", "float v1_a = x[i0] + 1.0f; float v1_c = 100.0f; x[i0] = GET + 0.0f * v1_c;"),
        kc("kg", "", "float v1_c = x[i0] + 1.0f; float v1_a = 100.0f; x[i0] = GET + 0.0f * v1_a;"),
    )
    .opts_both(&["-DGET=v1_a"]),
    /// A file included inside a block names the block's locals.
    include_inside_a_block_names_a_local: Case::new(
        kc("kb", "", "float v1_a = x[i0] + 1.0f; float v1_c = 100.0f; v1_c += 1.0f;\n#include \"kc_body.h\"\n"),
        kc("kb", "", "float v1_c = x[i0] + 1.0f; float v1_a = 100.0f; v1_a += 1.0f;\n#include \"kc_body.h\"\n"),
    )
    .file("kc_body.h", "x[i0] = v1_a;\n"),
    /// `-Dstatic=extern`: a "static local" is a header's global.
    keyword_redefined_by_an_option: Case::new(
        kc("kk", "#include \"kc_glob.h\"", "static float v1_a; x[i0] = v1_a;"),
        kc("kk", "#include \"kc_glob.h\"", "static float v1_b; x[i0] = v1_b;"),
    )
    .file("kc_glob.h", GLOB_HEADER)
    .opts_both(&["-Dstatic=extern"]),
    /// GCC's `__builtin_FUNCTION()` reads the segment's own name.
    builtin_function_reads_the_segment_name: segments("", "x[i0] = __builtin_FUNCTION()[6];"),
    /// A backslash, a form feed and a line end: GCC ends the comment there,
    /// and the division by the header's global is code to it alone.
    form_feed_splice_hides_code_in_a_comment: Case::new(
        kc(
            "kf",
            "#include \"kc_glob.h\"",
            "{ float v1_a = x[i0]; x[i0] = v1_a; } x[i0] = 2000.0f /* c *\\\x0c\n/ / v1_a /* x */;",
        ),
        kc(
            "kf",
            "#include \"kc_glob.h\"",
            "{ float v1_b = x[i0]; x[i0] = v1_b; } x[i0] = 2000.0f /* c *\\\x0c\n/ / v1_b /* x */;",
        ),
    )
    .file("kc_glob.h", GLOB_HEADER),
    /// A kernel ending in `//\` spliced its neighbour's `#line` into its
    /// comment: in a group, B's lines were A's.
    trailing_backslash_keeps_the_next_kernels_lines: Case::new(
        k("ka", format!("{}//\\", kern("ka", "", "x[i0] += 1.0f;"))),
        kc("kb", "", "x[i0] = __LINE__;"),
    ),
    /// `-Wshadow -Werror`: B's local shadows the header's global, A's not.
    werror_shadow_fails_only_the_kernel_whose_local_shadows: Case::new(
        kc("kw", "#include \"kc_ext.h\"", "float v1_b = x[i0]; x[i0] = v1_b + 1.0f;"),
        kc("kw", "#include \"kc_ext.h\"", "float v1_a = x[i0]; x[i0] = v1_a + 1.0f;"),
    )
    .file("kc_ext.h", "extern float v1_a;\n")
    .opts_both(&["-Wshadow", "-Werror"]),
    /// GNU's old-style designator `{ v1_a: v1_a }` sets the header struct's
    /// member `v1_a`, not the one the local is renamed with (GPU F14). The
    /// struct is read without `.`, which would keep the names anyway.
    gnu_designator_names_a_member_not_the_local: Case::new(
        kc(
            "kd",
            "#include \"kc_pair.h\"",
            "float v1_a = x[i0]; kc_pair p = { v1_a: v1_a }; float* f = (float*)&p; x[i0] = f[0] * 10.0f + f[1];",
        ),
        kc(
            "kd",
            "#include \"kc_pair.h\"",
            "float v1_b = x[i0]; kc_pair p = { v1_b: v1_b }; float* f = (float*)&p; x[i0] = f[0] * 10.0f + f[1];",
        ),
    )
    .file("kc_pair.h", "typedef struct { float v1_a; float v1_b; } kc_pair;\n"),
    /// A header's macro pastes its arguments into a local's name: A's
    /// `KC_CAT(v1_a, 1)` reads its local `v1_a1`, B's the header's global,
    /// and no token of either spells `v1_a1` where it is read (GPU F19b).
    header_macro_pastes_a_locals_name: Case::new(
        kc("kp", "#include \"kc_cat.h\"", "float v1_a1 = x[i0] + 1.0f; x[i0] = KC_CAT(v1_a, 1);"),
        kc("kp", "#include \"kc_cat.h\"", "float v1_b1 = x[i0] + 1.0f; x[i0] = KC_CAT(v1_a, 1);"),
    )
    .file(
        "kc_cat.h",
        "#ifndef KC_CAT_H\n#define KC_CAT_H\nstatic float v1_a1 = 100.0f;\n#define KC_CAT(a, b) a##b\n#endif\n",
    ),
    /// In a group, B's `KC_CAT(v1_a, 1)` would read A's global `v1_a1`;
    /// alone it names nothing, and B fails.
    header_macro_paste_reaches_a_neighbours_global: Case::new(
        kc("ka", "#include <kc_cat2.h>\nfloat v1_a1 = 7.0f;", "x[i0] += v1_a1;"),
        kc("kb", "#include <kc_cat2.h>", "x[i0] = KC_CAT(v1_a, 1);"),
    )
    .file("kc_cat2.h", "#define KC_CAT(a, b) a##b\n")
    .opts_both(&["-I@DIR@"]),
    /// The same through gcc's predefined `__INT64_C(c) c ## L`, from the
    /// compiler's `-dM` listing (and its kept probe).
    predefined_macro_pastes_a_locals_name: Case::new(
        kc("kp", "#include \"kc_al.h\"", "float v1_aL = x[i0] + 1.0f; x[i0] = __INT64_C(v1_a);"),
        kc("kp", "#include \"kc_al.h\"", "float v1_bL = x[i0] + 1.0f; x[i0] = __INT64_C(v1_a);"),
    )
    .file("kc_al.h", "static float v1_aL = 100.0f;\n"),

    /// Control: two independent kernels, alone or together, answer alike.
    group_independent_kernels_answer_as_alone: Case::new(
        kc("ka", "", "x[i0] += 1.0f;"),
        kc("kb", "", "x[i0] *= 2.0f;"),
    ),
});
