//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use os_placement_core::Operation;

use os_placement_registry::{parse_duration, RegistryArgs};

/// Checks Kubernetes manifests against the os-placement rules, the same
/// rules the os-placement admission policy applies in the cluster.
#[derive(Debug, Parser)]
#[command(name = "os-placement", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate manifests: the verdict, messages and patch of every object.
    ///
    /// Exit code 0 when every object is accepted (with or without a patch),
    /// 1 when any is rejected, 2 on a usage or input error (unreadable file,
    /// broken YAML, a document that is not a Kubernetes object, bad settings).
    Check(CheckArgs),
    /// Write the manifests with what the policy would add, to stdout or in place.
    ///
    /// Documents that need no change are written byte for byte; added
    /// entries are inserted into the text, so comments and layout stay. Fix
    /// always adds what is missing, whatever `mutate` says in the settings.
    /// Exit code 1 when an object is rejected (it is left as it is).
    Fix(FixArgs),
    /// Show the OS and build signals of each pod spec: which field says what.
    Explain(ExplainArgs),
    /// Image facts kept in the cluster for the policy (`imageFacts: cluster`).
    #[command(subcommand)]
    Facts(FactsCommand),
}

// Parsed once per run: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum FactsCommand {
    /// Watch the cluster's Pods, workload templates, Nodes and RuntimeClasses,
    /// resolve the platforms of the images in use from their registries, and
    /// publish node classes, RuntimeClasses and image facts as ConfigMaps
    /// labelled os-placement.kubewarden.io/facts, which the policy reads from
    /// the policy server's cache in constant time: admission never waits on
    /// a registry. A change is published within seconds, rewriting only the
    /// ConfigMaps it changes. Runs in the cluster (in-cluster config) or with
    /// KUBECONFIG.
    ///
    /// Exit code 0 after a sync (`--once`), 2 when the cluster cannot be read
    /// or the facts cannot be published. Failed image lookups are published
    /// as such and retried later; they do not fail the sync.
    Sync(SyncArgs),
    /// Write the ConfigMaps the facts syncer would publish for the facts in
    /// FILE...: `kubectl get nodes,runtimeclasses,nodepools,ec2nodeclasses -o
    /// yaml` (or `-o json`) output as it is, image facts documents (what
    /// --facts reads), and published ConfigMaps. `os-placement facts render nodes.yaml
    /// images.json | kubectl apply -f -` publishes facts without the syncer
    /// (GitOps, air-gapped clusters).
    ///
    /// Exit code 0 when the ConfigMaps are written, 2 when a file cannot be
    /// read or holds something that is not facts.
    Render(RenderArgs),
}

/// What `facts render` reads and how it writes.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Facts files; `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The namespace of the ConfigMaps (the policy's imageFactsNamespace).
    #[arg(long, default_value = os_placement_core::DEFAULT_FACTS_NAMESPACE)]
    pub namespace: String,
    /// `yaml`: a stream of ConfigMaps; `json`: a `v1` `List` of them.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = RenderFormat::Yaml)]
    pub output: RenderFormat,
}

/// The output of `facts render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    /// A YAML stream, one ConfigMap per document.
    Yaml,
    /// A `v1` `List` of the ConfigMaps.
    Json,
}

/// How `facts sync` reads the cluster and the registries.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The namespace to publish the ConfigMaps in (the policy's imageFactsNamespace).
    #[arg(long, default_value = os_placement_core::DEFAULT_FACTS_NAMESPACE)]
    pub namespace: String,
    /// List once, publish and exit (a CronJob); without it, watch and publish on change (a Deployment).
    #[arg(long)]
    pub once: bool,
    /// How often expired image facts are looked for (changes are published within seconds).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub interval: Duration,
    /// How long a failed lookup stands before it is tried again (negative cache).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub retry_failed_after: Duration,
    /// How long resolved platforms stand before they are read again.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub refresh_after: Duration,
    /// How often the leader renews its heartbeat in the published facts
    /// (readers take a heartbeat 3 intervals old for a stopped syncer).
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_seconds)]
    pub heartbeat: Duration,
    /// How long the leader's Lease (os-placement-facts-sync in the facts
    /// namespace) stands unrenewed before a standby replica takes over; the
    /// leader renews it every third of it.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_lease_duration)]
    pub lease_duration: Duration,
    /// How long a kind's watch may fail (its last listed objects still
    /// published) before its facts are marked stale in the published facts.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub stale_after: Duration,
    /// Read each image with the pull Secrets of the Pods and pod templates
    /// that use it (their imagePullSecrets, else their ServiceAccount's), in
    /// their namespace, as the kubelet pulls it; needs get on Secrets and
    /// ServiceAccounts (deploy/facts-sync-pull-secrets.yaml).
    #[arg(long)]
    pub pull_secrets: bool,
    /// Where /healthz, /readyz and /metrics (Prometheus) are served; port 0 picks a free one.
    #[arg(long, value_name = "ADDRESS", default_value = "0.0.0.0:9090")]
    pub metrics_address: std::net::SocketAddr,
    /// How registries are read.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// A duration of whole seconds, at least one.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text).map_err(|e| e.to_string())?;
    if duration.as_secs() == 0
        || duration.subsec_nanos() != 0
        || duration.as_secs() > u64::from(u32::MAX)
    {
        return Err(format!("{text:?}: write whole seconds, at least 1s"));
    }
    Ok(duration)
}

/// A Lease duration: whole seconds, at least 3 (renewed every third).
fn parse_lease_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_seconds(text)?;
    if duration.as_secs() < 3 {
        return Err(format!("{text:?}: a Lease lasts at least 3s"));
    }
    Ok(duration)
}

/// Settings and the simulated admission operation.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Policy settings, YAML or JSON, as in the policy's `settings`.
    #[arg(long, value_name = "FILE", conflicts_with = "preset")]
    pub settings: Option<PathBuf>,
    /// Settings of a known platform: examples/settings/<preset>.yaml.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// The admission operation to simulate (an AdmissionReview brings its own).
    #[arg(long, value_enum, ignore_case = true, default_value_t = OperationArg::Create)]
    pub operation: OperationArg,
    /// Judge the objects as they exist in the cluster (`kubectl get ... -o
    /// yaml`), as Kubewarden's background audit does: what admission would
    /// add or refuse fails, and a Pod with spec.nodeName is judged on that
    /// node (from --facts).
    #[arg(long, conflicts_with = "operation")]
    pub audit: bool,
    /// What the cluster and registries hold, as the policy would look it up:
    /// `kubectl get nodes,runtimeclasses,nodepools,ec2nodeclasses -o yaml`
    /// output, and/or image platforms (README, "Facts"). Without it (and --lookup) nothing is looked up.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// Read the platforms of the images the objects need from their
    /// registries (Docker config credentials), as the facts syncer does;
    /// images the --facts file holds are not looked up.
    #[arg(long)]
    pub lookup: bool,
    /// How registries are read with --lookup.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files, folders (searched recursively for *.yaml, *.yml, *.json), or - for stdin.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Human)]
    pub output: Format,
    /// Colour the human output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Args)]
pub struct FixArgs {
    /// Files, folders (searched recursively for *.yaml, *.yml, *.json), or - for stdin.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Rewrite the files instead of printing every document to stdout.
    #[arg(short, long)]
    pub in_place: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Files, folders, or - for stdin.
    #[arg(value_name = "FILE", required = true)]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Output format (junit is not available here).
    #[arg(short, long, value_enum, default_value_t = Format::Human)]
    pub output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// Amazon EKS with the os=windows:NoSchedule taint.
    Eks,
    /// Google GKE.
    Gke,
    /// Azure AKS.
    Aks,
    /// Rancher/RKE2, Linux nodes tainted cattle.io/os=linux:NoSchedule.
    Rke2,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Eks => "eks",
            Preset::Gke => "gke",
            Preset::Aks => "aks",
            Preset::Rke2 => "rke2",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OperationArg {
    #[value(name = "CREATE")]
    Create,
    #[value(name = "UPDATE")]
    Update,
    #[value(name = "DELETE")]
    Delete,
    #[value(name = "CONNECT")]
    Connect,
}

impl OperationArg {
    pub fn to_core(self) -> Operation {
        match self {
            OperationArg::Create => Operation::Create,
            OperationArg::Update => Operation::Update,
            OperationArg::Delete => Operation::Delete,
            OperationArg::Connect => Operation::Connect,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Per object: where, verdict, one line per message, the patch.
    Human,
    /// One result per object, schema in the README.
    Json,
    /// JUnit XML, one test case per object, for CI test reports.
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is unset.
    Auto,
    Always,
    Never,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn operation_ignores_case() {
        let cli =
            Cli::try_parse_from(["os-placement", "check", "-", "--operation", "update"]).unwrap();
        let Command::Check(args) = cli.command else {
            panic!()
        };
        assert_eq!(args.policy.operation, OperationArg::Update);
        assert_eq!(args.paths, ["-"]);
    }

    #[test]
    fn settings_and_preset_are_exclusive() {
        let with = |extra: &[&str]| {
            let mut args = vec!["os-placement", "check", "x.yaml"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args)
        };
        // Each alone parses, so the error below is the conflict, not a typo.
        assert!(with(&["--settings", "s.yaml"]).is_ok());
        assert!(with(&["--preset", "eks"]).is_ok());
        let parsed = with(&["--settings", "s.yaml", "--preset", "eks"]);
        assert_eq!(
            parsed.map(|_| ()).unwrap_err().kind(),
            clap::error::ErrorKind::ArgumentConflict
        );
    }
}
