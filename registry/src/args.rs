//! The flags that set how registries are read, by `facts sync` and by
//! `check --lookup`, flattened into the command line's commands.

use std::time::Duration;

use clap::Args;

use crate::host_pattern::HostPattern;

/// How registries are read, by `facts sync` and by `--lookup`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Registry lookups")]
pub struct RegistryArgs {
    /// Longest wait for one registry request (connect, manifest, config), per attempt.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub registry_timeout: Duration,
    /// Further attempts after a timeout, a connection error or a 5xx answer.
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// Registry lookups in flight at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// A registry (host[:port]) reached over plain HTTP; repeat for several.
    /// It counts as allowed (--allow-registry).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub insecure_registry: Vec<String>,
    /// Registries (glob on host, or on host:port) contacted whatever their
    /// addresses, loopback and link-local included; once one is given, only
    /// these (and --insecure-registry) are contacted. Repeat for several.
    #[arg(long, value_name = "PATTERN", value_parser = HostPattern::parse)]
    pub allow_registry: Vec<HostPattern>,
    /// Registries (glob on host, or on host:port) never contacted, even when
    /// allowed. Repeat for several.
    #[arg(long, value_name = "PATTERN", value_parser = HostPattern::parse)]
    pub deny_registry: Vec<HostPattern>,
    /// ECR (`<account>.dkr.ecr.<region>.amazonaws.com`) read with the AWS
    /// identity of the process (IRSA, EKS Pod Identity, the node role, or a
    /// laptop's keys and profile): `auto` where one is present, or `off`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ProviderMode::Auto)]
    pub aws_credentials: ProviderMode,
    /// Artifact Registry and Container Registry (`*-docker.pkg.dev`,
    /// `gcr.io`) read with GKE Workload Identity (the metadata server) or
    /// gcloud's application default credentials: `auto` or `off`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ProviderMode::Auto)]
    pub gcp_credentials: ProviderMode,
    /// ACR (`*.azurecr.io`) read with Azure Workload Identity: `auto` or `off`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ProviderMode::Auto)]
    pub azure_credentials: ProviderMode,
}

/// Whether a cloud's credentials are used for its registries. The Docker
/// config wins wherever it names the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderMode {
    /// Used for the cloud's registry hosts when its identity is present.
    Auto,
    /// Never used.
    Off,
}

/// A duration that is not a number followed by ms, s, m or h.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a duration: write a number followed by ms, s, m or h, e.g. 10s")]
pub struct DurationError(String);

/// `500ms`, `10s`, `5m`, `24h`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| DurationError(text.into()))?;
    let seconds = |factor: u64| number.checked_mul(factor).map(Duration::from_secs);
    match unit {
        "ms" => Some(Duration::from_millis(number)),
        "s" => seconds(1),
        "m" => seconds(60),
        "h" => seconds(3600),
        _ => None,
    }
    .ok_or_else(|| DurationError(text.into()))
}
