//! Vulkan (lavapipe here): GLSL compute shaders, launched.

use std::path::Path;

use kcache::backend::vulkan::{Vulkan, VulkanConfig};
use kcache::backend::BackendError;
use kcache::cache::hooks::Hooks;

use crate::harness::{k, Case, Spec, Subject};

impl Subject for Vulkan {
    const NAME: &'static str = "vulkan";

    fn open(_dir: &Path, hooks: &Hooks) -> Result<Self, BackendError> {
        Vulkan::with_hooks(&VulkanConfig::default(), hooks)
    }
}

/// A shader `name` with `top` after its `#version`, running `body` for its
/// `x[i0]` (one storage buffer `x`, one push constant `n`).
fn kern(name: &str, top: &str, body: &str) -> String {
    format!(
        "#version 450\n{top}\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer X {{ float x[]; }};\nlayout(push_constant) uniform Scalars {{ int n; }};\nvoid {name}() {{\n  uint i0 = gl_GlobalInvocationID.x;\n  if (i0 < uint(n)) {{\n    {body}\n  }}\n}}\n"
    )
}

fn kc(name: &str, top: &str, body: &str) -> Spec {
    k(name, kern(name, top, body))
}

cases!(Vulkan {
    /// Review 2026-12-02 (GPU F4): the backend compiles under `#define
    /// <symbol> main`, so the inner `kern` is `main` and shadows B's outer
    /// `main`; a renamed `main` was A's `q`.
    local_named_main_is_what_the_symbol_expands_to: Case::new(
        kc(
            "kern",
            "",
            "float q = 3.0; { float kern = 5.0; x[i0] *= q; }"
        )
        .bound(&["q"]),
        kc(
            "kern",
            "",
            "float main = 3.0; { float kern = 5.0; x[i0] *= main; }"
        )
        .bound(&["main"]),
    ),
    group_leak_macro_in_a_changes_default_in_b: Case::new(
        kc("ka", "#define KC_SCALE 3.0", "x[i0] *= KC_SCALE;"),
        kc(
            "kb",
            "#ifndef KC_SCALE\n#define KC_SCALE 2.0\n#endif",
            "x[i0] *= KC_SCALE;"
        ),
    ),
    group_leak_macro_in_a_defines_name_used_by_b: Case::new(
        kc("ka", "#define KC_OFF 1.0", "x[i0] += KC_OFF;"),
        kc("kb", "", "x[i0] += KC_OFF + 1.0;"),
    ),
    group_leak_struct_defined_by_both: Case::new(
        kc(
            "ka",
            "struct KcPt { float a; };",
            "KcPt p = KcPt(2.0); x[i0] *= p.a;"
        ),
        kc(
            "kb",
            "struct KcPt { float a; float b; };",
            "KcPt p = KcPt(3.0, 1.0); x[i0] = x[i0] * p.a + p.b;"
        ),
    ),
    /// B's entry name is a function A defines.
    kernel_name_of_b_is_a_helper_in_a: Case::new(
        kc(
            "ka",
            "float kb(float v) { return v * 2.0; }",
            "x[i0] = kb(x[i0]);"
        ),
        kc("kb", "", "x[i0] += 3.0;"),
    ),
    option_defines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-Di7=3.0", "-Di8=5.0"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-Di7=3.0", "-Di8=5.0"]),
    ),
    option_defines_scope_local_name: Case::new(
        kc("ko", "", "x[i0] *= v1_x;").opts(&["-Dv1_x=3.0", "-Dv2_x=5.0"]),
        kc("ko", "", "x[i0] *= v2_x;").opts(&["-Dv1_x=3.0", "-Dv2_x=5.0"]),
    ),
    /// Review 2026-12-02, GPU F3: glslang defines every extension it
    /// supports (B does not compile).
    extension_macro_of_glslang_is_not_renamed: Case::new(
        kc("kp", "", "float q = 2.0; x[i0] += q;").infer(),
        kc(
            "kp",
            "",
            "float GL_ARB_compute_shader = 2.0; x[i0] += GL_ARB_compute_shader;"
        )
        .infer(),
    ),
    /// glslang predefines `VULKAN` (100): bound, it would be renamed.
    predefined_macro_vulkan_is_not_a_bound_name: Case::new(
        kc("kp", "", "x[i0] += float(n1_y);").bound(&["n1_y"]),
        kc("kp", "", "x[i0] += float(VULKAN);").bound(&["VULKAN"]),
    ),
    lone_cr_ends_directive: Case::new(
        k(
            "kl",
            kern(
                "kl",
                "#define KC_M 1\r const float i3 = 2.0;",
                "x[i0] += i3;"
            )
        ),
        k(
            "kl",
            kern(
                "kl",
                "#define KC_M 1\r const float i3 = 2.0;",
                "x[i0] += i4;"
            )
        ),
    ),
    position_line_macro_counts_the_kernel_lines: Case::new(
        kc("ka", "", "x[i0] = float(__LINE__);"),
        kc("kb", "\n", "x[i0] = float(__LINE__);"),
    ),
    option_undefines_loop_symbol_name: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["-Di7=3.0", "-Di8=5.0", "-Ui8"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["-Di7=3.0", "-Di8=5.0", "-Ui8"]),
    ),
    /// The backend defines each entry's name as `main`: `#ifdef` sees it.
    kernel_name_tested_by_ifdef: Case::new(
        kc(
            "f__seg0",
            "",
            "x[i0] += 1.0;\n#ifdef f__seg0\n    x[i0] += 10.0;\n#endif"
        ),
        kc(
            "f__seg1",
            "",
            "x[i0] += 1.0;\n#ifdef f__seg0\n    x[i0] += 10.0;\n#endif"
        ),
    ),

    option_define_macro_long_form_defines_loop_symbol: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&[
            "--define-macro",
            "i7=3.0",
            "--define-macro",
            "i8=5.0"
        ]),
        kc("ko", "", "x[i0] *= i8;").opts(&[
            "--define-macro",
            "i7=3.0",
            "--define-macro",
            "i8=5.0"
        ]),
    ),
    /// Control: two independent kernels, alone or together, answer alike.
    group_independent_kernels_answer_as_alone: Case::new(
        kc("ka", "", "x[i0] += 1.0;"),
        kc("kb", "", "x[i0] *= 2.0;"),
    ),
    renaming_loop_symbol_named_in_a_macro_body: Case::new(
        kc(
            "kn",
            "#define KC_M (2.0 * i3)",
            "float i3 = 3.0; x[i0] += KC_M;"
        ),
        kc(
            "kn",
            "#define KC_M (2.0 * i3)",
            "float i4 = 3.0; x[i0] += KC_M;"
        ),
    ),
});
