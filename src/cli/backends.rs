//! `kcache backends`: what can compile here, and why not.

use super::backend::probe_all;
use super::{write_stdout, Failure};
use clap::Args;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BackendsArgs {
    /// Print a JSON list of {"backend", "available", "version", "devices", "reason"}.
    #[arg(long)]
    json: bool,
}

pub fn backends(args: BackendsArgs) -> Result<ExitCode, Failure> {
    let infos = probe_all();
    let out = if args.json {
        format!(
            "{}\n",
            serde_json::to_string(&infos).map_err(|e| Failure(e.to_string()))?
        )
    } else {
        let mut s = String::new();
        for i in &infos {
            s.push_str(&format!(
                "{:<7} {:<11} {}\n",
                i.backend,
                if i.available {
                    "available"
                } else {
                    "unavailable"
                },
                i.version.as_deref().unwrap_or("-")
            ));
            for d in &i.devices {
                s.push_str(&format!("        device  {d}\n"));
            }
            if let Some(r) = &i.reason {
                s.push_str(&format!("        note    {r}\n"));
            }
        }
        s
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
