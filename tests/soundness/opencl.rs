//! OpenCL (PoCL here): every case launches its kernels.

use std::path::Path;

use kcache::backend::opencl::{OpenCl, OpenClConfig};
use kcache::backend::BackendError;
use kcache::cache::hooks::Hooks;

use crate::harness::{k, Case, Spec, Subject};

impl Subject for OpenCl {
    const NAME: &'static str = "opencl";

    fn open(_dir: &Path, hooks: &Hooks) -> Result<Self, BackendError> {
        OpenCl::with_hooks(&OpenClConfig::default(), hooks)
    }
}

/// `top`, then `__kernel void name(__global float* x, int n)` running
/// `body` for its `x[i0]`.
fn kern(name: &str, top: &str, body: &str) -> String {
    format!(
        "{top}\n__kernel void {name}(__global float* x, int n) {{\n  int i0 = get_global_id(0);\n  if (i0 < n) {{\n    {body}\n  }}\n}}\n"
    )
}

fn kc(name: &str, top: &str, body: &str) -> Spec {
    k(name, kern(name, top, body))
}

fn segments(top: &str, body: &str) -> Case {
    Case::new(kc("f__seg0", top, body), kc("f__seg1", top, body))
}

/// A `#define` a lexer may not see as one, then a real `#ifdef i3`: with
/// `name` = `i3` the kernel adds 11, with any other name 1.
fn hidden_define(hide: &str, name: &str) -> Spec {
    kc(
        "kl",
        &format!("{hide}{name} 5"),
        "x[i0] += 1.0f;\n#ifdef i3\n    x[i0] += 10.0f;\n#endif",
    )
}

/// `q` against `name`, each inferred.
fn implicit(name: &str) -> Spec {
    kc("ki", "", &format!("float {name} = 2.0f; x[i0] += {name};")).infer()
}

cases!(OpenCl {
    /// Review 2026-12-02, GPU F2: PoCL's `#define abs _cl_abs`, so B's
    /// inner `abs` is its outer `_cl_abs`.
    implicit_builtin_rename_macro_is_not_renamed: Case::new(
        kc("ka", "", "float q = 3.0f; { float r = 5.0f; x[i0] *= q; }").infer(),
        kc("ka", "", "float _cl_abs = 3.0f; { float abs = 5.0f; x[i0] *= _cl_abs; }").infer(),
    ),
    /// A reserved name PoCL defines (an attribute): B does not compile.
    reserved_macro_of_pocl_is_not_renamed: Case::new(
        implicit("q"),
        implicit("_CL_OVERLOADABLE"),
    ),
    group_leak_macro_in_a_changes_default_in_b: Case::new(
        kc("ka", "#define KC_SCALE 3.0f", "x[i0] *= KC_SCALE;"),
        kc("kb", "#ifndef KC_SCALE\n#define KC_SCALE 2.0f\n#endif", "x[i0] *= KC_SCALE;"),
    ),
    group_leak_macro_in_a_defines_name_used_by_b: Case::new(
        kc("ka", "#define KC_OFF 1.0f", "x[i0] += KC_OFF;"),
        kc("kb", "", "x[i0] += KC_OFF + 1.0f;"),
    ),
    group_leak_helper_defined_in_a_used_by_b: Case::new(
        kc("ka", "float kc_helper(float v) { return v * 3.0f; }", "x[i0] = kc_helper(x[i0]);"),
        kc("kb", "float kc_helper(float v);", "x[i0] = kc_helper(x[i0]) + 1.0f;"),
    ),
    group_leak_typedef_in_a_used_by_b: Case::new(
        kc("ka", "typedef float kc_real;", "kc_real t = 2.0f; x[i0] *= t;"),
        kc("kb", "", "kc_real t = 3.0f; x[i0] *= t;"),
    ),
    group_leak_struct_tag_defined_by_both: Case::new(
        kc("ka", "struct kc_pt { float a; };", "struct kc_pt p = { 2.0f }; x[i0] *= p.a;"),
        kc(
            "kb",
            "struct kc_pt { float a; float b; };",
            "struct kc_pt p = { 3.0f, 1.0f }; x[i0] = x[i0] * p.a + p.b;",
        ),
    ),
    group_leak_counter_in_a_shifts_b: Case::new(
        kc("ka", "__constant int ka_c = __COUNTER__;", "x[i0] += ka_c;"),
        kc("kb", "__constant int kb_c = __COUNTER__;", "x[i0] += kb_c + 10;"),
    ),
    group_leak_unterminated_comment_at_end_of_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "/* unterminated\n"),
        k("kb", format!("// closes it: */\n{}", kern("kb", "", "x[i0] += 2.0f;"))),
    ),
    /// PoCL finds quoted includes in the process's working directory.
    header_in_process_cwd_edited: Case::same(kc("kh", "#include \"kc_cwd.h\"", "x[i0] += KC_V;"))
        .file("kc_cwd.h", "#define KC_V 1.0f\n")
        .edit("kc_cwd.h", "#define KC_V 2.0f\n")
        .in_cwd(),
    header_in_include_dir_edited: Case::same(
        kc("kh", "#include \"kc_inc.h\"", "x[i0] += KC_V;").opts(&["-I@DIR@/inc"]),
    )
    .file("inc/kc_inc.h", "#define KC_V 1.0f\n")
    .edit("inc/kc_inc.h", "#define KC_V 2.0f\n"),
    option_defines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-Di7=3.0f", "-Di8=5.0f"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-Di7=3.0f", "-Di8=5.0f"]),
    ),
    option_defines_scope_local_name: Case::new(
        kc("ko", "", "x[i0] *= v1_x;").opts(&["-Dv1_x=3.0f", "-Dv2_x=5.0f"]),
        kc("ko", "", "x[i0] *= v2_x;").opts(&["-Dv1_x=3.0f", "-Dv2_x=5.0f"]),
    ),
    /// `CL_VERSION_1_2` is predefined: bound, it would be renamed.
    predefined_macro_cl_version_is_not_a_bound_name: Case::new(
        kc("kp", "", "x[i0] += n1_y;").bound(&["n1_y"]),
        kc("kp", "", "x[i0] += CL_VERSION_1_2;").bound(&["CL_VERSION_1_2"]),
    ),
    time_macro_is_uncacheable: Case::same(kc(
        "kt",
        "__constant char kc_when[] = __TIME__;",
        "x[i0] = (kc_when[3] - '0') * 600 + (kc_when[4] - '0') * 60 + (kc_when[6] - '0') * 10 + (kc_when[7] - '0');",
    ))
    .fresh(),
    position_file_macro_names_the_segment: segments("", "x[i0] = __FILE__[sizeof(__FILE__) - 2];"),
    position_func_macro_names_the_segment: segments("", "x[i0] = __func__[6];"),
    lone_cr_ends_directive: Case::new(
        k("kl", kern("kl", "#define KC_M 1\r __constant float i3 = 2.0f;", "x[i0] += i3;")),
        k("kl", kern("kl", "#define KC_M 1\r __constant float i3 = 2.0f;", "x[i0] += i4;")),
    ),
    digraph_define_is_a_directive: Case::new(
        hidden_define("%:define ", "i3"),
        hidden_define("%:define ", "i4"),
    ),
    backslash_space_newline_splices_directive: Case::new(
        hidden_define("#define \\ \n", "i3"),
        hidden_define("#define \\ \n", "i4"),
    ),
    /// OpenCL C has no raw strings: the `i3` after `R"kc(` is code.
    raw_string_in_opencl_is_not_raw: Case::new(
        kc("kr", "#define R 0 *", "float i3 = 1.0f; x[i0] += R\"kc(\"[0] + i3; /* )kc\" */"),
        kc("kr", "#define R 0 *", "float i4 = 1.0f; x[i0] += R\"kc(\"[0] + i3; /* )kc\" */"),
    ),
    ucn_spelling_a_basic_char: Case::new(
        kc("ku", "", "float i3 = 2.0f; x[i0] += i3;"),
        kc("ku", "", "float \\u00693 = 2.0f; x[i0] += \\u00693;"),
    ),
    renaming_stringified_loop_symbol: Case::new(
        kc("kn", "#define KC_STR(a) #a", "x[i0] += KC_STR(i3)[1];"),
        kc("kn", "#define KC_STR(a) #a", "x[i0] += KC_STR(i4)[1];"),
    ),
    group_leak_static_global_defined_by_both: Case::new(
        kc("ka", "__constant float kc_g = 2.0f;", "x[i0] *= kc_g;"),
        kc("kb", "__constant float kc_g = 3.0f;", "x[i0] *= kc_g;"),
    ),
    kernel_name_of_b_is_a_helper_in_a: Case::new(
        kc("ka", "float kb(float v) { return v * 2.0f; }", "x[i0] = kb(x[i0]);"),
        kc("kb", "", "x[i0] += 3.0f;"),
    ),

    header_absolute_path_edited: Case::same(kc("kh", "#include \"@DIR@/kc_abs.h\"", "x[i0] += KC_V;"))
        .file("kc_abs.h", "#define KC_V 1.0f\n")
        .edit("kc_abs.h", "#define KC_V 2.0f\n"),
    /// `-Iinc` is relative to the process's working directory.
    header_relative_include_dir_edited: Case::same(
        kc("kh", "#include <kc_rel.h>", "x[i0] += KC_V;").opts(&["-Iinc"]),
    )
    .file("inc/kc_rel.h", "#define KC_V 1.0f\n")
    .edit("inc/kc_rel.h", "#define KC_V 2.0f\n")
    .in_cwd(),
    /// Review 2026-12-02, GPU F16: PoCL finds a bracketed include in the
    /// working directory, which the key did not search.
    header_bracketed_in_process_cwd_edited: Case::same(
        kc("kh", "#include <kc_cwdb.h>", "x[i0] += KC_V;"),
    )
    .file("kc_cwdb.h", "#define KC_V 1.0f\n")
    .edit("kc_cwdb.h", "#define KC_V 2.0f\n")
    .in_cwd(),
    /// The working directory comes before `-I`: a header appearing there
    /// shadows the include directory's.
    header_bracketed_in_cwd_shadows_include_dir: Case::same(
        kc("kh", "#include <kc_shadow.h>", "x[i0] += KC_V;").opts(&["-Iinc"]),
    )
    .file("inc/kc_shadow.h", "#define KC_V 1.0f\n")
    .edit("kc_shadow.h", "#define KC_V 2.0f\n")
    .in_cwd(),
    option_define_separate_argument_defines_loop_symbol: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-D", "i7=3.0f", "-D", "i8=5.0f"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-D", "i7=3.0f", "-D", "i8=5.0f"]),
    ),
    kernel_name_b_defined_only_by_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + &kern("kb", "", "x[i0] += 5.0f;")),
        k("kb", kern("kb_other", "", "x[i0] += 2.0f;")),
    ),
    dollar_in_identifier: Case::new(
        kc("kd", "", "float i3$x = 2.0f; x[i0] += i3$x;"),
        kc("kd", "", "float i4$x = 5.0f; x[i0] += i4$x;"),
    ),
    /// Control: two independent kernels, alone or together, answer alike.
    group_independent_kernels_answer_as_alone: Case::new(
        kc("ka", "", "x[i0] += 1.0f;"),
        kc("kb", "", "x[i0] *= 2.0f;"),
    ),
    renaming_loop_symbol_named_in_a_macro_body: Case::new(
        kc("kn", "#define KC_M (2.0f * i3)", "float i3 = 3.0f; x[i0] += KC_M;"),
        kc("kn", "#define KC_M (2.0f * i3)", "float i4 = 3.0f; x[i0] += KC_M;"),
    ),
    renaming_bound_name_is_a_macro_from_a_header: Case::new(
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n1_x;").bound(&["n1_x"]).opts(&["-I@DIR@"]),
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n2_x;").bound(&["n2_x"]).opts(&["-I@DIR@"]),
    )
    .file("kc_b.h", "#define n1_x 3.0f\n#define n2_x 5.0f\n"),
    position_macro_from_header_names_the_segment: segments(
        "#include \"kc_where.h\"",
        "x[i0] = KC_WHERE();",
    )
    .opts_both(&["-I@DIR@"])
    .file("kc_where.h", "#define KC_WHERE() (__func__[6])\n"),
});
