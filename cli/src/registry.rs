//! Image platforms from their registries (for `facts sync` and `--lookup`),
//! with the limits admission-time lookups lack: each attempt has a deadline, transient failures (no
//! answer, a connection error, a 5xx) are tried again a bounded number of
//! times with a growing pause, and only `--concurrency` lookups run at
//! once. Answers are read by the core's converters, as the policy reads
//! its host's answers, so every door sees the same platforms.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use os_placement_core::host_answers::{self, ManifestAnswer};
use os_placement_core::{ImageFacts, Platform};

use crate::args::RegistryArgs;

/// Resolves image references into platforms.
pub struct Resolver {
    client: Client,
    attempt_timeout: Duration,
    retries: u32,
    concurrency: usize,
}

/// Why one attempt failed, and whether another may succeed.
struct Failure {
    message: String,
    transient: bool,
}

impl From<OciDistributionError> for Failure {
    fn from(error: OciDistributionError) -> Failure {
        let transient = match &error {
            OciDistributionError::ServerError { code, .. } => *code >= 500,
            OciDistributionError::RequestError(e) => {
                e.is_timeout() || e.is_connect() || e.is_request() || e.is_body()
            }
            OciDistributionError::IoError(_) => true,
            _ => false,
        };
        Failure {
            message: error.to_string(),
            transient,
        }
    }
}

impl Failure {
    fn permanent(message: String) -> Failure {
        Failure {
            message,
            transient: false,
        }
    }
}

impl Resolver {
    /// A resolver with the limits of `args`; plain HTTP for `--insecure-registry`.
    pub fn new(args: &RegistryArgs) -> Resolver {
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(args.insecure_registry.clone()),
            connect_timeout: Some(args.registry_timeout),
            read_timeout: Some(args.registry_timeout),
            ..ClientConfig::default()
        });
        Resolver {
            client,
            attempt_timeout: args.registry_timeout,
            retries: args.retries,
            concurrency: usize::from(args.concurrency),
        }
    }

    /// The facts of each image, `concurrency` lookups at a time.
    pub async fn resolve_all(&self, images: &[String]) -> Vec<(String, ImageFacts)> {
        let credentials = credentials_for(images);
        stream::iter(images)
            .map(|image| {
                let auth = registry_of(image)
                    .and_then(|registry| credentials.get(&registry).cloned())
                    .unwrap_or(RegistryAuth::Anonymous);
                async move { (image.clone(), self.resolve(image, &auth).await) }
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await
    }

    /// One image: its platforms, or the last failure after the attempts.
    async fn resolve(&self, image: &str, auth: &RegistryAuth) -> ImageFacts {
        let reference: Reference = match image.parse() {
            Ok(reference) => reference,
            Err(e) => return ImageFacts::LookupFailed(format!("not an image reference: {e}")),
        };
        let mut last = String::new();
        for attempt in 0..=self.retries {
            if attempt > 0 {
                tokio::time::sleep(pause_before(attempt)).await;
            }
            let answer =
                tokio::time::timeout(self.attempt_timeout, self.platforms(&reference, auth));
            let failure = match answer.await {
                Ok(Ok(platforms)) => return ImageFacts::Platforms(platforms),
                Ok(Err(failure)) => failure,
                Err(_) => Failure {
                    message: format!("no answer within {:?}", self.attempt_timeout),
                    transient: true,
                },
            };
            last = failure.message;
            if !failure.transient {
                return ImageFacts::LookupFailed(last);
            }
        }
        let attempts = self.retries.saturating_add(1);
        ImageFacts::LookupFailed(format!("{last} ({attempts} attempts)"))
    }

    /// The platforms the index lists, or the single manifest's config names.
    async fn platforms(
        &self,
        reference: &Reference,
        auth: &RegistryAuth,
    ) -> Result<Vec<Platform>, Failure> {
        let (manifest, _digest) = self.client.pull_manifest(reference, auth).await?;
        let manifest = serde_json::to_value(&manifest)
            .map_err(|e| Failure::permanent(format!("unreadable manifest: {e}")))?;
        let answer =
            host_answers::manifest(&manifest).map_err(|e| Failure::permanent(e.to_string()))?;
        match answer {
            ManifestAnswer::Index(platforms) => Ok(distinct(platforms)),
            ManifestAnswer::Image => {
                let (_manifest, _digest, config) = self
                    .client
                    .pull_manifest_and_config(reference, auth)
                    .await?;
                let config: serde_json::Value = serde_json::from_str(&config)
                    .map_err(|e| Failure::permanent(format!("unreadable image config: {e}")))?;
                host_answers::image_config(&config)
                    .map(|platform| vec![platform])
                    .map_err(|e| Failure::permanent(e.to_string()))
            }
        }
    }
}

/// 0.5 s, 1 s, 2 s, ... up to 8 s before attempt `attempt` (from 1).
fn pause_before(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4)))
}

/// Each platform once, in the order first seen (an index may repeat one
/// entry thousands of times).
fn distinct(platforms: Vec<Platform>) -> Vec<Platform> {
    let mut seen = BTreeSet::new();
    platforms
        .into_iter()
        .filter(|p| seen.insert((p.os.clone(), p.os_version.clone(), p.architecture.clone())))
        .collect()
}

/// The registry host of a reference (`docker.io` resolved to its host).
fn registry_of(image: &str) -> Option<String> {
    image
        .parse::<Reference>()
        .ok()
        .map(|r| r.resolve_registry().to_string())
}

/// Credentials from the Docker config (`$DOCKER_CONFIG/config.json`, or
/// `~/.docker/config.json`, credential helpers included), read once per
/// registry; anonymous where it has none.
fn credentials_for(images: &[String]) -> BTreeMap<String, RegistryAuth> {
    let registries: BTreeSet<String> = images.iter().filter_map(|i| registry_of(i)).collect();
    registries
        .into_iter()
        .filter_map(|registry| docker_credentials(&registry).map(|auth| (registry, auth)))
        .collect()
}

fn docker_credentials(registry: &str) -> Option<RegistryAuth> {
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
                Some(RegistryAuth::Basic(user, password))
            }
            // An identity token is an OAuth refresh token, which oci-client cannot exchange.
            Ok(docker_credential::DockerCredential::IdentityToken(_)) | Err(_) => None,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn repeated_platforms_are_kept_once() {
        let linux = Platform {
            os: "linux".into(),
            os_version: None,
            architecture: Some("amd64".into()),
        };
        let windows = Platform {
            os: "windows".into(),
            os_version: Some("10.0.20348.1".into()),
            architecture: Some("amd64".into()),
        };
        let many = vec![linux.clone(); 5000]
            .into_iter()
            .chain([windows.clone(), linux.clone()])
            .collect();
        assert_eq!(distinct(many), [linux, windows]);
    }

    #[test]
    fn pauses_grow_and_are_bounded() {
        assert_eq!(pause_before(1), Duration::from_millis(500));
        assert_eq!(pause_before(2), Duration::from_secs(1));
        assert_eq!(pause_before(30), Duration::from_secs(8));
    }

    #[test]
    fn docker_hub_references_resolve_to_its_registry_host() {
        assert_eq!(
            registry_of("nginx:1.27").as_deref(),
            Some("index.docker.io")
        );
        assert_eq!(
            registry_of("127.0.0.1:5000/corp/app:1").as_deref(),
            Some("127.0.0.1:5000")
        );
        assert_eq!(registry_of("Not A Reference"), None);
    }
}
