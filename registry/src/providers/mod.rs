//! Registry credentials from the cloud identity of the process, as the
//! kubelet's credential providers (KEP-2133) give them to nodes: ECR with
//! the AWS identity ([`aws`]), Artifact Registry and Container Registry with
//! GKE Workload Identity ([`gcp`]), ACR with Azure Workload Identity
//! ([`azure`]). Each is chosen by the registry's host, used only when its
//! identity is present (`auto`) and never when `off`; the Docker config
//! wins wherever it names the host (the resolver asks it first).
//!
//! Tokens are kept per credential scope and renewed at half their
//! lifetime, so a lookup never meets an expired one. The identity endpoints
//! are fixed by each provider (or the variables its SDKs read), never by an
//! image reference, so they are reached by a client of their own: the
//! registry guard, which refuses link-local addresses, is for registries.

mod aws;
mod aws_identity;
mod azure;
mod clock;
mod gcp;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

// Tokio's clock, which tests can pause.
use tokio::time::Instant;

use serde_json::Value;

use crate::args::{ProviderMode, RegistryArgs};
use crate::distribution::{read_limited, Credentials};

/// The largest identity or token answer read.
const ANSWER_LIMIT: usize = 256 << 10;
/// Token scopes kept at once per provider.
const SCOPES_KEPT: usize = 64;

/// A cloud whose registries the resolver reads with its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cloud {
    /// ECR, with the AWS identity.
    Aws,
    /// Artifact Registry and Container Registry, with Google's.
    Gcp,
    /// ACR, with Azure Workload Identity.
    Azure,
}

impl Cloud {
    /// Its name in flags and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Cloud::Aws => "aws",
            Cloud::Gcp => "gcp",
            Cloud::Azure => "azure",
        }
    }

    /// The cloud whose registry `registry` (`host[:port]`) is, if any.
    pub fn of(registry: &str) -> Option<Cloud> {
        let host = crate::host_pattern::split_host_port(registry).0;
        let host = host.to_ascii_lowercase();
        if aws::EcrRegistry::parse(&host).is_some() {
            Some(Cloud::Aws)
        } else if gcp::serves(&host) {
            Some(Cloud::Gcp)
        } else if azure::serves(&host) {
            Some(Cloud::Azure)
        } else {
            None
        }
    }
}

/// A variable by name.
type Lookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment the providers read, as their SDKs read it.
#[derive(Clone)]
pub struct Env {
    var: Lookup,
}

impl Env {
    /// The process's own environment.
    pub fn process() -> Env {
        Env {
            var: Arc::new(|name| std::env::var(name).ok()),
        }
    }

    /// An environment of the given variables only.
    pub fn of(vars: &[(&str, &str)]) -> Env {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env {
            var: Arc::new(move |name| vars.get(name).cloned()),
        }
    }

    /// A variable, when set and not empty.
    fn var(&self, name: &str) -> Option<String> {
        (self.var)(name).filter(|v| !v.trim().is_empty())
    }

    /// The home directory (for `~/.aws`, `~/.config/gcloud`).
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

/// Reads a token or key file again at each use: the kubelet rotates
/// projected tokens in place.
fn read_file(path: &str, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|text| text.trim().to_string())
        .map_err(|e| format!("cannot read {what} {path}: {e}"))
}

/// What a provider gives for one registry.
#[derive(Debug)]
pub enum Lent {
    /// No provider for the host, or it is off, or its identity is absent:
    /// read as the Docker config says (or anonymously). `hint` says which
    /// identity was looked for, for a 401's message.
    Nothing {
        /// e.g. "no AWS identity is present (…)".
        hint: Option<String>,
    },
    /// Credentials for the registry, and what to grant when it refuses them.
    Credentials {
        /// The registry's user and token.
        credentials: Credentials,
        /// The fix for a 403: the permission and where to grant it.
        denied_fix: String,
    },
    /// The identity is present but gave no token: why, and the fix.
    Failed(String),
}

/// A token and when to ask for the next.
#[derive(Clone)]
struct Kept {
    credentials: Credentials,
    denied_fix: String,
    renew_at: Instant,
}

/// Keeps each scope's token until half its lifetime has passed.
#[derive(Default)]
struct TokenCache {
    kept: tokio::sync::Mutex<HashMap<String, Kept>>,
}

impl TokenCache {
    /// The scope's token, asked for with `fetch` when none is kept or it is
    /// due for renewal. One fetch at a time: a burst of lookups asks once.
    async fn get<F, Fut>(&self, scope: &str, fetch: F) -> Result<Kept, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(Credentials, String, Duration), String>>,
    {
        let mut kept = self.kept.lock().await;
        if let Some(found) = kept.get(scope) {
            if Instant::now() < found.renew_at {
                return Ok(found.clone());
            }
        }
        let (credentials, denied_fix, lifetime) = fetch().await?;
        if kept.len() >= SCOPES_KEPT {
            kept.clear();
        }
        let entry = Kept {
            credentials,
            denied_fix,
            renew_at: Instant::now() + lifetime / 2,
        };
        kept.insert(scope.to_string(), entry.clone());
        Ok(entry)
    }

    /// Drops a scope's token (the registry refused it before its time).
    async fn forget(&self, scope: &str) {
        self.kept.lock().await.remove(scope);
    }
}

/// The cloud providers, as the flags set them.
pub struct Providers {
    aws: Option<aws::Ecr>,
    gcp: Option<gcp::Google>,
    azure: Option<azure::Acr>,
}

impl Providers {
    /// The providers `args` turns on, reading `env`.
    pub fn new(args: &RegistryArgs, env: Env) -> Providers {
        let client = identity_client(args.registry_timeout);
        let on = |mode: ProviderMode| mode == ProviderMode::Auto;
        Providers {
            aws: on(args.aws_credentials).then(|| aws::Ecr::new(env.clone(), client.clone())),
            gcp: on(args.gcp_credentials).then(|| gcp::Google::new(env.clone(), client.clone())),
            azure: on(args.azure_credentials).then(|| azure::Acr::new(env, client)),
        }
    }

    /// What the cloud of `registry` lends for it; `insecure` when the
    /// registry is reached over plain HTTP, `registry_client` the guarded
    /// client that reaches it (ACR's exchange is on the registry's host).
    pub async fn lend(
        &self,
        registry: &str,
        insecure: bool,
        registry_client: &reqwest::Client,
    ) -> (Option<Cloud>, Lent) {
        let cloud = Cloud::of(registry);
        let lent = match cloud {
            Some(Cloud::Aws) => match &self.aws {
                Some(aws) => aws.lend(registry).await,
                None => off("--aws-credentials"),
            },
            Some(Cloud::Gcp) => match &self.gcp {
                Some(gcp) => gcp.lend(registry).await,
                None => off("--gcp-credentials"),
            },
            Some(Cloud::Azure) => match &self.azure {
                Some(azure) => azure.lend(registry, insecure, registry_client).await,
                None => off("--azure-credentials"),
            },
            None => Lent::Nothing { hint: None },
        };
        (cloud, lent)
    }

    /// Forgets the token lent for `registry`: it was refused before its
    /// time (revoked, or the role changed), so the next lookup asks again.
    pub async fn forget(&self, registry: &str) {
        match Cloud::of(registry) {
            Some(Cloud::Aws) => {
                if let Some(aws) = &self.aws {
                    aws.forget(registry).await;
                }
            }
            Some(Cloud::Gcp) => {
                if let Some(gcp) = &self.gcp {
                    gcp.forget().await;
                }
            }
            Some(Cloud::Azure) => {
                if let Some(azure) = &self.azure {
                    azure.forget(registry).await;
                }
            }
            None => {}
        }
    }
}

fn off(flag: &str) -> Lent {
    Lent::Nothing {
        hint: Some(format!(
            "{flag} is off; set {flag} auto to read it with the cloud's identity"
        )),
    }
}

/// The client of identity and token endpoints: their own addresses
/// (link-local metadata endpoints included), no redirects.
fn identity_client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout.saturating_mul(2))
        .user_agent(concat!("os-placement/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("no HTTP client for identity endpoints: {e}"))
}

/// An endpoint's answer: its status and at most [`ANSWER_LIMIT`] of its body.
struct Answer {
    status: reqwest::StatusCode,
    body: String,
}

impl Answer {
    fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }
}

/// The string field `name` of a JSON answer, if it has one.
fn text(json: &Option<Value>, name: &str) -> Option<String> {
    json.as_ref()?.get(name)?.as_str().map(str::to_string)
}

/// Sends `request`, reading a bounded answer; the error names `what`.
async fn send(request: reqwest::RequestBuilder, what: &str) -> Result<Answer, String> {
    let response = request
        .send()
        .await
        .map_err(|e| format!("{what}: {}", crate::distribution::chain(&e)))?;
    let status = response.status();
    let body = read_limited(response, ANSWER_LIMIT, what)
        .await
        .map_err(|f| format!("{what}: {}", f.message))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut body.reader(), &mut text)
        .map_err(|e| format!("{what}: unreadable answer: {e}"))?;
    Ok(Answer { status, body: text })
}

/// A provider's own words from an error answer, on one line and bounded:
/// never a token (answers to failed requests hold none).
fn said(text: &str) -> String {
    let line: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect();
    if line.is_empty() {
        "no message".to_string()
    } else {
        line
    }
}

/// `request` (a POST) sent with `pairs` as its form body; `what` names
/// the endpoint in a failure.
async fn post_form(
    request: reqwest::RequestBuilder,
    pairs: &[(&str, &str)],
    what: &str,
) -> Result<Answer, String> {
    let request = request
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(pairs));
    send(request, what).await
}

/// An `application/x-www-form-urlencoded` body.
fn form(pairs: &[(&str, &str)]) -> String {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        body.append_pair(name, value);
    }
    body.finish()
}

/// The `sub` claim of a Kubernetes service account token
/// (`system:serviceaccount:<ns>:<name>`) as `<ns>/<name>`, for a fix that
/// names the ServiceAccount a trust policy must name. Only the claim is
/// read; the token is never shown.
fn service_account_of(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    let sub = claims.get("sub")?.as_str()?;
    let rest = sub.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    Some(format!("{namespace}/{name}"))
}

#[cfg(test)]
mod tests;

/// Runs a helper command a laptop's login keeps its tokens behind (`az`,
/// an AWS `credential_process`), stdin closed, killed after `deadline`:
/// its standard output, or why it gave none, in words that follow its
/// name ("failed (exit status: 1): <its first line on stderr>").
fn run(mut command: std::process::Command, deadline: Duration) -> Result<Vec<u8>, String> {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not be run: {e}"))?;
    let started = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("gave nothing within {deadline:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("could not be read: {e}"))?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message");
    Err(format!("failed ({}): {}", output.status, said(first)))
}
