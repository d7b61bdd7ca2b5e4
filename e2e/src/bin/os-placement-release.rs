//! Release tooling for the policy: what `kwctl annotate`, `kwctl push` and
//! `kwctl pull` do, for machines without kwctl.
//!
//! ```text
//! os-placement-release annotate WASM -m metadata.yml [-u README.md] -o annotated-policy.wasm
//! os-placement-release push ANNOTATED_WASM registry://HOST/PATH:TAG [--insecure]
//! os-placement-release pull registry://HOST/PATH(:TAG|@DIGEST) -o FILE [--insecure]
//! os-placement-release artifacthub -m metadata.yml -o artifacthub-pkg.yml [--created-at TIME] [-q questions.yml]
//! ```
//!
//! Exit code: 0 on success, 1 on failure, 2 on a usage error.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use os_placement_e2e::annotate::{annotate_file, load_metadata};
use os_placement_e2e::artifacthub::{
    artifacthub_package, check_created_at, created_at_of, PackageInputs,
};
use os_placement_e2e::oci::{self, RegistryOptions};

const USAGE: &str = "\
usage: os-placement-release annotate WASM --metadata-path FILE [--usage-path FILE] --output-path FILE
       os-placement-release push ANNOTATED_WASM registry://HOST[:PORT]/PATH:TAG [--insecure]
       os-placement-release pull registry://HOST[:PORT]/PATH(:TAG|@sha256:DIGEST) --output-path FILE [--insecure]
       os-placement-release artifacthub --metadata-path FILE --output-path FILE [--created-at TIME] [--questions-path FILE]

  annotate   embed metadata.yml (and the usage text) in the io.kubewarden.metadata
             custom section, with the protocol version asked from the module
  push       push an annotated module as an OCI artifact; prints the reference with its digest
  pull       pull a policy (digest-checked) and write the module
  artifacthub  write artifacthub-pkg.yml from metadata.yml; createdAt is kept from the
             existing file for the same version, else --created-at (RFC 3339) is required
  --insecure plain HTTP (always used for 127.0.0.1 and localhost)
  credentials come from the docker config ($DOCKER_CONFIG or ~/.docker/config.json)";

/// Parsed command line.
#[derive(Debug, PartialEq)]
enum Command {
    Annotate {
        wasm: PathBuf,
        metadata: PathBuf,
        usage: Option<PathBuf>,
        output: PathBuf,
    },
    Push {
        wasm: PathBuf,
        reference: String,
        insecure: bool,
    },
    Pull {
        reference: String,
        output: PathBuf,
        insecure: bool,
    },
    Artifacthub {
        metadata: PathBuf,
        output: PathBuf,
        created_at: Option<String>,
        questions: Option<PathBuf>,
    },
    Help,
}

#[derive(Default)]
struct Flags {
    positional: Vec<String>,
    created_at: Option<String>,
    questions: Option<PathBuf>,
    metadata: Option<PathBuf>,
    usage: Option<PathBuf>,
    output: Option<PathBuf>,
    insecure: bool,
}

fn parse_flags(mut args: impl Iterator<Item = String>) -> Result<Flags> {
    let mut flags = Flags::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| anyhow!("{name} needs a value"));
        match arg.as_str() {
            "-m" | "--metadata-path" => flags.metadata = Some(value(&arg)?.into()),
            "-u" | "--usage-path" => flags.usage = Some(value(&arg)?.into()),
            "-o" | "--output-path" => flags.output = Some(value(&arg)?.into()),
            "--created-at" => flags.created_at = Some(value(&arg)?),
            "-q" | "--questions-path" => flags.questions = Some(value(&arg)?.into()),
            "--insecure" => flags.insecure = true,
            other if other.starts_with('-') => bail!("unknown flag {other}"),
            _ => flags.positional.push(arg),
        }
    }
    Ok(flags)
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command> {
    let Some(command) = args.next() else {
        bail!("a command is required");
    };
    if matches!(command.as_str(), "-h" | "--help" | "help") {
        return Ok(Command::Help);
    }
    let flags = parse_flags(args)?;
    let positional = |n: usize| -> Result<Vec<String>> {
        if flags.positional.len() == n {
            Ok(flags.positional.clone())
        } else {
            bail!(
                "{command} takes {n} argument(s), got {}",
                flags.positional.len()
            )
        }
    };
    let output = || flags.output.clone().context("--output-path is required");
    match command.as_str() {
        "annotate" => {
            let [wasm] = <[String; 1]>::try_from(positional(1)?).map_err(|_| anyhow!("WASM"))?;
            Ok(Command::Annotate {
                wasm: wasm.into(),
                metadata: flags
                    .metadata
                    .clone()
                    .context("--metadata-path is required")?,
                usage: flags.usage.clone(),
                output: output()?,
            })
        }
        "push" => {
            let [wasm, reference] = <[String; 2]>::try_from(positional(2)?)
                .map_err(|_| anyhow!("WASM and REFERENCE"))?;
            Ok(Command::Push {
                wasm: wasm.into(),
                reference,
                insecure: flags.insecure,
            })
        }
        "pull" => {
            let [reference] =
                <[String; 1]>::try_from(positional(1)?).map_err(|_| anyhow!("REFERENCE"))?;
            Ok(Command::Pull {
                reference,
                output: output()?,
                insecure: flags.insecure,
            })
        }
        "artifacthub" => {
            positional(0)?;
            Ok(Command::Artifacthub {
                metadata: flags
                    .metadata
                    .clone()
                    .context("--metadata-path is required")?,
                output: output()?,
                created_at: flags.created_at.clone(),
                questions: flags.questions.clone(),
            })
        }
        other => bail!("unknown command {other:?}"),
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Help => println!("{USAGE}"),
        Command::Annotate {
            wasm,
            metadata,
            usage,
            output,
        } => {
            let embedded = annotate_file(&wasm, &metadata, usage.as_deref(), &output)?;
            let protocol = embedded
                .get("protocolVersion")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            println!("{} (protocol {protocol})", output.display());
        }
        Command::Push {
            wasm,
            reference,
            insecure,
        } => {
            let module =
                std::fs::read(&wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
            let pushed = oci::push(&module, &reference, &RegistryOptions { insecure })?;
            println!("{}", pushed.reference);
        }
        Command::Pull {
            reference,
            output,
            insecure,
        } => {
            let pulled = oci::pull(&reference, &RegistryOptions { insecure })?;
            std::fs::write(&output, &pulled.module)
                .with_context(|| format!("cannot write {}", output.display()))?;
            println!(
                "{} ({}, {} bytes)",
                output.display(),
                pulled.digest,
                pulled.module.len()
            );
        }
        Command::Artifacthub {
            metadata,
            output,
            created_at,
            questions,
        } => write_artifacthub(&metadata, &output, created_at, questions)?,
    }
    Ok(())
}

/// `artifacthub`: regenerates the package file, keeping its `createdAt` for
/// an unchanged version.
fn write_artifacthub(
    metadata: &std::path::Path,
    output: &std::path::Path,
    created_at: Option<String>,
    questions: Option<PathBuf>,
) -> Result<()> {
    let metadata = serde_json::Value::Object(load_metadata(metadata)?);
    let existing = std::fs::read_to_string(output).ok();
    let version = metadata
        .pointer("/annotations/io.kubewarden.policy.version")
        .and_then(serde_json::Value::as_str);
    let same_version = existing.as_deref().is_some_and(|text| {
        serde_yaml::from_str::<serde_yaml::Value>(text)
            .ok()
            .and_then(|p| p.get("version").and_then(|v| v.as_str()).map(str::to_owned))
            .as_deref()
            == version
    });
    let created_at = match created_at {
        Some(time) => time,
        None => existing
            .as_deref()
            .filter(|_| same_version)
            .and_then(created_at_of)
            .context("a new version needs --created-at (RFC 3339, e.g. 2026-11-23T12:00:00Z)")?,
    };
    check_created_at(&created_at)?;
    let questions = questions
        .map(|p| {
            std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))
        })
        .transpose()?;
    let text = artifacthub_package(
        &metadata,
        &PackageInputs {
            created_at,
            questions,
        },
    )?;
    std::fs::write(output, text).with_context(|| format!("cannot write {}", output.display()))?;
    println!("{}", output.display());
    Ok(())
}

fn main() -> ExitCode {
    let command = match parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("os-placement-release: {e:#}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("os-placement-release: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_commands() {
        assert_eq!(
            parse(&["annotate", "p.wasm", "-m", "metadata.yml", "-o", "a.wasm"]).unwrap(),
            Command::Annotate {
                wasm: "p.wasm".into(),
                metadata: "metadata.yml".into(),
                usage: None,
                output: "a.wasm".into()
            }
        );
        assert_eq!(
            parse(&["push", "a.wasm", "registry://h/p:t", "--insecure"]).unwrap(),
            Command::Push {
                wasm: "a.wasm".into(),
                reference: "registry://h/p:t".into(),
                insecure: true
            }
        );
        assert!(parse(&["annotate", "p.wasm", "-o", "a.wasm"]).is_err());
        assert!(parse(&["pull", "registry://h/p:t"]).is_err());
        assert!(parse(&["push", "a.wasm"]).is_err());
        assert!(parse(&["frobnicate"]).is_err());
        assert!(parse(&[]).is_err());
        assert_eq!(parse(&["--help"]).unwrap(), Command::Help);
        assert_eq!(
            parse(&[
                "artifacthub",
                "-m",
                "m.yml",
                "-o",
                "a.yml",
                "--created-at",
                "T"
            ])
            .unwrap(),
            Command::Artifacthub {
                metadata: "m.yml".into(),
                output: "a.yml".into(),
                created_at: Some("T".into()),
                questions: None
            }
        );
    }
}
