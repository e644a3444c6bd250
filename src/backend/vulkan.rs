//! The Vulkan backend: GLSL compute shaders compiled to SPIR-V by glslang,
//! run through `ash` (the Vulkan loader opened at run time).
//!
//! # Kernels
//!
//! A kernel is a complete GLSL compute shader: its `#version` (450 or later),
//! its `layout(local_size_x = ...) in;`, and an entry function named by the
//! kernel's symbol (`void saxpy() { ... }`, not `main`). It follows the crate's
//! [`Launch`] convention: its `f32` buffers are `std430` storage buffers at
//! bindings `0..n` of set 0, in order, and its `i32` scalars are the members
//! of one `push_constant` block, in order. The launch must match the shader
//! exactly (so many buffers, so many scalars), which the backend checks.
//! The work-group size is the shader's `local_size_*`, so [`Launch::local`]
//! is used only by a shader that leaves it to specialization; the number of
//! work-groups is `ceil(global / local_size)`, and the shader guards its
//! index.
//!
//! # Compiling
//!
//! Each kernel is compiled on its own by `glslangValidator` (found on `PATH`,
//! or configured), all of a group's kernels at once, one process each. The
//! entry function keeps its name: the backend adds `#define <symbol> main`
//! after the `#version` line (with a `#line` directive, so diagnostics keep
//! their line numbers) and asks glslang for the entry point `<symbol>`
//! (`-e <symbol> --source-entrypoint main`); glslang's GLSL front end accepts
//! no other source entry point name. The option list goes to glslang; only
//! options that do not change where its input or output go are accepted
//! (`-D`, `-U`, `-O`, `-g`, `--target-env`, ...; see [`GLSLANG_OPTIONS`]).
//!
//! # Validation
//!
//! lavapipe does not validate SPIR-V, and invalid SPIR-V can crash a driver,
//! so every module is checked before a driver sees it: by `spirv-val` (from
//! SPIRV-Tools, when it is on `PATH`) at compile time, for the target
//! environment compiled for; and always, at compile and at load, by a
//! structural check of kcache's own: the SPIR-V header, every instruction's
//! length, a `GLCompute` entry point named by the symbol, and bindings and
//! push constants that follow the calling convention.
//!
//! # The program's bytes
//!
//! A small versioned container with a digest (see `Container`): the driver's
//! pipeline-cache data, when it holds more than its 32-byte header
//! (lavapipe's never does), then each kernel's symbol and SPIR-V. On load,
//! damaged bytes are refused before any driver call, and cache data is offered
//! to the driver only when its header names this device and driver.
//!
//! # Benchmarks
//!
//! Mesa keeps its own on-disk shader cache, which makes a cold pipeline build
//! look warm: set `MESA_SHADER_CACHE_DISABLE=true` when measuring.
//!
//! # Ownership
//!
//! A [`VulkanDevice`] owns the instance and the logical device. Every
//! [`VulkanProgram`] holds it by `Arc` and destroys its pipelines, layouts,
//! shader modules and pipeline cache in its own `drop`, so the device is
//! destroyed only after the last program built on it.
//!
//! # Teardown
//!
//! Programs live in a per-device handle cache
//! ([`KernelCache`], see
//! [`Vulkan::kernel_cache`]): compiling the same group, or loading the same
//! bytes, twice in a process answers the same program (the same pipelines).
//! The cache listens for device destroys of `vulkan` on the [`Hooks`] the
//! backend was built with ([`Vulkan::with_hooks`]; [`Vulkan::new`] uses the
//! process's). [`Backend::clear_cache`] clears it inside `around_clear`.
//!
//! [`Vulkan::destroy_device`] notifies device-destroy listeners of
//! `("vulkan", index)` first (evicting this device's programs here and the
//! memo of the layers above), then the backend lets go of its device. The
//! logical device and the instance are destroyed (`vkDeviceWaitIdle`,
//! `vkDestroyDevice`, `vkDestroyInstance`) when the last program handed out is
//! dropped, each program having destroyed its own pipelines first; until then
//! those programs stay usable. The backend compiles and loads nothing
//! afterwards.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use ash::vk;

use super::gpu::{self, Lifecycle};
use super::workdir;
use super::{Backend, BackendError, BackendInfo, CompileJob, Compiled, Language, Launch};
use crate::cache::guarded::KernelCache;
use crate::cache::hooks::{self, Hooks};

const FAMILY: &str = "vulkan";

/// The target environment glslang compiles for unless the options name one.
pub const DEFAULT_TARGET_ENV: &str = "vulkan1.0";

/// glslang options the backend passes through: flags (matched as prefixes
/// where they carry their value, like `-DNAME=1`), and options that take the
/// next element of the option list as their value. Everything else is refused,
/// since it could redirect glslang's input or output.
pub const GLSLANG_OPTIONS: GlslangOptions = GlslangOptions {
    prefixes: &["-D", "-U", "-O", "-g"],
    flags: &[
        "-g",
        "-R",
        "-w",
        "--suppress-warnings",
        "-r",
        "--relaxed-errors",
        "--nan-clamp",
        "--keep-uncalled",
        "--ku",
        "--enhanced-msgs",
        "--no-storage-format",
        "--nsf",
    ],
    with_value: &[
        "--target-env",
        "--glsl-version",
        "--define-macro",
        "--undef-macro",
        "--D",
        "--U",
    ],
};

/// See [`GLSLANG_OPTIONS`].
#[derive(Clone, Copy, Debug)]
pub struct GlslangOptions {
    /// Flags matched by prefix (their value is attached).
    pub prefixes: &'static [&'static str],
    /// Flags matched exactly.
    pub flags: &'static [&'static str],
    /// Options whose value is the next element of the list.
    pub with_value: &'static [&'static str],
}

/// How the Vulkan backend is set up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VulkanConfig {
    /// The device's index in the order the Vulkan loader enumerates them.
    pub device: usize,
    /// `glslangValidator`; `None` looks on `PATH`.
    pub glslang: Option<PathBuf>,
    /// `spirv-val`; `None` looks on `PATH`, and without one only the
    /// structural check runs.
    pub spirv_val: Option<PathBuf>,
}

// ---------------------------------------------------------------- SPIR-V ---

/// What kcache reads from a SPIR-V module, checking its structure on the way.
mod spirv {
    use std::collections::HashMap;

    const MAGIC: u32 = 0x0723_0203;
    const OP_ENTRY_POINT: u32 = 15;
    const OP_EXECUTION_MODE: u32 = 16;
    const OP_TYPE_STRUCT: u32 = 30;
    const OP_TYPE_POINTER: u32 = 32;
    const OP_VARIABLE: u32 = 59;
    const OP_DECORATE: u32 = 71;
    const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
    const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;
    const DECORATION_BLOCK: u32 = 2;
    const DECORATION_BUFFER_BLOCK: u32 = 3;
    const DECORATION_BINDING: u32 = 33;
    const DECORATION_DESCRIPTOR_SET: u32 = 34;
    const STORAGE_UNIFORM: u32 = 2;
    const STORAGE_PUSH_CONSTANT: u32 = 9;
    const STORAGE_STORAGE_BUFFER: u32 = 12;

    /// A compute entry point's interface, as the calling convention sees it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Reflection {
        /// The literal `LocalSize`, when the shader fixes it.
        pub local_size: Option<[u32; 3]>,
        /// How many storage buffers (bindings `0..buffers` of set 0).
        pub buffers: u32,
        /// How many 4-byte push-constant members.
        pub scalars: u32,
    }

    /// SPIR-V bytes as words; `None` unless the length is a multiple of 4.
    pub fn words(bytes: &[u8]) -> Option<Vec<u32>> {
        (bytes.len() % 4 == 0).then(|| {
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
    }

    /// Decodes a SPIR-V literal string (UTF-8, NUL-terminated, in words).
    fn string(words: &[u32]) -> Option<(String, usize)> {
        let mut bytes = Vec::new();
        for (i, word) in words.iter().enumerate() {
            for byte in word.to_le_bytes() {
                if byte == 0 {
                    return Some((String::from_utf8(bytes).ok()?, i + 1));
                }
                bytes.push(byte);
            }
        }
        None
    }

    /// Checks `words` is a well-formed module with a `GLCompute` entry point
    /// named `entry` whose interface follows the calling convention.
    pub fn reflect(words: &[u32], entry: &str) -> Result<Reflection, String> {
        if words.len() < 5 || words[0] != MAGIC {
            return Err("not SPIR-V (bad magic number or short header)".into());
        }
        if words[4] != 0 {
            return Err(format!("unknown SPIR-V schema {}", words[4]));
        }
        let bound = words[3];
        let mut entry_id = None;
        let mut local_sizes: HashMap<u32, [u32; 3]> = HashMap::new();
        let mut decorations: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        let mut variables: Vec<(u32, u32, u32)> = Vec::new(); // (id, pointer type, storage class)
        let mut pointers: HashMap<u32, u32> = HashMap::new(); // pointer type -> pointee
        let mut structs: HashMap<u32, u32> = HashMap::new(); // struct -> member count

        let mut at = 5;
        while at < words.len() {
            let opcode = words[at] & 0xffff;
            let count = (words[at] >> 16) as usize;
            if count == 0 || at + count > words.len() {
                return Err(format!("malformed instruction at word {at}"));
            }
            let operands = &words[at + 1..at + count];
            let need = |n: usize| {
                if operands.len() < n {
                    Err(format!(
                        "truncated instruction (opcode {opcode}) at word {at}"
                    ))
                } else {
                    Ok(())
                }
            };
            match opcode {
                OP_ENTRY_POINT => {
                    need(3)?;
                    let (name, _) = string(&operands[2..])
                        .ok_or_else(|| format!("bad entry point name at word {at}"))?;
                    if name == entry {
                        if operands[0] != EXECUTION_MODEL_GL_COMPUTE {
                            return Err(format!("entry point `{entry}` is not a compute shader"));
                        }
                        entry_id = Some(operands[1]);
                    }
                }
                OP_EXECUTION_MODE => {
                    need(2)?;
                    if operands[1] == EXECUTION_MODE_LOCAL_SIZE {
                        need(5)?;
                        local_sizes.insert(operands[0], [operands[2], operands[3], operands[4]]);
                    }
                }
                OP_TYPE_STRUCT => {
                    need(1)?;
                    structs.insert(operands[0], (operands.len() - 1) as u32);
                }
                OP_TYPE_POINTER => {
                    need(3)?;
                    pointers.insert(operands[0], operands[2]);
                }
                OP_VARIABLE => {
                    need(3)?;
                    variables.push((operands[1], operands[0], operands[2]));
                }
                OP_DECORATE => {
                    need(2)?;
                    let value = operands.get(2).copied().unwrap_or(0);
                    decorations
                        .entry(operands[0])
                        .or_default()
                        .push((operands[1], value));
                }
                _ => {}
            }
            at += count;
        }

        let entry_id = entry_id.ok_or_else(|| format!("no compute entry point named `{entry}`"))?;
        if entry_id >= bound {
            return Err("entry point id out of bounds".into());
        }
        let decoration = |id: u32, which: u32| {
            decorations
                .get(&id)
                .and_then(|d| d.iter().find(|(k, _)| *k == which).map(|(_, v)| *v))
        };
        let has = |id: u32, which: u32| decoration(id, which).is_some();

        let mut bindings = Vec::new();
        let mut push_constants = Vec::new();
        for &(id, pointer, storage) in &variables {
            let pointee = pointers.get(&pointer).copied();
            if storage == STORAGE_PUSH_CONSTANT {
                let members = pointee
                    .and_then(|t| structs.get(&t))
                    .ok_or("the push constant block is not a struct")?;
                push_constants.push(*members);
                continue;
            }
            let Some(binding) = decoration(id, DECORATION_BINDING) else {
                continue;
            };
            let set = decoration(id, DECORATION_DESCRIPTOR_SET).unwrap_or(0);
            if set != 0 {
                return Err(format!(
                    "binding {binding} is in descriptor set {set}; only set 0 is used"
                ));
            }
            let block = pointee.filter(|t| structs.contains_key(t));
            let storage_buffer = match (storage, block) {
                (STORAGE_STORAGE_BUFFER, Some(_)) => true,
                (STORAGE_UNIFORM, Some(t)) => {
                    has(t, DECORATION_BUFFER_BLOCK) && !has(t, DECORATION_BLOCK)
                }
                _ => false,
            };
            if !storage_buffer {
                return Err(format!(
                    "binding {binding} is not a storage buffer (the calling convention has only \
                     `buffer` blocks at bindings 0.. and one push_constant block)"
                ));
            }
            bindings.push(binding);
        }
        if push_constants.len() > 1 {
            return Err("more than one push_constant block".into());
        }
        bindings.sort_unstable();
        if bindings.iter().enumerate().any(|(i, b)| *b != i as u32) {
            return Err(format!(
                "storage buffers must be at bindings 0..{} without gaps or repeats (found {bindings:?})",
                bindings.len()
            ));
        }
        Ok(Reflection {
            local_size: local_sizes.get(&entry_id).copied(),
            buffers: bindings.len() as u32,
            scalars: push_constants.first().copied().unwrap_or(0),
        })
    }
}

// ------------------------------------------------------------- container ---

/// The program's bytes, sealed (`backend::gpu::seal`: `KCVKPROG`, a format
/// version, a blake3 digest): the pipeline-cache data, then the number of
/// kernels and each kernel's symbol and SPIR-V; integers are little-endian
/// `u32`s, and every byte string is length-prefixed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Container {
    pipeline_cache: Vec<u8>,
    kernels: Vec<(String, Vec<u8>)>,
}

const CONTAINER_MAGIC: &[u8; 8] = b"KCVKPROG";
const CONTAINER_VERSION: u32 = 1;

impl Container {
    fn encode(&self) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let mut body = Vec::new();
        put(&mut body, &self.pipeline_cache);
        body.extend_from_slice(&(self.kernels.len() as u32).to_le_bytes());
        for (symbol, spirv) in &self.kernels {
            put(&mut body, symbol.as_bytes());
            put(&mut body, spirv);
        }
        gpu::seal(CONTAINER_MAGIC, CONTAINER_VERSION, &body)
    }

    fn decode(bytes: &[u8]) -> Result<Container, String> {
        let mut reader = Reader(gpu::unseal(CONTAINER_MAGIC, CONTAINER_VERSION, bytes)?);
        let pipeline_cache = reader.bytes("pipeline cache")?.to_vec();
        let count = reader.u32("kernel count")?;
        let mut kernels = Vec::new();
        for _ in 0..count {
            let symbol = String::from_utf8(reader.bytes("symbol")?.to_vec())
                .map_err(|_| "a symbol is not UTF-8")?;
            if !gpu::is_identifier(&symbol) {
                return Err(format!(
                    "`{}` is not a kernel symbol",
                    symbol.escape_debug()
                ));
            }
            let spirv = reader.bytes("SPIR-V")?.to_vec();
            kernels.push((symbol, spirv));
        }
        if !reader.0.is_empty() {
            return Err(format!(
                "{} stray bytes after the last kernel",
                reader.0.len()
            ));
        }
        Ok(Container {
            pipeline_cache,
            kernels,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], String> {
        if self.0.len() < len {
            return Err(format!("truncated program: short {what}"));
        }
        let (head, tail) = self.0.split_at(len);
        self.0 = tail;
        Ok(head)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A length-prefixed byte string.
    fn bytes(&mut self, what: &str) -> Result<&'a [u8], String> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }
}

// ---------------------------------------------------------------- glslang ---

/// `glslangValidator` and, when present, `spirv-val`.
#[derive(Clone, Debug)]
struct Tools {
    glslang: PathBuf,
    glslang_version: String,
    spirv_val: Option<PathBuf>,
}

/// The first line of `tool --version`, or why it could not run.
fn tool_version(tool: &Path) -> Result<String, String> {
    let output = Command::new(tool)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().next().unwrap_or("").trim();
    // glslang says `Glslang Version: 11:12.0.0`; SPIRV-Tools `SPIRV-Tools v2023.1 ...`.
    let line = match line.strip_prefix("Glslang Version:") {
        Some(version) => format!("glslang {}", version.trim()),
        None => line.to_string(),
    };
    if line.is_empty() {
        return Err(format!("{}: no version from --version", tool.display()));
    }
    Ok(line)
}

impl Tools {
    fn find(config: &VulkanConfig) -> Result<Tools, String> {
        let glslang = match &config.glslang {
            Some(path) => path.clone(),
            None => gpu::find_on_path("glslangValidator").ok_or(
                "glslangValidator not found on PATH: install glslang (Debian: `glslang-tools`)",
            )?,
        };
        let glslang_version = tool_version(&glslang)?;
        let spirv_val = match &config.spirv_val {
            Some(path) => Some(path.clone()),
            None => gpu::find_on_path("spirv-val"),
        };
        Ok(Tools {
            glslang,
            glslang_version,
            spirv_val,
        })
    }
}

/// Checks the option list against [`GLSLANG_OPTIONS`]; returns the target
/// environment it names, if any.
fn check_options(options: &[String]) -> Result<Option<String>, String> {
    let allowed = GLSLANG_OPTIONS;
    let mut target_env = None;
    let mut i = 0;
    while i < options.len() {
        let option = options[i].as_str();
        if allowed.with_value.contains(&option) {
            let value = options
                .get(i + 1)
                .ok_or_else(|| format!("glslang option `{option}` needs a value after it"))?;
            if option == "--target-env" {
                target_env = Some(value.clone());
            }
            i += 2;
            continue;
        }
        let ok = allowed.flags.contains(&option)
            || allowed
                .prefixes
                .iter()
                .any(|p| option.len() > p.len() && option.starts_with(p));
        if !ok {
            return Err(format!(
                "glslang option `{option}` is not accepted (kcache passes only {}, {} and {} with a value)",
                allowed.prefixes.iter().map(|p| format!("{p}…")).collect::<Vec<_>>().join(", "),
                allowed.flags.join(", "),
                allowed.with_value.join(", "),
            ));
        }
        i += 1;
    }
    Ok(target_env)
}

/// The kernel's text with its entry function renamed `main` by the
/// preprocessor, right after the `#version` line, and a `#line` directive
/// so diagnostics keep the original line numbers.
fn entry_as_main(text: &str, symbol: &str) -> Result<String, String> {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .strip_prefix('#')
                .is_some_and(|rest| rest.trim_start().starts_with("version"))
        })
        .ok_or("a GLSL kernel must begin with a #version directive (e.g. `#version 450`)")?;
    // `#line N` numbers the next line N from GLSL 3.30 (and ESSL 3.00) on,
    // N + 1 before.
    let version: u32 = lines[at]
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or(0);
    let es = lines[at].split_whitespace().any(|w| w == "es");
    let next_line = at + 2; // 1-based number of the line after #version
    let directive_value = if version >= 330 || (es && version >= 300) {
        next_line
    } else {
        next_line - 1
    };
    let header = lines[at];
    let newline = if header.ends_with('\n') { "" } else { "\n" };
    let inserted = format!("{newline}#define {symbol} main\n#line {directive_value}\n");
    let mut out = String::with_capacity(text.len() + inserted.len());
    for line in &lines[..=at] {
        out.push_str(line);
    }
    out.push_str(&inserted);
    for line in lines.drain(at + 1..) {
        out.push_str(line);
    }
    Ok(out)
}

/// Output of a tool that ran, as one log.
fn tool_log(output: &std::process::Output) -> String {
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    log
}

/// Compiles one kernel to checked SPIR-V; an error is the log to report.
fn compile_kernel(
    tools: &Tools,
    dir: &Path,
    symbol: &str,
    text: &str,
    options: &[String],
    target_env: &str,
    options_name_env: bool,
) -> Result<Vec<u8>, String> {
    let source = dir.join(format!("{symbol}.comp"));
    let output = dir.join(format!("{symbol}.spv"));
    let prepared = entry_as_main(text, symbol).map_err(|e| format!("{symbol}: {e}"))?;
    workdir::write_new(&source, prepared.as_bytes())
        .map_err(|e| format!("{}: {e}", source.display()))?;

    let mut command = Command::new(&tools.glslang);
    workdir::private_umask(&mut command);
    command.current_dir(dir).args(["-V", "-S", "comp"]);
    if !options_name_env {
        command.args(["--target-env", target_env]);
    }
    command
        .args(["-e", symbol, "--source-entrypoint", "main"])
        .args(options)
        .arg("-o")
        .arg(output.file_name().expect("a file name"))
        .arg(source.file_name().expect("a file name"))
        .stdin(std::process::Stdio::null());
    let result = command
        .output()
        .map_err(|e| format!("{}: {e}", tools.glslang.display()))?;
    if !result.status.success() {
        return Err(tool_log(&result));
    }
    let spirv = std::fs::read(&output).map_err(|e| format!("{}: {e}", output.display()))?;

    if let Some(spirv_val) = &tools.spirv_val {
        let result = Command::new(spirv_val)
            .args(["--target-env", target_env])
            .arg(&output)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", spirv_val.display()))?;
        if !result.status.success() {
            return Err(format!(
                "spirv-val rejected `{symbol}`:\n{}",
                tool_log(&result)
            ));
        }
    }
    let words = spirv::words(&spirv)
        .ok_or("glslang wrote a SPIR-V file whose length is not whole words")?;
    spirv::reflect(&words, symbol).map_err(|e| format!("{symbol}: {e}"))?;
    Ok(spirv)
}

// ----------------------------------------------------------------- device ---

/// One Vulkan device: the instance, the logical device and its compute
/// queue. Shared by the backend and every program built on it.
pub struct VulkanDevice {
    device: ash::Device,
    instance: ash::Instance,
    queue: Mutex<vk::Queue>,
    queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    limits: vk::PhysicalDeviceLimits,
    vendor_id: u32,
    device_id: u32,
    cache_uuid: [u8; vk::UUID_SIZE],
    index: usize,
    name: String,
    driver: String,
    // Keeps the loader library loaded while anything above lives.
    _entry: ash::Entry,
}

impl VulkanDevice {
    /// The device's name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver, e.g. `llvmpipe Mesa 22.3.6 (LLVM 15.0.6)`.
    pub fn driver(&self) -> &str {
        &self.driver
    }

    /// The device's index (see [`VulkanConfig::device`]).
    pub fn index(&self) -> usize {
        self.index
    }

    fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.memory.memory_type_count).find(|&i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[i as usize]
                    .property_flags
                    .contains(flags)
        })
    }

    /// Whether pipeline-cache data's header names this device and driver.
    fn accepts_cache(&self, data: &[u8]) -> bool {
        let word = |at: usize| {
            data.get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        data.len() > PIPELINE_CACHE_HEADER
            && word(0) == Some(PIPELINE_CACHE_HEADER as u32)
            && word(4) == Some(vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32)
            && word(8) == Some(self.vendor_id)
            && word(12) == Some(self.device_id)
            && data[16..32] == self.cache_uuid
    }
}

/// `VkPipelineCacheHeaderVersionOne`: 4 `u32`s and a UUID. Data no longer
/// than this holds no pipelines.
const PIPELINE_CACHE_HEADER: usize = 16 + vk::UUID_SIZE;

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        // SAFETY: every program holds this device by Arc, so none is left;
        // waiting idle first lets in-flight work finish.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

impl std::fmt::Debug for VulkanDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanDevice")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("driver", &self.driver)
            .finish()
    }
}

fn c_str_field(field: Result<&std::ffi::CStr, std::ffi::FromBytesUntilNulError>) -> String {
    field
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The loader and an instance; the caller destroys the instance.
fn instance() -> Result<(ash::Entry, ash::Instance, u32), String> {
    // SAFETY: loading the Vulkan loader runs its initializers, which have no
    // preconditions.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| {
        format!(
            "the Vulkan loader (libvulkan.so.1) was not found ({e}); install it and a driver, \
             e.g. `libvulkan1 mesa-vulkan-drivers`"
        )
    })?;
    // SAFETY: a plain query.
    let loader = unsafe { entry.try_enumerate_instance_version() }
        .ok()
        .flatten()
        .unwrap_or(vk::API_VERSION_1_0);
    let api = loader.min(vk::API_VERSION_1_3);
    let app = vk::ApplicationInfo::default()
        .application_name(c"kcache")
        .api_version(api);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: a valid create info with no extensions or layers.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => format!(
            "no Vulkan driver (vkCreateInstance: {e}); install one, e.g. `mesa-vulkan-drivers` (lavapipe)"
        ),
        e => format!("vkCreateInstance: {e}"),
    })?;
    Ok((entry, instance, api))
}

/// A physical device's name and driver, without creating a logical device.
fn describe(instance: &ash::Instance, api: u32, physical: vk::PhysicalDevice) -> (String, String) {
    // SAFETY: `physical` came from this instance.
    let properties = unsafe { instance.get_physical_device_properties(physical) };
    let name = c_str_field(properties.device_name_as_c_str());
    let mut driver = format!(
        "driver version {:#x}, Vulkan {}.{}.{}",
        properties.driver_version,
        vk::api_version_major(properties.api_version),
        vk::api_version_minor(properties.api_version),
        vk::api_version_patch(properties.api_version)
    );
    if api >= vk::API_VERSION_1_1 && properties.api_version >= vk::API_VERSION_1_2 {
        let mut ids = vk::PhysicalDeviceDriverProperties::default();
        let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut ids);
        // SAFETY: Vulkan 1.2 devices report driver properties; the
        // instance is 1.1 or later, so the call exists.
        unsafe { instance.get_physical_device_properties2(physical, &mut properties2) };
        driver = format!(
            "{} {}, {driver}",
            c_str_field(ids.driver_name_as_c_str()),
            c_str_field(ids.driver_info_as_c_str())
        );
    }
    (name, driver)
}

fn open_device(index: usize) -> Result<VulkanDevice, String> {
    let (entry, instance, api) = instance()?;
    // Destroys the instance on every early return below.
    struct InstanceGuard(Option<ash::Instance>);
    impl Drop for InstanceGuard {
        fn drop(&mut self) {
            if let Some(instance) = self.0.take() {
                // SAFETY: nothing created from it survives.
                unsafe { instance.destroy_instance(None) };
            }
        }
    }
    let mut guard = InstanceGuard(Some(instance));
    let instance = guard.0.as_ref().expect("set above");

    // SAFETY: plain queries on a live instance.
    let physicals = unsafe { instance.enumerate_physical_devices() }
        .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))?;
    let count = physicals.len();
    let physical = *physicals
        .get(index)
        .ok_or_else(|| format!("no Vulkan device {index} (there are {count})"))?;
    let (name, driver) = describe(instance, api, physical);
    // SAFETY: plain queries on a device of this instance.
    let (properties, families, memory) = unsafe {
        (
            instance.get_physical_device_properties(physical),
            instance.get_physical_device_queue_family_properties(physical),
            instance.get_physical_device_memory_properties(physical),
        )
    };
    let queue_family = families
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or_else(|| format!("{name} has no compute queue"))? as u32;
    let priorities = [1.0f32];
    let queue_info = vk::DeviceQueueCreateInfo::default()
        .queue_family_index(queue_family)
        .queue_priorities(&priorities);
    let device_info =
        vk::DeviceCreateInfo::default().queue_create_infos(std::slice::from_ref(&queue_info));
    // SAFETY: a valid create info for a device of this instance.
    let device = unsafe { instance.create_device(physical, &device_info, None) }
        .map_err(|e| format!("vkCreateDevice on {name}: {e}"))?;
    // SAFETY: the family was requested with one queue.
    let queue = unsafe { device.get_device_queue(queue_family, 0) };
    Ok(VulkanDevice {
        device,
        instance: guard.0.take().expect("set above"),
        queue: Mutex::new(queue),
        queue_family,
        memory,
        limits: properties.limits,
        vendor_id: properties.vendor_id,
        device_id: properties.device_id,
        cache_uuid: properties.pipeline_cache_uuid,
        index,
        name,
        driver,
        _entry: entry,
    })
}

// ---------------------------------------------------------------- program ---

/// One kernel's driver objects and interface.
struct Kernel {
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    shader: vk::ShaderModule,
    reflection: spirv::Reflection,
}

/// A group's kernels as compute pipelines on one device.
pub struct VulkanProgram {
    kernels: HashMap<String, Kernel>,
    pipeline_cache: vk::PipelineCache,
    // Last: the device outlives the objects destroyed in `drop`.
    device: Arc<VulkanDevice>,
}

impl VulkanProgram {
    /// The device the program was built on.
    pub fn device(&self) -> &Arc<VulkanDevice> {
        &self.device
    }

    /// The program's kernels, sorted.
    pub fn symbols(&self) -> Vec<&str> {
        let mut symbols: Vec<&str> = self.kernels.keys().map(String::as_str).collect();
        symbols.sort_unstable();
        symbols
    }

    /// Builds the pipelines of `kernels` (symbol, SPIR-V), offering
    /// `cache_data` to the driver when it is this driver's.
    fn build(
        device: &Arc<VulkanDevice>,
        kernels: &[(String, Vec<u8>)],
        cache_data: &[u8],
    ) -> Result<VulkanProgram, String> {
        let d = &device.device;
        let initial: &[u8] = if device.accepts_cache(cache_data) {
            cache_data
        } else {
            if !cache_data.is_empty() {
                tracing::debug!(
                    "vulkan: pipeline cache data is for another device or driver; ignored"
                );
            }
            &[]
        };
        let cache_info = vk::PipelineCacheCreateInfo::default().initial_data(initial);
        // SAFETY: a valid create info on a live device.
        let pipeline_cache = unsafe { d.create_pipeline_cache(&cache_info, None) }
            .map_err(|e| format!("vkCreatePipelineCache: {e}"))?;
        // From here on, `program`'s drop destroys whatever was created.
        let mut program = VulkanProgram {
            kernels: HashMap::new(),
            pipeline_cache,
            device: device.clone(),
        };
        for (symbol, spirv) in kernels {
            let kernel = program
                .kernel(symbol, spirv)
                .map_err(|e| format!("{symbol}: {e}"))?;
            program.kernels.insert(symbol.clone(), kernel);
        }
        Ok(program)
    }

    fn kernel(&self, symbol: &str, spirv: &[u8]) -> Result<Kernel, String> {
        let device = &self.device;
        let d = &device.device;
        let words = spirv::words(spirv).ok_or("SPIR-V length is not whole words")?;
        let reflection = spirv::reflect(&words, symbol)?;
        let push_bytes = reflection.scalars * 4;
        if push_bytes > device.limits.max_push_constants_size {
            return Err(format!(
                "{} scalars need {push_bytes} bytes of push constants; {} allows {}",
                reflection.scalars, device.name, device.limits.max_push_constants_size
            ));
        }
        let entry = CString::new(symbol).map_err(|_| "symbol contains NUL")?;

        let mut kernel = Kernel {
            pipeline: vk::Pipeline::null(),
            layout: vk::PipelineLayout::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            shader: vk::ShaderModule::null(),
            reflection,
        };
        // Destroys what was created if a later step fails.
        let result = (|| -> Result<(), String> {
            // SAFETY: create infos built from live data on a live device;
            // the SPIR-V passed the structural check.
            unsafe {
                kernel.shader = d
                    .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
                    .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
                let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..kernel.reflection.buffers)
                    .map(|b| {
                        vk::DescriptorSetLayoutBinding::default()
                            .binding(b)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .descriptor_count(1)
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                    })
                    .collect();
                kernel.set_layout = d
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                        None,
                    )
                    .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
                let ranges: Vec<vk::PushConstantRange> = (push_bytes > 0)
                    .then(|| {
                        vk::PushConstantRange::default()
                            .stage_flags(vk::ShaderStageFlags::COMPUTE)
                            .offset(0)
                            .size(push_bytes)
                    })
                    .into_iter()
                    .collect();
                let set_layouts = [kernel.set_layout];
                kernel.layout = d
                    .create_pipeline_layout(
                        &vk::PipelineLayoutCreateInfo::default()
                            .set_layouts(&set_layouts)
                            .push_constant_ranges(&ranges),
                        None,
                    )
                    .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(kernel.shader)
                    .name(&entry);
                let info = vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(kernel.layout);
                kernel.pipeline = d
                    .create_compute_pipelines(self.pipeline_cache, &[info], None)
                    .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(kernel),
            Err(e) => {
                self.destroy(&kernel);
                Err(e)
            }
        }
    }

    fn destroy(&self, kernel: &Kernel) {
        let d = &self.device.device;
        // SAFETY: the objects were created on this device and are no longer
        // in use (launches wait for their fence); null handles are ignored.
        unsafe {
            d.destroy_pipeline(kernel.pipeline, None);
            d.destroy_pipeline_layout(kernel.layout, None);
            d.destroy_descriptor_set_layout(kernel.set_layout, None);
            d.destroy_shader_module(kernel.shader, None);
        }
    }

    /// The driver's pipeline-cache data, when it holds more than a header.
    fn cache_data(&self) -> Vec<u8> {
        // SAFETY: the cache was created on this device.
        let data = unsafe {
            self.device
                .device
                .get_pipeline_cache_data(self.pipeline_cache)
        }
        .unwrap_or_default();
        if data.len() > PIPELINE_CACHE_HEADER {
            data
        } else {
            Vec::new()
        }
    }
}

impl Drop for VulkanProgram {
    fn drop(&mut self) {
        for kernel in self.kernels.values() {
            self.destroy(kernel);
        }
        // SAFETY: created on this device; no pipeline is being built.
        unsafe {
            self.device
                .device
                .destroy_pipeline_cache(self.pipeline_cache, None)
        };
    }
}

impl std::fmt::Debug for VulkanProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanProgram")
            .field("device", &self.device)
            .field("kernels", &self.symbols())
            .finish()
    }
}

// ----------------------------------------------------------------- launch ---

/// Everything one launch creates, destroyed when it goes out of scope (after
/// the launch's fence signalled, or before anything was submitted).
struct LaunchResources<'a> {
    device: &'a VulkanDevice,
    buffers: Vec<(vk::Buffer, vk::DeviceMemory, *mut f32)>,
    descriptor_pool: vk::DescriptorPool,
    command_pool: vk::CommandPool,
    fence: vk::Fence,
}

impl Drop for LaunchResources<'_> {
    fn drop(&mut self) {
        let d = &self.device.device;
        // SAFETY: created on this device; the launch either waited for its
        // fence or never submitted; null handles are ignored.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.command_pool, None);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            for &(buffer, memory, _) in &self.buffers {
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
            }
        }
    }
}

fn run(device: &VulkanDevice, kernel: &Kernel, launch: &mut Launch) -> Result<(), String> {
    let d = &device.device;
    let reflection = &kernel.reflection;
    if launch.buffers.len() != reflection.buffers as usize
        || launch.scalars.len() != reflection.scalars as usize
    {
        return Err(format!(
            "the shader takes {} buffers and {} scalars, the launch gives {} and {}",
            reflection.buffers,
            reflection.scalars,
            launch.buffers.len(),
            launch.scalars.len()
        ));
    }
    let local = match reflection.local_size {
        Some(size) => size.map(|s| s.max(1) as usize),
        None => gpu::local_size(launch).unwrap_or([1, 1, 1]),
    };
    let groups = gpu::group_count(gpu::global_size(launch), local);
    let limit = device.limits.max_compute_work_group_count;
    let mut group_counts = [0u32; 3];
    for dim in 0..3 {
        group_counts[dim] = u32::try_from(groups[dim])
            .ok()
            .filter(|&g| g <= limit[dim])
            .ok_or_else(|| {
                format!(
                    "{} work-groups in dimension {dim}; {} allows {}",
                    groups[dim], device.name, limit[dim]
                )
            })?;
    }

    let mut resources = LaunchResources {
        device,
        buffers: Vec::new(),
        descriptor_pool: vk::DescriptorPool::null(),
        command_pool: vk::CommandPool::null(),
        fence: vk::Fence::null(),
    };
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    // SAFETY: every object is created on this device, recorded into a
    // command buffer of this launch, and destroyed by `resources` after the
    // fence signalled; mapped pointers cover `max(len, 1)` floats.
    unsafe {
        for data in &launch.buffers {
            // Vulkan refuses zero-sized buffers: an empty one gets one float.
            let len = data.len().max(1);
            let info = vk::BufferCreateInfo::default()
                .size((len * 4) as vk::DeviceSize)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
                .sharing_mode(vk::SharingMode::EXCLUSIVE);
            let buffer = d
                .create_buffer(&info, None)
                .map_err(|e| format!("vkCreateBuffer: {e}"))?;
            let requirements = d.get_buffer_memory_requirements(buffer);
            let Some(memory_type) = device.memory_type(requirements.memory_type_bits, host) else {
                d.destroy_buffer(buffer, None);
                return Err(format!(
                    "{} has no host-visible coherent memory for buffers",
                    device.name
                ));
            };
            let memory = match d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(requirements.size)
                    .memory_type_index(memory_type),
                None,
            ) {
                Ok(memory) => memory,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(format!("vkAllocateMemory: {e}"));
                }
            };
            resources
                .buffers
                .push((buffer, memory, std::ptr::null_mut()));
            d.bind_buffer_memory(buffer, memory, 0)
                .map_err(|e| format!("vkBindBufferMemory: {e}"))?;
            let mapped = d
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .map_err(|e| format!("vkMapMemory: {e}"))? as *mut f32;
            std::ptr::copy_nonoverlapping(data.as_ptr(), mapped, data.len());
            resources.buffers.last_mut().expect("pushed above").2 = mapped;
        }

        let mut descriptor_set = vk::DescriptorSet::null();
        if !launch.buffers.is_empty() {
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(reflection.buffers)];
            resources.descriptor_pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                )
                .map_err(|e| format!("vkCreateDescriptorPool: {e}"))?;
            let set_layouts = [kernel.set_layout];
            descriptor_set = d
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(resources.descriptor_pool)
                        .set_layouts(&set_layouts),
                )
                .map_err(|e| format!("vkAllocateDescriptorSets: {e}"))?[0];
            let infos: Vec<vk::DescriptorBufferInfo> = resources
                .buffers
                .iter()
                .map(|&(buffer, _, _)| {
                    vk::DescriptorBufferInfo::default()
                        .buffer(buffer)
                        .offset(0)
                        .range(vk::WHOLE_SIZE)
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .enumerate()
                .map(|(binding, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(descriptor_set)
                        .dst_binding(binding as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(std::slice::from_ref(info))
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
        }

        resources.command_pool = d
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(device.queue_family)
                    .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                None,
            )
            .map_err(|e| format!("vkCreateCommandPool: {e}"))?;
        let command_buffer = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(resources.command_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
            .map_err(|e| format!("vkAllocateCommandBuffers: {e}"))?[0];
        d.begin_command_buffer(
            command_buffer,
            &vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
        )
        .map_err(|e| format!("vkBeginCommandBuffer: {e}"))?;
        d.cmd_bind_pipeline(
            command_buffer,
            vk::PipelineBindPoint::COMPUTE,
            kernel.pipeline,
        );
        if descriptor_set != vk::DescriptorSet::null() {
            d.cmd_bind_descriptor_sets(
                command_buffer,
                vk::PipelineBindPoint::COMPUTE,
                kernel.layout,
                0,
                &[descriptor_set],
                &[],
            );
        }
        if !launch.scalars.is_empty() {
            let bytes: Vec<u8> = launch
                .scalars
                .iter()
                .flat_map(|s| s.to_le_bytes())
                .collect();
            d.cmd_push_constants(
                command_buffer,
                kernel.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                &bytes,
            );
        }
        d.cmd_dispatch(
            command_buffer,
            group_counts[0],
            group_counts[1],
            group_counts[2],
        );
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        d.cmd_pipeline_barrier(
            command_buffer,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        );
        d.end_command_buffer(command_buffer)
            .map_err(|e| format!("vkEndCommandBuffer: {e}"))?;

        resources.fence = d
            .create_fence(&vk::FenceCreateInfo::default(), None)
            .map_err(|e| format!("vkCreateFence: {e}"))?;
        let command_buffers = [command_buffer];
        let submit = vk::SubmitInfo::default().command_buffers(&command_buffers);
        {
            let queue = device.queue.lock().unwrap_or_else(|e| e.into_inner());
            d.queue_submit(*queue, &[submit], resources.fence)
                .map_err(|e| format!("vkQueueSubmit: {e}"))?;
        }
        // Once submitted, the resources may be released only after the fence
        // signalled: a failed wait leaves them to the device's teardown.
        if let Err(e) = d.wait_for_fences(&[resources.fence], true, u64::MAX) {
            std::mem::forget(resources);
            return Err(format!("vkWaitForFences: {e}"));
        }
        for (data, &(_, _, mapped)) in launch.buffers.iter_mut().zip(&resources.buffers) {
            std::ptr::copy_nonoverlapping(mapped, data.as_mut_ptr(), data.len());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- backend ---

/// The Vulkan backend, bound to one device.
#[derive(Debug)]
pub struct Vulkan {
    lifecycle: Lifecycle<VulkanDevice, VulkanProgram>,
    tools: Tools,
    identity: String,
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    gpu::unavailable(FAMILY, reason)
}

/// What `kcache backends` shows for Vulkan. Never panics; needs no GPU.
/// Available when the loader, a device and glslang are all present.
pub fn probe() -> BackendInfo {
    let mut info = gpu::info(FAMILY);
    let tools = Tools::find(&VulkanConfig::default());
    let devices = instance().and_then(|(_entry, instance, api)| {
        // SAFETY: plain queries on a live instance, destroyed right after.
        let found = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))
            .map(|physicals| {
                physicals
                    .into_iter()
                    .map(|p| {
                        let (name, driver) = describe(&instance, api, p);
                        format!("{name} ({driver})")
                    })
                    .collect::<Vec<_>>()
            });
        // SAFETY: nothing created from the instance survives.
        unsafe { instance.destroy_instance(None) };
        found
    });
    let mut reasons = Vec::new();
    match devices {
        Ok(devices) if devices.is_empty() => reasons.push(
            "no Vulkan device: install a driver, e.g. `mesa-vulkan-drivers` (lavapipe)".to_string(),
        ),
        Ok(devices) => info.devices = devices,
        Err(reason) => reasons.push(reason),
    }
    match &tools {
        Ok(tools) => {
            info.version = Some(tools.glslang_version.clone());
            if tools.spirv_val.is_none() && reasons.is_empty() {
                info.reason = Some(
                    "spirv-val not found (SPIRV-Tools): SPIR-V gets kcache's structural check only"
                        .into(),
                );
            }
        }
        Err(reason) => reasons.push(reason.clone()),
    }
    info.available = reasons.is_empty();
    if !reasons.is_empty() {
        info.reason = Some(reasons.join("; "));
    }
    info
}

impl Vulkan {
    /// Finds glslang (and spirv-val) and opens the configured device.
    /// Returns [`BackendError::Unavailable`] without a loader, a device or
    /// glslang. The handle cache listens to the process's hooks
    /// ([`hooks::global`]).
    pub fn new(config: &VulkanConfig) -> Result<Self, BackendError> {
        Self::with_hooks(config, hooks::global())
    }

    /// [`Vulkan::new`], with the handle cache's device-destroy listener
    /// registered on `hooks` (and teardown notifications sent there).
    pub fn with_hooks(config: &VulkanConfig, hooks: &Hooks) -> Result<Self, BackendError> {
        let tools = Tools::find(config).map_err(unavailable)?;
        workdir::sweep_temp_root();
        let device = open_device(config.device).map_err(unavailable)?;
        let identity = format!(
            "vulkan;glslang={};device={};driver={};cache={}",
            tools.glslang_version,
            device.name,
            device.driver,
            device
                .cache_uuid
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Ok(Vulkan {
            lifecycle: Lifecycle::new(FAMILY, config.device, Some(Arc::new(device)), hooks),
            tools,
            identity,
        })
    }

    /// The device this backend compiles for; `None` once
    /// [`Vulkan::destroy_device`] ran.
    pub fn device(&self) -> Option<Arc<VulkanDevice>> {
        self.lifecycle.current()
    }

    /// The per-device handle cache of loaded programs (for inspection; the
    /// backend fills and empties it). A compiled group's entry holds its
    /// bytes; a loaded program's holds none.
    pub fn kernel_cache(&self) -> &KernelCache<Compiled<VulkanProgram>> {
        self.lifecycle.kernels()
    }

    /// Tears the device down as the teardown contract asks: notifies
    /// device-destroy listeners of `("vulkan", index)` first (this backend's
    /// cache evicts the device's programs, the layers above forget theirs),
    /// then lets go of the device, and only then reports a listener failure
    /// ([`BackendError::Teardown`]). Programs handed out stay usable and keep
    /// the device alive until the last is dropped (see the module docs); the
    /// backend compiles and loads nothing afterwards. Calling it again only
    /// notifies again.
    pub fn destroy_device(&self) -> Result<(), BackendError> {
        self.lifecycle.destroy_device()
    }

    /// Compiles a checked group's kernels to SPIR-V (one glslang process per
    /// kernel, all at once) and builds their pipelines on `device`.
    fn compile_on(
        &self,
        device: &Arc<VulkanDevice>,
        job: &CompileJob<'_>,
    ) -> Result<Compiled<VulkanProgram>, BackendError> {
        let fail = gpu::compile_error(FAMILY, job);
        let named_env = check_options(job.options).map_err(fail)?;
        let options_name_env = named_env.is_some();
        let target_env = named_env
            .clone()
            .unwrap_or_else(|| DEFAULT_TARGET_ENV.to_string());
        // Private (see `workdir`): glslang's input and output are read back.
        let dir = workdir::PrivateDir::create("glslang", None, false)
            .map_err(|e| fail(format!("cannot create a temporary directory: {e}")))?;
        let results: Vec<Result<Vec<u8>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = job
                .kernels
                .iter()
                .map(|kernel| {
                    let (tools, dir, env) = (&self.tools, dir.path(), target_env.as_str());
                    scope.spawn(move || {
                        compile_kernel(
                            tools,
                            dir,
                            kernel.symbol,
                            kernel.text,
                            job.options,
                            env,
                            options_name_env,
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("the glslang thread panicked".into()))
                })
                .collect()
        });
        let mut logs = Vec::new();
        let mut kernels = Vec::new();
        for (kernel, result) in job.kernels.iter().zip(results) {
            match result {
                Ok(spirv) => kernels.push((kernel.symbol.to_string(), spirv)),
                Err(log) => logs.push(log),
            }
        }
        if !logs.is_empty() {
            return Err(fail(logs.join("\n")));
        }
        let program = VulkanProgram::build(device, &kernels, &[]).map_err(fail)?;
        let binary = Container {
            pipeline_cache: program.cache_data(),
            kernels,
        }
        .encode();
        Ok(Compiled {
            program: Arc::new(program),
            binary,
            uncacheable: None,
        })
    }

    /// Whether compiled SPIR-V goes through `spirv-val`.
    pub fn validates_with_spirv_val(&self) -> bool {
        self.tools.spirv_val.is_some()
    }
}

impl Backend for Vulkan {
    fn key_extras(
        &self,
        kernel: &super::KernelSource<'_>,
        options: &[String],
    ) -> Result<super::KeyExtras, BackendError> {
        super::gpu_keys::key_extras(FAMILY, super::gpu_keys::Driver::Vulkan, kernel, options)
    }

    type Program = VulkanProgram;

    fn family(&self) -> &'static str {
        FAMILY
    }

    /// glslang compiles each kernel of a group as a shader of its own.
    fn isolates_kernels(&self) -> bool {
        true
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn compile(&self, job: &CompileJob<'_>) -> Result<Compiled<VulkanProgram>, BackendError> {
        gpu::check_job(FAMILY, job)?;
        // glslang compiles each kernel on its own; the concatenation is the
        // group's source only for its key.
        let source = gpu::concatenate(job);
        let (extras, uncacheable) =
            super::gpu_keys::group_key_part(FAMILY, super::gpu_keys::Driver::Vulkan, job);
        let keyed = format!("{source}{extras}");
        let mut compiled = self.lifecycle.compile(job, &keyed, |device| {
            self.compile_on(&gpu::opened(FAMILY, device)?, job)
        })?;
        compiled.uncacheable = uncacheable;
        Ok(compiled)
    }

    fn load(&self, binary: &[u8], symbols: &[&str]) -> Result<Arc<VulkanProgram>, BackendError> {
        let fail = |reason: String| BackendError::Load {
            backend: FAMILY,
            reason,
        };
        let container = Container::decode(binary).map_err(fail)?;
        if let Some(missing) = symbols
            .iter()
            .find(|s| !container.kernels.iter().any(|(k, _)| k == *s))
        {
            return Err(BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: missing.to_string(),
            });
        }
        self.lifecycle.load(binary, |device| {
            VulkanProgram::build(
                &gpu::opened(FAMILY, device)?,
                &container.kernels,
                &container.pipeline_cache,
            )
            .map(Arc::new)
            .map_err(fail)
        })
    }

    fn clear_cache(&self) -> Result<(), BackendError> {
        self.lifecycle.clear()
    }

    fn language(&self) -> Language {
        Language::Glsl
    }

    fn device_index(&self) -> usize {
        self.lifecycle.index()
    }

    fn can_run(&self) -> bool {
        self.device().is_some()
    }

    fn launch(
        &self,
        program: &VulkanProgram,
        symbol: &str,
        launch: &mut Launch,
    ) -> Result<(), BackendError> {
        let kernel = program
            .kernels
            .get(symbol)
            .ok_or_else(|| BackendError::MissingSymbol {
                backend: FAMILY,
                symbol: symbol.to_string(),
            })?;
        run(&program.device, kernel, launch).map_err(|reason| BackendError::Launch {
            backend: FAMILY,
            symbol: symbol.to_string(),
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_entry_is_renamed_after_the_version_line_keeping_line_numbers() {
        let text = "// header\n#version 450\nlayout(local_size_x = 1) in;\nvoid k() {}\n";
        assert_eq!(
            entry_as_main(text, "k").unwrap(),
            "// header\n#version 450\n#define k main\n#line 3\nlayout(local_size_x = 1) in;\nvoid k() {}\n"
        );
        // Before GLSL 3.30, `#line N` numbers the next line N + 1.
        let old = "#version 310 es\nvoid k() {}";
        assert!(entry_as_main(old, "k").unwrap().contains("#line 2\n"));
        let old = "#version 150\nvoid k() {}";
        assert!(entry_as_main(old, "k").unwrap().contains("#line 1\n"));
        // A #version line without a newline still gets one.
        assert_eq!(
            entry_as_main("  #  version 450", "k").unwrap(),
            "  #  version 450\n#define k main\n#line 2\n"
        );
        assert!(entry_as_main("void k() {}", "k").is_err());
    }

    #[test]
    fn options_are_checked_against_the_allowed_list() {
        let ok =
            |list: &[&str]| check_options(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(ok(&["-DX=1", "-Os", "-g", "-g0", "-w"]), Ok(None));
        assert_eq!(
            ok(&["--target-env", "vulkan1.2", "-UX"]),
            Ok(Some("vulkan1.2".to_string()))
        );
        for bad in [
            &["-D"][..],
            &["-o", "x"],
            &["--stdin"],
            &["-S", "comp"],
            &["--target-env"],
            &["file.comp"],
        ] {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
    }

    fn symbol() -> impl Strategy<Value = String> {
        "[a-z_][a-z0-9_]{0,12}"
    }

    proptest! {
        #[test]
        fn containers_round_trip(
            pipeline_cache in proptest::collection::vec(any::<u8>(), 0..64),
            kernels in proptest::collection::vec(
                (symbol(), proptest::collection::vec(any::<u8>(), 0..64)),
                0..5,
            ),
        ) {
            let container = Container { pipeline_cache, kernels };
            let bytes = container.encode();
            prop_assert_eq!(Container::decode(&bytes), Ok(container));
            // Every truncation is an error, never a panic or a shorter program.
            for len in 0..bytes.len() {
                prop_assert!(Container::decode(&bytes[..len]).is_err());
            }
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(Container::decode(&longer).is_err());
        }

        #[test]
        fn reflection_never_panics_on_garbage(words in proptest::collection::vec(any::<u32>(), 0..64)) {
            let _ = spirv::reflect(&words, "k");
            let mut with_header = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
            with_header.extend(words);
            let _ = spirv::reflect(&with_header, "k");
        }
    }

    #[test]
    fn spirv_words_need_whole_words() {
        assert_eq!(spirv::words(&[3, 2, 35, 7]), Some(vec![0x0723_0203]));
        assert_eq!(spirv::words(&[1, 2, 3]), None);
        assert!(spirv::reflect(&[0x0723_0203, 0x10000, 0, 1], "k").is_err());
        assert!(spirv::reflect(&[0xdead_beef, 0x10000, 0, 1, 0], "k").is_err());
        // A header with no entry point.
        let err = spirv::reflect(&[0x0723_0203, 0x10000, 0, 1, 0], "k").unwrap_err();
        assert!(err.contains("no compute entry point named `k`"), "{err}");
    }
}
