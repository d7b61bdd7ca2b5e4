//! `cargo xtask <chore>`: see [`xtask::cli::USAGE`].
//!
//! Exit code: 0 on success, 1 on failure, 2 on a usage error.

use std::path::Path;
use std::process::ExitCode;

use xtask::annotate::{annotate_file, load_metadata, AnnotateFiles};
use xtask::artifacthub::{artifacthub_package, check_created_at, package_field, PackageInputs};
use xtask::cli::{parse_args, Command, ImageArgs, USAGE};
use xtask::error::{read, read_text, write};
use xtask::image::{self, ImageInputs, Platform};
use xtask::oci::{self, RegistryOptions};
use xtask::sign::{self, KeyFiles};
use xtask::{Error, Result};

fn run(command: Command) -> Result<()> {
    match command {
        Command::Help => println!("{USAGE}"),
        Command::Annotate {
            wasm,
            metadata,
            usage,
            protocol_version,
            output,
        } => {
            let files = AnnotateFiles {
                wasm: &wasm,
                metadata: &metadata,
                usage: usage.as_deref(),
                output: &output,
            };
            annotate_file(&files, &protocol_version)?;
            println!("{} (protocol {protocol_version})", output.display());
        }
        Command::Push {
            wasm,
            reference,
            insecure,
        } => push(&wasm, &reference, insecure)?,
        Command::Pull {
            reference,
            output,
            insecure,
        } => pull(&reference, &output, insecure)?,
        Command::Keypair { dir } => keypair(&dir)?,
        Command::Sign {
            reference,
            key,
            insecure,
        } => sign_artifact(&reference, &key, insecure)?,
        Command::Sbom { input, output } => sbom(&input, &output)?,
        Command::Artifacthub {
            metadata,
            output,
            created_at,
            questions,
        } => write_artifacthub(&metadata, &output, created_at, questions.as_deref())?,
        Command::Image(args) => build_image(&args)?,
        Command::PushImage {
            dir,
            reference,
            insecure,
        } => {
            let pushed = image::push::push(&dir, &reference, &RegistryOptions { insecure })?;
            println!("{}", pushed.reference);
        }
    }
    Ok(())
}

fn push(wasm: &Path, reference: &str, insecure: bool) -> Result<()> {
    let pushed = oci::push(&read(wasm)?, reference, &RegistryOptions { insecure })?;
    println!("{}", pushed.reference);
    Ok(())
}

fn pull(reference: &str, output: &Path, insecure: bool) -> Result<()> {
    let pulled = oci::pull(reference, &RegistryOptions { insecure })?;
    write(output, &pulled.module)?;
    let size = pulled.module.len();
    println!("{} ({}, {size} bytes)", output.display(), pulled.digest);
    Ok(())
}

fn keypair(dir: &Path) -> Result<()> {
    let files = KeyFiles::in_dir(dir);
    sign::generate_key_pair(&files, &sign::password_from_env()?)?;
    println!("{}\n{}", files.private.display(), files.public.display());
    Ok(())
}

fn sign_artifact(reference: &str, key: &Path, insecure: bool) -> Result<()> {
    let key = sign::load_private_key(key, &sign::password_from_env()?)?;
    let signed = sign::sign(reference, &key, &RegistryOptions { insecure })?;
    println!("{} signed: {}", signed.digest, signed.signature);
    Ok(())
}

fn sbom(input: &Path, output: &Path) -> Result<()> {
    let raw = serde_json::from_slice(&read(input)?).map_err(|e| Error::Document {
        what: input.display().to_string(),
        message: e.to_string(),
    })?;
    let document = xtask::sbom::normalise(raw)?;
    let text = serde_json::to_vec_pretty(&document).unwrap_or_default();
    write(output, text)?;
    println!("{}", output.display());
    Ok(())
}
/// `artifacthub`: regenerates the package file, keeping its `createdAt` for
/// an unchanged version.
fn write_artifacthub(
    metadata: &Path,
    output: &Path,
    created_at: Option<String>,
    questions: Option<&Path>,
) -> Result<()> {
    let metadata = serde_json::Value::Object(load_metadata(metadata)?);
    let existing = std::fs::read_to_string(output).ok();
    let version = metadata
        .pointer("/annotations/io.kubewarden.policy.version")
        .and_then(|v| v.as_str());
    let kept = existing
        .as_deref()
        .filter(|text| package_field(text, "version").as_deref() == version)
        .and_then(|text| package_field(text, "createdAt"));
    let created_at = created_at.or(kept).ok_or_else(|| {
        Error::Usage(
            "a new version needs --created-at (RFC 3339, e.g. 2026-11-23T12:00:00Z)".to_owned(),
        )
    })?;
    check_created_at(&created_at)?;
    let questions = questions.map(read_text).transpose()?;
    let text = artifacthub_package(
        &metadata,
        &PackageInputs {
            created_at,
            questions,
        },
    )?;
    write(output, text)?;
    println!("{}", output.display());
    Ok(())
}

/// `image`: the layout in the output directory, named by the version.
fn build_image(args: &ImageArgs) -> Result<()> {
    let metadata = serde_json::Value::Object(load_metadata(&args.metadata)?);
    let annotations =
        image::image_annotations(&metadata, args.revision.as_deref(), args.source_date_epoch)?;
    let binaries = args
        .binaries
        .iter()
        .map(|(platform, path)| Ok((Platform::parse(platform)?, read(path)?)))
        .collect::<Result<Vec<_>>>()?;
    let ca_bundle = args.ca_bundle.as_deref().map(read).transpose()?;
    let version = annotations
        .get("org.opencontainers.image.version")
        .cloned()
        .unwrap_or_default();
    let layout = image::build(&ImageInputs {
        binaries,
        ca_bundle,
        annotations,
        epoch: args.source_date_epoch,
    })?;
    image::write_layout(&layout, &args.output, &version)?;
    let size: usize = layout.blobs.iter().map(|b| b.bytes.len()).sum();
    println!(
        "{}:{version} ({}, {size} bytes)",
        args.output.display(),
        layout.index.digest()
    );
    Ok(())
}

fn main() -> ExitCode {
    let command = match parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("xtask: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
