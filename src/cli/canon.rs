//! `kcache canon`, `kcache key`, `kcache digest`.

use super::{read_input, write_stdout, Failure};
use clap::{ArgAction, Args};
use kcache::canon::{CanonOptions, Derivation, Renamer};
use kcache::key::{digest_parts, make_key, Source};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// What the renamer may rename, as flags; shared by `canon` and `compile`.
#[derive(Args, Debug, Default)]
pub struct RenameFlags {
    /// The kernel's own name, replaced by its kernel token.
    #[arg(long, value_name = "NAME")]
    pub kernel_name: Option<String>,
    /// Names the kernel binds (comma-separated; repeatable).
    #[arg(long, value_name = "A,B", value_delimiter = ',', action = ArgAction::Append)]
    pub bound: Vec<String>,
    /// Names never renamed (comma-separated; repeatable).
    #[arg(long, value_name = "A,B", value_delimiter = ',', action = ArgAction::Append)]
    pub keep: Vec<String>,
    /// Names with a meaning outside the kernel: never renamed; a bound name
    /// among them refuses bound renaming (comma-separated; repeatable).
    #[arg(long, value_name = "A,B", value_delimiter = ',', action = ArgAction::Append)]
    pub free: Vec<String>,
    /// A derivation template: `*` marks the base (repeatable), e.g. `*_local`.
    #[arg(long, value_name = "PREFIX*SUFFIX", value_parser = parse_derivation, action = ArgAction::Append)]
    pub derivation: Vec<Derivation>,
    /// Do not rename loop/static-index symbols (`i` then digits).
    #[arg(long)]
    pub no_symbols: bool,
    /// Do not rename scope locals (`v`, digits, `_`, anything).
    #[arg(long)]
    pub no_scope_locals: bool,
    /// Also rename every name the kernel declares (parameters, locals,
    /// labels) whose occurrences all refer to its declaration: no `--bound`
    /// needed.
    #[arg(long)]
    pub infer: bool,
}

impl RenameFlags {
    /// The renamer options these flags describe.
    pub fn options(&self) -> CanonOptions {
        let names = |v: &[String]| v.iter().filter(|s| !s.is_empty()).cloned().collect();
        CanonOptions {
            kernel_name: self.kernel_name.clone(),
            bound: names(&self.bound),
            keep: names(&self.keep),
            free: names(&self.free),
            derivations: self.derivation.clone(),
            symbols: !self.no_symbols,
            scope_locals: !self.no_scope_locals,
            infer: self.infer,
        }
    }
}

fn parse_derivation(s: &str) -> Result<Derivation, String> {
    Derivation::parse(s).ok_or_else(|| format!("`{s}` is not PREFIX*SUFFIX with exactly one `*`"))
}

#[derive(Args, Debug)]
pub struct CanonArgs {
    #[command(flatten)]
    rename: RenameFlags,
    /// Print one JSON object: canonical, kernel_token, renamed, bound_renamed,
    /// reason, raw (why it is keyed on its raw text), uncacheable, kept
    /// (each name the rules or inference would rename that was left as
    /// written, with why), given_up (why no name was verified, if none was),
    /// unparsed (byte ranges of items not parsed) and, with `--infer`,
    /// inferred.
    #[arg(long)]
    json: bool,
    /// The kernel text; standard input when absent or `-`.
    file: Option<PathBuf>,
}

pub fn canon(args: CanonArgs) -> Result<ExitCode, Failure> {
    let text = read_input(&args.file)?;
    let c = Renamer::new(&args.rename.options()).canonicalize(&text);
    if args.json {
        let renamed: serde_json::Map<String, serde_json::Value> = c
            .renamed
            .iter()
            .map(|(from, to)| (from.clone(), serde_json::Value::String(to.clone())))
            .collect();
        let kept: serde_json::Map<String, serde_json::Value> = c
            .kept
            .iter()
            .map(|(name, why)| (name.clone(), serde_json::Value::String(why.clone())))
            .collect();
        let mut obj = serde_json::json!({
            "canonical": c.text_lossy(),
            "kernel_token": c.kernel_token,
            "renamed": renamed,
            "bound_renamed": c.bound_renamed,
            "reason": c.reason,
            "raw": c.raw,
            "uncacheable": c.uncacheable,
            "kept": kept,
            "given_up": c.given_up,
            "unparsed": c.unparsed,
        });
        if args.rename.infer {
            obj["inferred"] = serde_json::json!(c.inferred);
        }
        write_stdout(format!("{obj}\n").as_bytes())?;
    } else {
        write_stdout(&c.text)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct KeyArgs {
    /// A stable device identifier (any text: the key's device part; not a
    /// device index like `tune --device`).
    #[arg(long, value_name = "ID")]
    device_id: String,
    /// The kernel (entry point) name.
    #[arg(long)]
    name: String,
    /// A compile option (repeatable); order never matters.
    #[arg(long = "option", value_name = "K=V", value_parser = parse_option, action = ArgAction::Append)]
    options: Vec<(String, String)>,
    /// Print one JSON object: key, device_id, name.
    #[arg(long)]
    json: bool,
    /// The source; standard input when absent or `-`.
    file: Option<PathBuf>,
}

fn parse_option(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{s}` is not K=V"))
}

pub fn key(args: KeyArgs) -> Result<ExitCode, Failure> {
    let source = Source::new(read_input(&args.file)?);
    let key = make_key(&args.device_id, &args.name, &source, &args.options);
    let out = if args.json {
        serde_json::json!({
            "key": key.to_string(),
            "device_id": args.device_id,
            "name": args.name,
        })
        .to_string()
    } else {
        key.to_string()
    };
    write_stdout(format!("{out}\n").as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct DigestArgs {
    /// Print one JSON object: digest, parts (how many).
    #[arg(long)]
    json: bool,
    /// The parts, each length-prefixed before digesting.
    parts: Vec<OsString>,
}

pub fn digest(args: DigestArgs) -> Result<ExitCode, Failure> {
    use std::os::unix::ffi::OsStrExt;
    let hex = digest_parts(args.parts.iter().map(|p| p.as_bytes()));
    let out = if args.json {
        serde_json::json!({ "digest": hex.to_string(), "parts": args.parts.len() }).to_string()
    } else {
        hex.to_string()
    };
    write_stdout(format!("{out}\n").as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
