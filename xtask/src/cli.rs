//! The command line of `cargo xtask`: chores and their flags.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The usage text.
pub const USAGE: &str = "\
usage: cargo xtask annotate WASM --metadata-path FILE [--usage-path FILE] --protocol-version V --output-path FILE
       cargo xtask push ANNOTATED_WASM registry://HOST[:PORT]/PATH:TAG [--insecure]
       cargo xtask pull registry://HOST[:PORT]/PATH(:TAG|@sha256:DIGEST) --output-path FILE [--insecure]
       cargo xtask keypair [--output-dir DIR]
       cargo xtask sign registry://HOST[:PORT]/PATH(:TAG|@sha256:DIGEST) --key cosign.key [--insecure]
       cargo xtask artifacthub --metadata-path FILE --output-path FILE [--created-at TIME] [--questions-path FILE]
       cargo xtask sbom SPDX_JSON --output-path FILE
       cargo xtask image --metadata-path FILE --binary linux/ARCH=FILE... [--ca-bundle FILE]
                         [--revision COMMIT] [--source-date-epoch SECONDS] --output-dir DIR
       cargo xtask push-image DIR registry://HOST[:PORT]/PATH:TAG [--insecure]

  annotate     embed metadata.yml (and the usage text) in the io.kubewarden.metadata
               custom section with the module's protocol version
  push         push an annotated module as an OCI artifact; prints the reference with its digest
  pull         pull a policy (digest-checked) and write the module
  keypair      write cosign.key (ECDSA P-256, encrypted with $COSIGN_PASSWORD) and cosign.pub
  sign         sign the artifact's manifest digest with the key; pushes the .sig image beside it
  artifacthub  write artifacthub-pkg.yml from metadata.yml; createdAt is kept from the
               existing file for the same version, else --created-at (RFC 3339) is required
  sbom         make cargo-sbom's SPDX 2.3 JSON valid (download locations, DESCRIBES)
  image        write the CLI's container image as an OCI image layout in DIR: one static
               binary per platform (linux/amd64, linux/arm64) at /os-placement, the CA
               bundle, user 65532, OCI labels from metadata.yml; files dated SOURCE_DATE_EPOCH
  push-image   push that layout (an image index and its platforms); prints the reference
               with its digest
  --insecure   plain HTTP (always used for 127.0.0.1 and localhost)
  credentials come from the docker config ($DOCKER_CONFIG or ~/.docker/config.json)";

/// A parsed command line.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// `annotate`.
    Annotate {
        /// The module.
        wasm: PathBuf,
        /// metadata.yml.
        metadata: PathBuf,
        /// The usage text.
        usage: Option<PathBuf>,
        /// The protocol version the module speaks.
        protocol_version: String,
        /// The annotated module.
        output: PathBuf,
    },
    /// `push`.
    Push {
        /// The annotated module.
        wasm: PathBuf,
        /// `registry://host/path:tag`.
        reference: String,
        /// Plain HTTP.
        insecure: bool,
    },
    /// `pull`.
    Pull {
        /// `registry://host/path:tag` or `@digest`.
        reference: String,
        /// Where the module goes.
        output: PathBuf,
        /// Plain HTTP.
        insecure: bool,
    },
    /// `keypair`.
    Keypair {
        /// Where cosign.key and cosign.pub go.
        dir: PathBuf,
    },
    /// `sign`.
    Sign {
        /// The artifact.
        reference: String,
        /// cosign.key.
        key: PathBuf,
        /// Plain HTTP.
        insecure: bool,
    },
    /// `artifacthub`.
    Artifacthub {
        /// metadata.yml.
        metadata: PathBuf,
        /// artifacthub-pkg.yml.
        output: PathBuf,
        /// createdAt of a new version.
        created_at: Option<String>,
        /// questions-ui.yml.
        questions: Option<PathBuf>,
    },
    /// `sbom`.
    Sbom {
        /// cargo-sbom's output.
        input: PathBuf,
        /// The valid SPDX document.
        output: PathBuf,
    },
    /// `image`.
    Image(ImageArgs),
    /// `push-image`.
    PushImage {
        /// The OCI image layout.
        dir: PathBuf,
        /// `registry://host/path:tag`.
        reference: String,
        /// Plain HTTP.
        insecure: bool,
    },
    /// `--help`.
    Help,
}

/// The arguments of `image`.
#[derive(Debug, PartialEq)]
pub struct ImageArgs {
    /// metadata.yml (source, version, licence).
    pub metadata: PathBuf,
    /// `linux/ARCH` and the static binary for it.
    pub binaries: Vec<(String, PathBuf)>,
    /// The CA bundle.
    pub ca_bundle: Option<PathBuf>,
    /// The commit built.
    pub revision: Option<String>,
    /// The files' time, seconds since 1970.
    pub source_date_epoch: i64,
    /// The OCI image layout.
    pub output: PathBuf,
}

#[derive(Default)]
struct Flags {
    positional: Vec<String>,
    created_at: Option<String>,
    protocol_version: Option<String>,
    questions: Option<PathBuf>,
    metadata: Option<PathBuf>,
    usage: Option<PathBuf>,
    output: Option<PathBuf>,
    dir: Option<PathBuf>,
    key: Option<PathBuf>,
    binaries: Vec<String>,
    ca_bundle: Option<PathBuf>,
    revision: Option<String>,
    source_date_epoch: Option<String>,
    insecure: bool,
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

fn parse_flags(mut args: impl Iterator<Item = String>) -> Result<Flags> {
    let mut flags = Flags::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "-m" | "--metadata-path" => flags.metadata = Some(value(&arg)?.into()),
            "-u" | "--usage-path" => flags.usage = Some(value(&arg)?.into()),
            "-o" | "--output-path" => flags.output = Some(value(&arg)?.into()),
            "--output-dir" => flags.dir = Some(value(&arg)?.into()),
            "--key" => flags.key = Some(value(&arg)?.into()),
            "--protocol-version" => flags.protocol_version = Some(value(&arg)?),
            "--created-at" => flags.created_at = Some(value(&arg)?),
            "-q" | "--questions-path" => flags.questions = Some(value(&arg)?.into()),
            "--binary" => flags.binaries.push(value(&arg)?),
            "--ca-bundle" => flags.ca_bundle = Some(value(&arg)?.into()),
            "--revision" => flags.revision = Some(value(&arg)?),
            "--source-date-epoch" => flags.source_date_epoch = Some(value(&arg)?),
            "--insecure" => flags.insecure = true,
            other if other.starts_with('-') => return Err(usage(format!("unknown flag {other}"))),
            _ => flags.positional.push(arg),
        }
    }
    Ok(flags)
}

impl Flags {
    /// Exactly `N` positional arguments.
    fn positional<const N: usize>(&self, command: &str) -> Result<[String; N]> {
        <[String; N]>::try_from(self.positional.clone()).map_err(|got| {
            usage(format!(
                "{command} takes {N} argument(s), got {}",
                got.len()
            ))
        })
    }

    fn required<T: Clone>(value: &Option<T>, flag: &str) -> Result<T> {
        value
            .clone()
            .ok_or_else(|| usage(format!("{flag} is required")))
    }
}

/// Parses the arguments after the program name.
pub fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command> {
    let command = args
        .next()
        .ok_or_else(|| usage("a chore is required".to_owned()))?;
    if matches!(command.as_str(), "-h" | "--help" | "help") {
        return Ok(Command::Help);
    }
    chore(&command, &parse_flags(args)?)
}

fn chore(command: &str, flags: &Flags) -> Result<Command> {
    let insecure = flags.insecure;
    Ok(match command {
        "annotate" => annotate(flags)?,
        "push" => {
            let [wasm, reference] = flags.positional(command)?;
            Command::Push {
                wasm: wasm.into(),
                reference,
                insecure,
            }
        }
        "pull" => {
            let [reference] = flags.positional(command)?;
            let output = Flags::required(&flags.output, "--output-path")?;
            Command::Pull {
                reference,
                output,
                insecure,
            }
        }
        "keypair" => {
            let [] = flags.positional(command)?;
            let dir = flags.dir.clone().unwrap_or_else(|| PathBuf::from("."));
            Command::Keypair { dir }
        }
        "sign" => {
            let [reference] = flags.positional(command)?;
            let key = Flags::required(&flags.key, "--key")?;
            Command::Sign {
                reference,
                key,
                insecure,
            }
        }
        "artifacthub" => artifacthub(flags)?,
        "sbom" => {
            let [input] = flags.positional(command)?;
            let output = Flags::required(&flags.output, "--output-path")?;
            Command::Sbom {
                input: input.into(),
                output,
            }
        }
        "image" => image(flags)?,
        "push-image" => {
            let [dir, reference] = flags.positional(command)?;
            Command::PushImage {
                dir: dir.into(),
                reference,
                insecure,
            }
        }
        other => return Err(usage(format!("unknown chore {other:?}"))),
    })
}

fn annotate(flags: &Flags) -> Result<Command> {
    let [wasm] = flags.positional("annotate")?;
    Ok(Command::Annotate {
        wasm: wasm.into(),
        metadata: Flags::required(&flags.metadata, "--metadata-path")?,
        usage: flags.usage.clone(),
        protocol_version: Flags::required(&flags.protocol_version, "--protocol-version")?,
        output: Flags::required(&flags.output, "--output-path")?,
    })
}

fn image(flags: &Flags) -> Result<Command> {
    let [] = flags.positional("image")?;
    let binaries = flags
        .binaries
        .iter()
        .map(|b| {
            b.split_once('=')
                .map(|(platform, path)| (platform.to_owned(), path.into()))
                .ok_or_else(|| {
                    usage(format!(
                        "--binary {b}: PLATFORM=FILE, e.g. linux/amd64=FILE"
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    if binaries.is_empty() {
        return Err(usage("--binary is required".to_owned()));
    }
    let epoch = flags.source_date_epoch.as_deref().unwrap_or("0");
    let source_date_epoch = epoch
        .parse()
        .map_err(|_| usage(format!("--source-date-epoch {epoch}: seconds since 1970")))?;
    Ok(Command::Image(ImageArgs {
        metadata: Flags::required(&flags.metadata, "--metadata-path")?,
        binaries,
        ca_bundle: flags.ca_bundle.clone(),
        revision: flags.revision.clone(),
        source_date_epoch,
        output: Flags::required(&flags.dir, "--output-dir")?,
    }))
}

fn artifacthub(flags: &Flags) -> Result<Command> {
    let [] = flags.positional("artifacthub")?;
    Ok(Command::Artifacthub {
        metadata: Flags::required(&flags.metadata, "--metadata-path")?,
        output: Flags::required(&flags.output, "--output-path")?,
        created_at: flags.created_at.clone(),
        questions: flags.questions.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn parses_chores() {
        assert_eq!(
            parse(&[
                "annotate",
                "p.wasm",
                "-m",
                "metadata.yml",
                "--protocol-version",
                "v1",
                "-o",
                "a.wasm"
            ])
            .unwrap(),
            Command::Annotate {
                wasm: "p.wasm".into(),
                metadata: "metadata.yml".into(),
                usage: None,
                protocol_version: "v1".into(),
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
        assert_eq!(
            parse(&["keypair"]).unwrap(),
            Command::Keypair { dir: ".".into() }
        );
        assert_eq!(
            parse(&["sign", "h/p:t", "--key", "k"]).unwrap(),
            Command::Sign {
                reference: "h/p:t".into(),
                key: "k".into(),
                insecure: false
            }
        );
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
        assert_eq!(parse(&["--help"]).unwrap(), Command::Help);
    }

    #[test]
    fn parses_the_image_chores() {
        assert_eq!(
            parse(&[
                "image",
                "-m",
                "metadata.yml",
                "--binary",
                "linux/amd64=a/os-placement",
                "--binary",
                "linux/arm64=b/os-placement",
                "--ca-bundle",
                "ca.pem",
                "--revision",
                "abc",
                "--source-date-epoch",
                "1700000000",
                "--output-dir",
                "target/os-placement-image"
            ])
            .unwrap(),
            Command::Image(ImageArgs {
                metadata: "metadata.yml".into(),
                binaries: vec![
                    ("linux/amd64".into(), "a/os-placement".into()),
                    ("linux/arm64".into(), "b/os-placement".into())
                ],
                ca_bundle: Some("ca.pem".into()),
                revision: Some("abc".into()),
                source_date_epoch: 1_700_000_000,
                output: "target/os-placement-image".into()
            })
        );
        assert_eq!(
            parse(&[
                "push-image",
                "target/os-placement-image",
                "registry://h/p:t"
            ])
            .unwrap(),
            Command::PushImage {
                dir: "target/os-placement-image".into(),
                reference: "registry://h/p:t".into(),
                insecure: false
            }
        );
        for (args, message) in [
            (
                &["image", "-m", "m", "--output-dir", "d"][..],
                "--binary is required",
            ),
            (
                &[
                    "image",
                    "-m",
                    "m",
                    "--binary",
                    "linux/amd64",
                    "--output-dir",
                    "d",
                ][..],
                "--binary linux/amd64: PLATFORM=FILE, e.g. linux/amd64=FILE",
            ),
            (
                &["image", "-m", "m", "--binary", "linux/amd64=f"][..],
                "--output-dir is required",
            ),
            (
                &[
                    "image",
                    "-m",
                    "m",
                    "--binary",
                    "linux/amd64=f",
                    "--source-date-epoch",
                    "yesterday",
                    "--output-dir",
                    "d",
                ][..],
                "--source-date-epoch yesterday: seconds since 1970",
            ),
            (
                &["push-image", "d"][..],
                "push-image takes 2 argument(s), got 1",
            ),
        ] {
            assert_eq!(parse(args).unwrap_err().to_string(), message, "{args:?}");
        }
    }

    #[test]
    fn refuses_incomplete_or_unknown_input() {
        for (args, message) in [
            (
                &["annotate", "p.wasm", "-m", "m", "-o", "a.wasm"][..],
                "--protocol-version is required",
            ),
            (
                &["annotate", "p.wasm", "--protocol-version", "v1", "-o", "a"][..],
                "--metadata-path is required",
            ),
            (
                &["pull", "registry://h/p:t"][..],
                "--output-path is required",
            ),
            (&["push", "a.wasm"][..], "push takes 2 argument(s), got 1"),
            (&["sign", "h/p:t"][..], "--key is required"),
            (
                &["keypair", "extra"][..],
                "keypair takes 0 argument(s), got 1",
            ),
            (&["frobnicate"][..], "unknown chore \"frobnicate\""),
            (&["push", "--force"][..], "unknown flag --force"),
            (&[][..], "a chore is required"),
        ] {
            assert_eq!(parse(args).unwrap_err().to_string(), message, "{args:?}");
        }
    }
}
