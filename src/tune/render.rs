//! The built-in kernel family, rendered per language as a tensor compiler
//! would: one dense layer with a row softmax, `Y = softmax(relu(X·W + b))`,
//! fissioned into segment kernels.
//!
//! | segment | work | tunable |
//! | --- | --- | --- |
//! | zero | `Y = 0` | no |
//! | matmul | `Y += X·W` (or, fused, `Y = relu(X·W + b)`) | k-tile, unroll |
//! | bias+relu | `Y = relu(Y + b)` (absent when fused) | vector width |
//! | softmax | each row of `Y` | no |
//!
//! Every rendering takes its loop symbols, scope locals and node ids from
//! process-wide counters, and names segment kernels by position, so two
//! candidates render an unchanged segment with other names, exactly as a real
//! renderer does; fusing drops a segment and shifts the softmax's index.

use crate::backend::{Language, Launch};
use crate::canon::{segment_kernel_name, CanonOptions, Derivation};
use crate::resolve::Kernel;
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One point of the search space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Config {
    /// Elements of the reduction dimension per tile.
    pub tile: usize,
    /// Multiply-adds unrolled per step.
    pub unroll: usize,
    /// Elements per bias+relu step.
    pub vector: usize,
    /// Whether bias+relu is fused into the matmul.
    pub fuse: bool,
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tile={} unroll={} ", self.tile, self.unroll)?;
        if self.fuse {
            f.write_str("fused")
        } else {
            write!(f, "vector={}", self.vector)
        }
    }
}

/// The problem's sizes: `X` is `m×k`, `W` is `k×n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// Rows of `X` and `Y`.
    pub m: usize,
    /// The reduction dimension.
    pub k: usize,
    /// Columns of `W` and `Y`.
    pub n: usize,
}

/// The whole search space, in a fixed order: 24 unfused and 12 fused points.
pub fn search_space() -> Vec<Config> {
    let mut space = Vec::new();
    for fuse in [false, true] {
        for tile in [1, 4, 8, 16] {
            for unroll in [1, 2, 4] {
                for vector in if fuse { &[1][..] } else { &[1, 4][..] } {
                    space.push(Config {
                        tile,
                        unroll,
                        vector: *vector,
                        fuse,
                    });
                }
            }
        }
    }
    space
}

/// Which buffer a kernel argument is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// The output, `m×n`.
    Y,
    /// The input, `m×k`.
    X,
    /// The weights, `k×n`.
    W,
    /// The bias, `n`.
    B,
}

/// One kernel launch of a candidate: its buffers (in argument order), its
/// scalars, and its work size.
#[derive(Clone, Debug)]
pub struct Step {
    /// The kernel's symbol in this rendering.
    pub symbol: String,
    /// Buffer arguments, in order.
    pub buffers: Vec<Buffer>,
    /// Scalar arguments (`m`, `k`, `n` as the segment needs them).
    pub scalars: Vec<i32>,
    /// Work items.
    pub global: usize,
}

impl Step {
    /// The launch for this step over the candidate's buffers.
    pub fn launch(&self, data: &Data) -> Launch {
        Launch {
            buffers: self.buffers.iter().map(|b| data.get(*b).to_vec()).collect(),
            scalars: self.scalars.clone(),
            global: [self.global, 1, 1],
            local: [WORK_GROUP.min(self.global.max(1)), 1, 1],
        }
    }
}

/// Work-group size for the GPU renderings.
pub const WORK_GROUP: usize = 64;

/// A candidate's kernels and how to run them.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The point of the search space.
    pub config: Config,
    /// Its kernels, ready to resolve.
    pub kernels: Vec<Kernel>,
    /// Its launches, in order.
    pub steps: Vec<Step>,
}

/// The problem's buffers.
#[derive(Clone, Debug)]
pub struct Data {
    /// `m×n`
    pub y: Vec<f32>,
    /// `m×k`
    pub x: Vec<f32>,
    /// `k×n`
    pub w: Vec<f32>,
    /// `n`
    pub b: Vec<f32>,
}

impl Data {
    /// Deterministic inputs (a small LCG), `Y` zero.
    pub fn new(p: Problem, seed: u64) -> Data {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        Data {
            y: vec![0.0; p.m * p.n],
            x: (0..p.m * p.k).map(|_| next()).collect(),
            w: (0..p.k * p.n).map(|_| next()).collect(),
            b: (0..p.n).map(|_| next()).collect(),
        }
    }

    /// One buffer.
    pub fn get(&self, b: Buffer) -> &[f32] {
        match b {
            Buffer::Y => &self.y,
            Buffer::X => &self.x,
            Buffer::W => &self.w,
            Buffer::B => &self.b,
        }
    }

    /// `softmax(relu(X·W + b))`, computed in f64.
    pub fn reference(&self, p: Problem) -> Vec<f32> {
        let mut y = vec![0.0f64; p.m * p.n];
        for i in 0..p.m {
            for j in 0..p.n {
                let mut acc = 0.0f64;
                for l in 0..p.k {
                    acc += f64::from(self.x[i * p.k + l]) * f64::from(self.w[l * p.n + j]);
                }
                y[i * p.n + j] = (acc + f64::from(self.b[j])).max(0.0);
            }
            let row = &mut y[i * p.n..(i + 1) * p.n];
            let max = row.iter().copied().fold(f64::MIN, f64::max);
            let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
            for v in row {
                *v = (*v - max).exp() / sum;
            }
        }
        y.into_iter().map(|v| v as f32).collect()
    }
}

static SYMBOLS: AtomicUsize = AtomicUsize::new(1);
static NODES: AtomicUsize = AtomicUsize::new(1);

fn symbol() -> String {
    format!("i{}", SYMBOLS.fetch_add(1, Ordering::Relaxed))
}

fn local(label: &str) -> String {
    format!("v{}_{label}", SYMBOLS.fetch_add(1, Ordering::Relaxed))
}

/// The routine every candidate's segments are named after.
pub const ROUTINE: &str = "dense";

/// Renders one candidate in `language`.
pub fn render(config: Config, p: Problem, language: Language) -> Candidate {
    let node = |label: &str| format!("n{}_{label}", NODES.fetch_add(1, Ordering::Relaxed));
    let (y, x, w, b) = (node("y"), node("x"), node("w"), node("b"));
    let names = Names { y, x, w, b };
    let mut segments: Vec<Segment> = vec![Segment::Zero, Segment::Matmul];
    if !config.fuse {
        segments.push(Segment::BiasRelu);
    }
    segments.push(Segment::Softmax);
    let mut kernels = Vec::new();
    let mut steps = Vec::new();
    for (index, seg) in segments.into_iter().enumerate() {
        let symbol = segment_kernel_name(ROUTINE, index);
        let (text, buffers, scalars, global) = seg.render(&symbol, &names, config, p, language);
        let bound = buffers.iter().map(|b| names.get(*b).to_string()).collect();
        kernels.push(Kernel::new(symbol.clone(), text).canon(CanonOptions {
            kernel_name: Some(symbol.clone()),
            bound,
            derivations: vec![
                Derivation::parse("*_max").expect("a template"),
                Derivation::parse("*_sum").expect("a template"),
            ],
            ..CanonOptions::default()
        }));
        steps.push(Step {
            symbol,
            buffers,
            scalars,
            global,
        });
    }
    Candidate {
        config,
        kernels,
        steps,
    }
}

struct Names {
    y: String,
    x: String,
    w: String,
    b: String,
}

impl Names {
    fn get(&self, b: Buffer) -> &str {
        match b {
            Buffer::Y => &self.y,
            Buffer::X => &self.x,
            Buffer::W => &self.w,
            Buffer::B => &self.b,
        }
    }
}

#[derive(Clone, Copy)]
enum Segment {
    Zero,
    Matmul,
    BiasRelu,
    Softmax,
}

/// A kernel's text, buffers, scalars and work size.
type Rendered = (String, Vec<Buffer>, Vec<i32>, usize);

impl Segment {
    fn render(self, sym: &str, nm: &Names, c: Config, p: Problem, lang: Language) -> Rendered {
        let (m, k, n) = (p.m as i32, p.k as i32, p.n as i32);
        let mut body = String::new();
        let (buffers, scalars, global): (Vec<Buffer>, Vec<i32>, usize) = match self {
            Segment::Zero => (vec![Buffer::Y], vec![m, n], p.m * p.n),
            Segment::Matmul if c.fuse => (
                vec![Buffer::Y, Buffer::X, Buffer::W, Buffer::B],
                vec![m, k, n],
                p.m * p.n,
            ),
            Segment::Matmul => (
                vec![Buffer::Y, Buffer::X, Buffer::W],
                vec![m, k, n],
                p.m * p.n,
            ),
            Segment::BiasRelu => (
                vec![Buffer::Y, Buffer::B],
                vec![m, n],
                (p.m * p.n).div_ceil(c.vector),
            ),
            Segment::Softmax => (vec![Buffer::Y], vec![m, n], p.m),
        };
        let scalar_names: &[&str] = match self {
            Segment::Matmul => &["m", "k", "n"],
            _ => &["m", "n"],
        };
        let serial = lang == Language::C;
        let gid = symbol();
        // The C rendering loops over what each GPU work item does alone.
        let (open, close) = if serial {
            (
                format!(
                    "  for (int {gid} = 0; {gid} < {}; {gid}++) {{\n",
                    global_expr(self, c)
                ),
                "  }\n".to_string(),
            )
        } else {
            let id = match lang {
                Language::OpenCl => "(int)get_global_id(0)".to_string(),
                Language::Cuda => "(int)(blockIdx.x * blockDim.x + threadIdx.x)".to_string(),
                Language::Glsl => "int(gl_GlobalInvocationID.x)".to_string(),
                Language::C => unreachable!(),
            };
            (
                format!(
                    "  int {gid} = {id};\n  if ({gid} < {}) {{\n",
                    global_expr(self, c)
                ),
                "  }\n".to_string(),
            )
        };
        body.push_str(&open);
        let (y, x, w, b) = (&nm.y, &nm.x, &nm.w, &nm.b);
        match self {
            Segment::Zero => {
                let _ = writeln!(body, "    {y}[{gid}] = 0.0f;");
            }
            Segment::Matmul => {
                let (row, col, acc) = (local("row"), local("col"), local("acc"));
                let (tile, end, step) = (symbol(), local("end"), symbol());
                let _ = writeln!(body, "    int {row} = {gid} / n;\n    int {col} = {gid} % n;\n    float {acc} = 0.0f;");
                let _ = writeln!(
                    body,
                    "    for (int {tile} = 0; {tile} < k; {tile} += {}) {{",
                    c.tile
                );
                let _ = writeln!(
                    body,
                    "      int {end} = min({tile} + {}, k);\n      int {step} = {tile};",
                    c.tile
                );
                let _ = writeln!(
                    body,
                    "      for (; {step} + {} <= {end}; {step} += {}) {{",
                    c.unroll, c.unroll
                );
                for u in 0..c.unroll {
                    let _ = writeln!(body, "        {acc} += {x}[{row} * k + {step} + {u}] * {w}[({step} + {u}) * n + {col}];");
                }
                let _ = writeln!(body, "      }}\n      for (; {step} < {end}; {step}++) {acc} += {x}[{row} * k + {step}] * {w}[{step} * n + {col}];\n    }}");
                if c.fuse {
                    let _ = writeln!(body, "    {y}[{gid}] = max({acc} + {b}[{col}], 0.0f);");
                } else {
                    let _ = writeln!(body, "    {y}[{gid}] += {acc};");
                }
            }
            Segment::BiasRelu => {
                let base = local("base");
                let _ = writeln!(body, "    int {base} = {gid} * {};", c.vector);
                for v in 0..c.vector {
                    let _ = writeln!(
                        body,
                        "    if ({base} + {v} < m * n) {y}[{base} + {v}] = max({y}[{base} + {v}] + {b}[({base} + {v}) % n], 0.0f);"
                    );
                }
            }
            Segment::Softmax => {
                let (col, row) = (symbol(), local("row"));
                let (ymax, ysum) = (format!("{y}_max"), format!("{y}_sum"));
                let _ = writeln!(
                    body,
                    "    int {row} = {gid} * n;\n    float {ymax} = {y}[{row}];"
                );
                let _ = writeln!(body, "    for (int {col} = 1; {col} < n; {col}++) {ymax} = max({ymax}, {y}[{row} + {col}]);");
                let _ = writeln!(body, "    float {ysum} = 0.0f;");
                let _ = writeln!(body, "    for (int {col} = 0; {col} < n; {col}++) {{ {y}[{row} + {col}] = exp({y}[{row} + {col}] - {ymax}); {ysum} += {y}[{row} + {col}]; }}");
                let _ = writeln!(
                    body,
                    "    for (int {col} = 0; {col} < n; {col}++) {y}[{row} + {col}] /= {ysum};"
                );
            }
        }
        body.push_str(&close);
        let text = wrap(sym, nm, &buffers, scalar_names, &body, lang);
        (text, buffers, scalars, global)
    }
}

/// The work size as an expression of the kernel's scalars.
fn global_expr(seg: Segment, c: Config) -> String {
    match seg {
        Segment::Zero | Segment::Matmul => "m * n".into(),
        Segment::BiasRelu => format!("(m * n + {}) / {}", c.vector - 1, c.vector),
        Segment::Softmax => "m".into(),
    }
}

/// A kernel's signature and body in `lang`, after the language's prelude.
fn wrap(
    sym: &str,
    nm: &Names,
    buffers: &[Buffer],
    scalars: &[&str],
    body: &str,
    lang: Language,
) -> String {
    let mut s = String::new();
    match lang {
        Language::C => {
            // `min`, `max` and `exp` as the GPU languages spell them.
            s.push_str("#include <math.h>\n#define min(a, b) ((a) < (b) ? (a) : (b))\n#define max(a, b) fmaxf(a, b)\n#define exp expf\n");
            let params: Vec<String> = buffers
                .iter()
                .map(|b| format!("float* restrict {}", nm.get(*b)))
                .chain(scalars.iter().map(|n| format!("int {n}")))
                .collect();
            let _ = write!(s, "void {sym}({}) {{\n{body}}}\n", params.join(", "));
        }
        Language::OpenCl => {
            let params: Vec<String> = buffers
                .iter()
                .map(|b| format!("__global float* restrict {}", nm.get(*b)))
                .chain(scalars.iter().map(|n| format!("int {n}")))
                .collect();
            let _ = write!(
                s,
                "__kernel void {sym}({}) {{\n{body}}}\n",
                params.join(", ")
            );
        }
        Language::Cuda => {
            s.push_str("#define max(a, b) fmaxf(a, b)\n#define exp expf\n");
            let params: Vec<String> = buffers
                .iter()
                .map(|b| format!("float* __restrict__ {}", nm.get(*b)))
                .chain(scalars.iter().map(|n| format!("int {n}")))
                .collect();
            let _ = write!(
                s,
                "extern \"C\" __global__ void {sym}({}) {{\n{body}}}\n",
                params.join(", ")
            );
        }
        Language::Glsl => {
            let _ = writeln!(s, "#version 450\nlayout(local_size_x = {WORK_GROUP}) in;");
            for (i, b) in buffers.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "layout(std430, set = 0, binding = {i}) buffer B{i} {{ float {}[]; }};",
                    nm.get(*b)
                );
            }
            let fields: String = scalars.iter().map(|n| format!(" int {n};")).collect();
            let _ = writeln!(s, "layout(push_constant) uniform Sizes {{{fields} }};");
            // GLSL spells `0.0f` as `0.0`.
            let _ = write!(s, "void {sym}() {{\n{}}}\n", body.replace("0.0f", "0.0"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::Renamer;

    fn canonical(k: &Kernel) -> Vec<u8> {
        Renamer::new(&k.canon).canonical_text(k.text.as_bytes())
    }

    #[test]
    fn the_space_has_36_points() {
        let s = search_space();
        assert_eq!(s.len(), 36);
        assert_eq!(s.iter().filter(|c| c.fuse).count(), 12);
    }

    #[test]
    fn two_renderings_of_a_candidate_differ_in_text_but_not_in_canonical_text() {
        let p = Problem { m: 4, k: 8, n: 4 };
        for lang in [
            Language::C,
            Language::OpenCl,
            Language::Cuda,
            Language::Glsl,
        ] {
            let a = render(search_space()[0], p, lang);
            let b = render(search_space()[0], p, lang);
            for (ka, kb) in a.kernels.iter().zip(&b.kernels) {
                assert_ne!(ka.text, kb.text, "{lang:?}: counters change the names");
                assert_eq!(canonical(ka), canonical(kb), "{lang:?}: {}", ka.text);
            }
        }
    }

    #[test]
    fn fusing_shifts_the_softmax_segment_which_still_canonicalizes_alike() {
        let p = Problem { m: 4, k: 8, n: 4 };
        let space = search_space();
        let unfused = render(space[0], p, Language::C);
        let fused = render(*space.iter().find(|c| c.fuse).unwrap(), p, Language::C);
        assert_eq!(unfused.kernels.len(), 4);
        assert_eq!(fused.kernels.len(), 3);
        assert_eq!(unfused.kernels[3].symbol, "dense__seg3");
        assert_eq!(fused.kernels[2].symbol, "dense__seg2");
        assert_eq!(canonical(&unfused.kernels[3]), canonical(&fused.kernels[2]));
        assert_ne!(canonical(&unfused.kernels[1]), canonical(&fused.kernels[1]));
    }

    #[test]
    fn the_reference_rows_sum_to_one() {
        let p = Problem { m: 3, k: 5, n: 7 };
        let y = Data::new(p, 1).reference(p);
        for row in y.chunks(p.n) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
    }
}
