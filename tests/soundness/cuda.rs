//! CUDA through NVRTC, compile only: a kernel's behaviour is its PTX.
//!
//! The backend is wrapped so every program keeps the bytes it was compiled
//! or loaded from (a compile-only `CudaProgram` holds no module to ask),
//! through the crate's own adapter, which keys exactly as `Cuda` does.

use std::path::Path;
use std::sync::Arc;

use kcache::backend::cuda::{Cuda, CudaConfig, CudaProgram, CudaTarget};
use kcache::backend::map::{KeepBinary, MapProgram, WithBinary};
use kcache::backend::BackendError;
use kcache::cache::hooks::Hooks;

use crate::harness::{k, Behaviour, Case, Run, Spec, Subject};

/// NVRTC compiling to PTX, each program with its bytes.
pub type Ptx = MapProgram<Cuda, KeepBinary>;

impl Subject for Ptx {
    const NAME: &'static str = "cuda";

    fn open(_dir: &Path, hooks: &Hooks) -> Result<Self, BackendError> {
        let config = CudaConfig {
            target: CudaTarget::Ptx,
            compile_only: true,
            ..CudaConfig::default()
        };
        let cuda = Cuda::with_hooks(&config, hooks)?;
        Ok(MapProgram::new(Arc::new(cuda), KeepBinary))
    }

    fn behave(&self, program: &WithBinary<CudaProgram>, symbol: &str, _run: &Run) -> Behaviour {
        match entry(&String::from_utf8_lossy(program.binary()), symbol) {
            Some(code) => Behaviour::Code(code),
            None => Behaviour::LaunchFailed(format!("no entry `{symbol}` in the PTX")),
        }
    }
}

/// Whether `c` may be part of a PTX identifier.
fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The name a module-level `.global` / `.const` declaration declares.
fn declared(line: &str) -> Option<&str> {
    let head = line.split(['=', ';']).next()?;
    let space = head
        .split_whitespace()
        .find(|w| !matches!(*w, ".visible" | ".extern" | ".weak"))?;
    if space != ".global" && space != ".const" {
        return None;
    }
    let last = head.split_whitespace().last()?;
    Some(last.split('[').next().unwrap_or(last))
}

/// `symbol`'s `.entry` in `ptx`, its own name written `KSYM` and the
/// module-level data it reads appended (numbered by first use, `G0`,
/// `G1`, ...), so two programs holding one kernel under other names, or
/// beside other kernels, compare equal.
fn entry(ptx: &str, symbol: &str) -> Option<String> {
    let start = ptx.find(&format!(".entry {symbol}("))?;
    let start = ptx[..start].rfind('\n').map_or(0, |i| i + 1);
    let open = start + ptx[start..].find('{')?;
    let mut depth = 0;
    let mut end = None;
    for (i, c) in ptx[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(open + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let body = &ptx[start..end?];
    let decls: Vec<(&str, &str)> = ptx[..start]
        .lines()
        .filter_map(|l| declared(l).map(|name| (name, l.trim())))
        .collect();
    // Indices into `decls`, in order of first use.
    let mut used: Vec<usize> = Vec::new();
    let mut out = String::new();
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        let len = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
        if len == 0 {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let word = &rest[..len];
        rest = &rest[len..];
        match decls.iter().position(|(n, _)| *n == word) {
            Some(d) => {
                let i = used.iter().position(|&u| u == d).unwrap_or_else(|| {
                    used.push(d);
                    used.len() - 1
                });
                out.push_str(&format!("G{i}"));
            }
            // Branch labels number the function within the module
            // (`$L__BB1_2` is block 2 of the module's second function).
            None if word.starts_with("$L__BB") => {
                let block = word.rsplit('_').next().unwrap_or_default();
                out.push_str(&format!("$L__BB_{block}"));
            }
            None => out.push_str(&word.replace(symbol, "KSYM")),
        }
    }
    for (i, &d) in used.iter().enumerate() {
        let (name, line) = decls[d];
        out.push_str(&format!("\nG{i}: {}", line.replacen(name, "", 1)));
    }
    Some(out)
}

/// `top`, then a kernel `name(float* x, int n)` running `body` for its
/// `x[i0]`.
fn kern(name: &str, top: &str, body: &str) -> String {
    format!(
        "{top}\nextern \"C\" __global__ void {name}(float* x, int n) {{\n  int i0 = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i0 < n) {{\n    {body}\n  }}\n}}\n"
    )
}

fn kc(name: &str, top: &str, body: &str) -> Spec {
    k(name, kern(name, top, body))
}

fn segments(top: &str, body: &str) -> Case {
    Case::new(kc("f__seg0", top, body), kc("f__seg1", top, body))
}

cases!(Ptx {
    /// Review 2026-12-02, GPU F1: NVRTC's runtime header defines
    /// `cudaGetDeviceProperties` as `cudaGetDeviceProperties_v2`, so B's
    /// inner local is its outer one: B multiplies by 5, A by 3.
    implicit_macro_of_nvrtcs_runtime_header_is_not_renamed: Case::new(
        kc("km", "", "float q = 3.0f; { float r = 5.0f; x[i0] *= q; }").infer(),
        kc(
            "km",
            "",
            "float cudaGetDeviceProperties_v2 = 3.0f; { float cudaGetDeviceProperties = 5.0f; x[i0] *= cudaGetDeviceProperties_v2; }"
        )
        .infer(),
    ),
    /// Review 2026-12-02, GPU F7: NVRTC's `assert` spells its argument and
    /// the function into the PTX's message string.
    implicit_assert_spells_its_argument: Case::new(
        kc("ka", "", "float q = 2.0f; assert(q < x[i0]); x[i0] *= q;").infer(),
        kc("ka", "", "float r = 2.0f; assert(r < x[i0]); x[i0] *= r;").infer(),
    ),
    group_leak_macro_in_a_changes_default_in_b: Case::new(
        kc("ka", "#define KC_SCALE 3.0f", "x[i0] *= KC_SCALE;"),
        kc("kb", "#ifndef KC_SCALE\n#define KC_SCALE 2.0f\n#endif", "x[i0] *= KC_SCALE;"),
    ),
    group_leak_macro_in_a_defines_name_used_by_b: Case::new(
        kc("ka", "#define KC_OFF 1.0f", "x[i0] += KC_OFF;"),
        kc("kb", "", "x[i0] += KC_OFF + 1.0f;"),
    ),
    /// C++ overloading: A's exact match wins over B's conversion.
    group_leak_overload_in_a_wins_in_b: Case::new(
        kc("ka", "__device__ float kc_f(int v) { return 10.0f; }", "x[i0] += kc_f(1);"),
        kc("kb", "__device__ float kc_f(float v) { return 2.0f * v; }", "x[i0] += kc_f(3);"),
    ),
    group_leak_static_global_defined_by_both: Case::new(
        kc("ka", "__device__ float kc_g = 2.0f;", "x[i0] *= kc_g;"),
        kc("kb", "__device__ float kc_g = 3.0f;", "x[i0] *= kc_g;"),
    ),
    /// A's macro is spelled like B's scope local: together they break B.
    group_leak_macro_in_a_breaks_declaration_in_b: Case::new(
        kc("ka", "#define v1_s 4.0f", "x[i0] *= v1_s;"),
        kc("kb", "", "float v1_s = 5.0f; x[i0] *= v1_s;"),
    ),
    group_leak_unterminated_comment_at_end_of_a: Case::new(
        k("ka", kern("ka", "", "x[i0] += 1.0f;") + "/* unterminated\n"),
        k("kb", format!("// closes it: */\n{}", kern("kb", "", "x[i0] += 2.0f;"))),
    ),
    /// NVRTC finds quoted includes in the process's working directory.
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
    time_macro_is_uncacheable: Case::same(kc(
        "kt",
        "__device__ const char kc_when[] = __TIME__;",
        "x[i0] = (kc_when[3] - '0') * 600 + (kc_when[4] - '0') * 60 + (kc_when[6] - '0') * 10 + (kc_when[7] - '0');",
    ))
    .fresh(),
    position_func_macro_names_the_segment: segments("", "x[i0] = __func__[6];"),
    position_file_macro_names_the_segment: segments("", "x[i0] = __FILE__[sizeof(__FILE__) - 2];"),
    position_pretty_function_names_the_segment: segments("", "x[i0] = __PRETTY_FUNCTION__[11];"),
    /// NVRTC refuses `$` and UTF-8 in a name: renamed, the kernel that
    /// fails shared the key of its ASCII twin, which compiles.
    dollar_in_a_scope_local_is_kept: Case::new(
        kc("kn", "", "float v1_a$b = 2.0f; x[i0] *= v1_a$b;"),
        kc("kn", "", "float v1_ab = 2.0f; x[i0] *= v1_ab;"),
    ),
    utf8_in_a_scope_local_is_kept: Case::new(
        kc("kn", "", "float v1_\u{e9} = 2.0f; x[i0] *= v1_\u{e9};"),
        kc("kn", "", "float v1_e = 2.0f; x[i0] *= v1_e;"),
    ),
    raw_string_in_cuda_is_raw: Case::new(
        kc("kr", "", "x[i0] += R\"kc( \" i3 \" )kc\"[4];"),
        kc("kr", "", "x[i0] += R\"kc( \" i4 \" )kc\"[4];"),
    ),
    /// C++14 digit separators: the `i3` between them is code.
    digit_separator_in_cuda: Case::new(
        kc("kd", "", "float i3 = 1.0f; x[i0] += 1'0 + i3 + 2'0;"),
        kc("kd", "", "float i4 = 1.0f; x[i0] += 1'0 + i3 + 2'0;"),
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

    header_absolute_path_edited: Case::same(kc("kh", "#include \"@DIR@/kc_abs.h\"", "x[i0] += KC_V;"))
        .file("kc_abs.h", "#define KC_V 1.0f\n")
        .edit("kc_abs.h", "#define KC_V 2.0f\n"),
    option_define_macro_long_form_defines_loop_symbol: Case::new(
        kc("ko", "", "x[i0] *= i7;").opts(&["--define-macro=i7=3.0f", "--define-macro=i8=5.0f"]),
        kc("ko", "", "x[i0] *= i8;").opts(&["--define-macro=i7=3.0f", "--define-macro=i8=5.0f"]),
    ),
    /// Control: two independent kernels, alone or together, answer alike.
    group_independent_kernels_answer_as_alone: Case::new(
        kc("ka", "", "if (x[i0] > 2.0f) x[i0] += 1.0f;"),
        kc("kb", "", "if (x[i0] > 3.0f) x[i0] *= 2.0f;"),
    ),
    renaming_bound_name_is_a_macro_from_a_header: Case::new(
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n1_x;").bound(&["n1_x"]).opts(&["-I@DIR@"]),
        kc("kn", "#include \"kc_b.h\"", "x[i0] *= n2_x;").bound(&["n2_x"]).opts(&["-I@DIR@"]),
    )
    .file("kc_b.h", "#define n1_x 3.0f\n#define n2_x 5.0f\n"),
});
