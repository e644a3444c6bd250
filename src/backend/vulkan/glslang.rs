//! `glslangValidator` and `spirv-val`: finding them, checking options
//! against the allowed list, and compiling one kernel to SPIR-V.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{spirv, VulkanConfig, GLSLANG_OPTIONS};
use crate::backend::{gpu, workdir};

/// `glslangValidator` and, when present, `spirv-val`.
#[derive(Clone, Debug)]
pub(super) struct Tools {
    pub(super) glslang: PathBuf,
    pub(super) glslang_version: String,
    pub(super) spirv_val: Option<PathBuf>,
}

/// The first line of `tool --version`, or why it could not run.
pub(super) fn tool_version(tool: &Path) -> Result<String, String> {
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
    pub(super) fn find(config: &VulkanConfig) -> Result<Tools, String> {
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
pub(super) fn check_options(options: &[String]) -> Result<Option<String>, String> {
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
pub(super) fn entry_as_main(text: &str, symbol: &str) -> Result<String, String> {
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
pub(super) fn tool_log(output: &std::process::Output) -> String {
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    log
}

/// Compiles one kernel to checked SPIR-V; an error is the log to report.
pub(super) fn compile_kernel(
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
