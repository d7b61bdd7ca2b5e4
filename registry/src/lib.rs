//! Image platforms from their registries (for `facts sync` and `--lookup`),
//! with the limits admission-time lookups lack: each attempt has a
//! deadline, transient failures (no answer, a connection error, a 5xx or
//! 429) are tried again a bounded number of times with a growing pause,
//! only `--concurrency` lookups run at once, and every answer read is
//! bounded ([`distribution`]). The host an image names is checked before
//! it is contacted ([`hosts`]): anyone who can create a Pod chooses it.
//! Answers are read by the core's converters, as the policy reads its
//! host's answers, so every door sees the same platforms.
//!
//! The protocol is spoken over reqwest rather than through oci-client,
//! which offers no hook for a DNS resolver or a redirect policy, reads
//! whole bodies whatever their size, and sends a registry's credentials to
//! any token service the registry names.

mod args;
mod distribution;
mod host_pattern;
pub mod hosts;
pub mod keyring;
pub mod providers;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use oci_spec::distribution::Reference;
use os_placement_core::host_answers::{self, ManifestAnswer};
use os_placement_core::{ImageFacts, Platform};
use serde::Deserialize;
use serde_json::{json, Value};

pub use args::{parse_duration, DurationError, ProviderMode, RegistryArgs};
pub use distribution::Credentials;
#[cfg(test)]
use distribution::MANIFEST_LIMIT;
use distribution::{Access, Failure, Session};
pub use host_pattern::HostPattern;
use hosts::HostPolicy;
pub use keyring::{Keyring, Repository};
pub use providers::{Cloud, Env};
use providers::{Lent, Providers};

/// How long credentials read from the Docker config are used before they
/// are read again (a rotated Secret is picked up).
const CREDENTIALS_FOR: Duration = Duration::from_secs(300);
/// Registries whose credentials are kept at once.
const CREDENTIALS_KEPT: usize = 256;

/// Where credentials come from: the Docker config, or a test's table.
type CredentialSource = Box<dyn Fn(&str) -> Option<Credentials> + Send + Sync>;

/// What one read of an image gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Its platforms, or why they could not be read.
    pub facts: ImageFacts,
    /// Failed without an answer from the registry (no connection, none in
    /// time, a host the checks refuse, not a reference): any credentials
    /// would meet the same.
    pub unanswered: bool,
}

impl Reading {
    fn failed(why: String, unanswered: bool) -> Reading {
        Reading {
            facts: ImageFacts::LookupFailed(why),
            unanswered,
        }
    }
}

/// Resolves image references into platforms.
pub struct Resolver {
    client: Result<reqwest::Client, String>,
    policy: Arc<HostPolicy>,
    source: CredentialSource,
    credentials: Mutex<HashMap<String, (Option<Credentials>, Instant)>>,
    providers: Providers,
    counts: Mutex<HashMap<&'static str, (u64, u64)>>,
    attempt_timeout: Duration,
    retries: u32,
    concurrency: usize,
}

impl Resolver {
    /// A resolver with the limits and host policy of `args`, the Docker
    /// config's credentials, and the cloud identity of the process.
    pub fn new(args: &RegistryArgs) -> Resolver {
        Resolver::with_env(args, Env::process())
    }

    /// The same, with the cloud identity `env` describes.
    pub fn with_env(args: &RegistryArgs, env: Env) -> Resolver {
        // reqwest takes the process's crypto provider; Err when one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let policy = Arc::new(HostPolicy::new(args));
        Resolver {
            client: distribution::client(policy.clone(), args.registry_timeout),
            policy,
            source: Box::new(docker_credentials),
            credentials: Mutex::new(HashMap::new()),
            providers: Providers::new(args, env),
            counts: Mutex::new(HashMap::new()),
            attempt_timeout: args.registry_timeout,
            retries: args.retries,
            concurrency: usize::from(args.concurrency),
        }
    }

    /// The same resolver with credentials from `source` (by registry host).
    #[cfg(test)]
    pub fn with_credentials(
        mut self,
        source: impl Fn(&str) -> Option<Credentials> + Send + Sync + 'static,
    ) -> Resolver {
        self.source = Box::new(source);
        self
    }

    /// Lookups in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The facts of each image, `concurrency` lookups at a time.
    pub async fn resolve_all(&self, images: &[String]) -> Vec<(String, ImageFacts)> {
        stream::iter(images)
            .map(|image| async move { (image.clone(), self.resolve(image).await) })
            .buffer_unordered(self.concurrency)
            .collect()
            .await
    }

    /// One image: its platforms, or why they could not be read.
    pub async fn resolve(&self, image: &str) -> ImageFacts {
        self.resolve_with(image, None).await.facts
    }

    /// One image read with `given` credentials (a pull Secret's) for its
    /// registry; with `None`, with the Docker config's, else its cloud's.
    pub async fn resolve_with(&self, image: &str, given: Option<Credentials>) -> Reading {
        let given_any = given.is_some();
        let (reading, by) = self.read(image, given).await;
        let by = if given_any { "pull-secret" } else { by };
        self.count(by, matches!(reading.facts, ImageFacts::LookupFailed(_)));
        reading
    }

    /// Lookups finished and failed so far, by where their credentials came
    /// from: `pull-secret`, `docker-config`, `aws`, `gcp`, `azure`, `none`.
    pub fn lookups_by_credentials(&self) -> Vec<(&'static str, u64, u64)> {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<_> = counts.iter().map(|(k, (n, f))| (*k, *n, *f)).collect();
        all.sort_unstable();
        all
    }

    fn count(&self, by: &'static str, failed: bool) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let entry = counts.entry(by).or_default();
        entry.0 = entry.0.saturating_add(1);
        if failed {
            entry.1 = entry.1.saturating_add(1);
        }
    }

    /// The facts, and where the credentials came from.
    async fn read(&self, image: &str, given: Option<Credentials>) -> (Reading, &'static str) {
        let reference: Reference = match image.parse() {
            Ok(reference) => reference,
            Err(e) => {
                let why = format!("not an image reference: {e}");
                return (Reading::failed(why, true), "none");
            }
        };
        let registry = reference.resolve_registry().to_string();
        if let Err(refusal) = self.policy.admit(&registry).await {
            let why = format!("{image} was not looked up: {refusal}");
            return (Reading::failed(why, true), "none");
        }
        let client = match &self.client {
            Ok(client) => client,
            Err(e) => {
                return (
                    Reading::failed(format!("no HTTP client: {e}"), true),
                    "none",
                )
            }
        };
        if let Some(credentials) = given.or_else(|| self.credentials_for(&registry)) {
            let access = Access {
                credentials: Some(credentials),
                ..Access::default()
            };
            let (reading, _) = self.attempts(client, &reference, &access).await;
            return (reading, "docker-config");
        }
        // A token refused before its time (401) is asked for again, once.
        let (reading, by, refused) = self.read_lent(client, &reference, &registry).await;
        if !refused {
            return (reading, by);
        }
        self.providers.forget(&registry).await;
        let (reading, by, _) = self.read_lent(client, &reference, &registry).await;
        (reading, by)
    }

    /// The facts read with what the registry's cloud lends, where the
    /// credentials came from, and whether the registry refused a lent token.
    async fn read_lent(
        &self,
        client: &reqwest::Client,
        reference: &Reference,
        registry: &str,
    ) -> (Reading, &'static str, bool) {
        let insecure = self.policy.insecure(registry);
        let (cloud, lent) = self.providers.lend(registry, insecure, client).await;
        let by = cloud.map_or("none", Cloud::label);
        let access = match lent {
            Lent::Nothing { hint } => Access {
                absent_hint: hint,
                ..Access::default()
            },
            Lent::Credentials {
                credentials,
                denied_fix,
            } => Access {
                credentials: Some(credentials),
                denied_fix: Some(denied_fix),
                absent_hint: None,
            },
            Lent::Failed(why) => {
                return (
                    Reading::failed(format!("{registry}: {why}"), false),
                    by,
                    false,
                )
            }
        };
        let lent_token = access.credentials.is_some();
        let (reading, unauthorized) = self.attempts(client, reference, &access).await;
        let by = if lent_token { by } else { "none" };
        (reading, by, unauthorized && lent_token)
    }

    /// Up to `retries` more attempts after a transient failure: what was
    /// read, and whether the registry refused the credentials (401).
    async fn attempts(
        &self,
        client: &reqwest::Client,
        reference: &Reference,
        access: &Access,
    ) -> (Reading, bool) {
        let mut last = String::new();
        let mut unanswered = false;
        for attempt in 0..=self.retries {
            if attempt > 0 {
                tokio::time::sleep(pause_before(attempt)).await;
            }
            let answer = platforms(client, &self.policy, reference, access.clone());
            let failure = match tokio::time::timeout(self.attempt_timeout, answer).await {
                Ok(Ok(platforms)) => {
                    let facts = ImageFacts::Platforms(platforms);
                    return (
                        Reading {
                            facts,
                            unanswered: false,
                        },
                        false,
                    );
                }
                Ok(Err(failure)) => failure,
                Err(_) => Failure {
                    message: String::new(),
                    transient: true,
                    timed_out: true,
                    unauthorized: false,
                    unanswered: true,
                },
            };
            unanswered = failure.unanswered;
            last = if failure.timed_out {
                format!("no answer within {:?}", self.attempt_timeout)
            } else {
                failure.message
            };
            if !failure.transient {
                return (Reading::failed(last, unanswered), failure.unauthorized);
            }
        }
        let why = match self.retries {
            0 => last,
            retries => format!("{last} ({} attempts)", retries.saturating_add(1)),
        };
        (Reading::failed(why, unanswered), false)
    }

    /// The credentials of `registry`, read again after [`CREDENTIALS_FOR`].
    fn credentials_for(&self, registry: &str) -> Option<Credentials> {
        let mut kept = self
            .credentials
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((found, at)) = kept.get(registry) {
            if at.elapsed() < CREDENTIALS_FOR {
                return found.clone();
            }
        }
        if kept.len() >= CREDENTIALS_KEPT {
            kept.clear();
        }
        let found = (self.source)(registry);
        kept.insert(registry.to_string(), (found.clone(), Instant::now()));
        found
    }
}

/// The platforms the index lists, or the single manifest's config names.
async fn platforms(
    client: &reqwest::Client,
    policy: &HostPolicy,
    reference: &Reference,
    access: Access,
) -> Result<Vec<Platform>, Failure> {
    let registry = reference.resolve_registry();
    let mut session = Session::new(client, policy, registry, reference.repository(), access);
    let target = reference
        .digest()
        .or_else(|| reference.tag())
        .unwrap_or("latest");
    let slim: Slim = session
        .manifest(target)
        .await?
        .json()
        .map_err(|e| Failure::permanent(format!("unreadable manifest: {e}")))?;
    match read_manifest(slim)? {
        Read::Index(platforms) => Ok(platforms),
        Read::Image(digest) => {
            let platform: SlimPlatform = session
                .config(&digest)
                .await?
                .json()
                .map_err(|e| Failure::permanent(format!("unreadable image config: {e}")))?;
            host_answers::image_config(&platform.to_value())
                .map(|platform| vec![platform])
                .map_err(|e| Failure::permanent(e.to_string()))
        }
    }
}

/// What a manifest says: an index's platforms, or a single image's config digest.
#[derive(Debug, PartialEq)]
enum Read {
    Index(Vec<Platform>),
    Image(String),
}

/// A manifest or index, down to what placement reads: each entry's
/// platform, or the config's digest.
#[derive(Deserialize)]
struct Slim {
    manifests: Option<Vec<SlimEntry>>,
    config: Option<SlimDescriptor>,
}

#[derive(Deserialize)]
struct SlimEntry {
    platform: Option<SlimPlatform>,
}

#[derive(Deserialize)]
struct SlimDescriptor {
    digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
struct SlimPlatform {
    os: Option<String>,
    architecture: Option<String>,
    #[serde(rename = "os.version")]
    os_version: Option<String>,
}

impl SlimPlatform {
    /// As the core's converters read it.
    fn to_value(&self) -> Value {
        json!({"os": self.os, "architecture": self.architecture, "os.version": self.os_version})
    }
}

/// Reads a manifest through the core's converter, each platform once.
fn read_manifest(slim: Slim) -> Result<Read, Failure> {
    // An index may repeat one entry thousands of times: each platform once.
    let value = match (slim.manifests, &slim.config) {
        (Some(entries), _) => {
            let seen: BTreeSet<SlimPlatform> =
                entries.into_iter().filter_map(|e| e.platform).collect();
            let entries: Vec<Value> = seen
                .iter()
                .map(|p| json!({"platform": p.to_value()}))
                .collect();
            json!({ "manifests": entries })
        }
        (None, Some(_)) => json!({"config": {}}),
        (None, None) => json!({}),
    };
    match host_answers::manifest(&value).map_err(|e| Failure::permanent(e.to_string()))? {
        ManifestAnswer::Index(platforms) => Ok(Read::Index(distinct(platforms))),
        ManifestAnswer::Image => slim
            .config
            .and_then(|c| c.digest)
            .map(Read::Image)
            .ok_or_else(|| Failure::permanent("the manifest names no config digest")),
    }
}

/// 0.5 s, 1 s, 2 s, ... up to 8 s before attempt `attempt` (from 1).
fn pause_before(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4)))
}

/// Each platform once, in the order first seen.
fn distinct(platforms: Vec<Platform>) -> Vec<Platform> {
    let mut seen = BTreeSet::new();
    platforms
        .into_iter()
        .filter(|p| seen.insert((p.os.clone(), p.os_version.clone(), p.architecture.clone())))
        .collect()
}

/// The registry host of a reference (`docker.io` resolved to its host).
pub fn registry_of(image: &str) -> Option<String> {
    image
        .parse::<Reference>()
        .ok()
        .map(|r| r.resolve_registry().to_string())
}

/// Credentials from the Docker config (`$DOCKER_CONFIG/config.json`, or
/// `~/.docker/config.json`, credential helpers included); none where it
/// has none.
fn docker_credentials(registry: &str) -> Option<Credentials> {
    // Docker writes Docker Hub's credentials under its v1 address.
    let names: &[&str] = if registry == "index.docker.io" {
        &[
            "https://index.docker.io/v1/",
            "index.docker.io",
            "docker.io",
        ]
    } else {
        &[registry]
    };
    names
        .iter()
        .find_map(|name| match docker_credential::get_credential(name) {
            Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
                Some(Credentials::docker_config(user, password))
            }
            // An identity token is an OAuth refresh token, which this client does not exchange.
            Ok(docker_credential::DockerCredential::IdentityToken(_)) | Err(_) => None,
        })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cloud_tests;
