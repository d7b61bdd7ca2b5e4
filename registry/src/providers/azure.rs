//! ACR with Azure Workload Identity, as the azure-workload-identity
//! webhook sets it up: the federated token file, client and tenant ids
//! (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`,
//! `AZURE_AUTHORITY_HOST`) give an Entra ID token, which the registry's
//! `/oauth2/exchange` turns into an ACR refresh token: the password of the
//! user `00000000-0000-0000-0000-000000000000`, as `az acr login` uses it.
//! Without a workload identity, an Azure CLI login (`az` on `PATH`: a
//! laptop running `check --lookup`; the syncer's image has none) gives the
//! Entra ID token instead, as azure-identity's `AzureCliCredential` asks it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{post_form, read_file, said, service_account_of, Env, Lent, TokenCache};
use crate::distribution::Credentials;

/// Entra ID's public cloud, when the webhook names no other.
const AUTHORITY: &str = "https://login.microsoftonline.com/";
/// The user an ACR refresh token goes with.
const USER: &str = "00000000-0000-0000-0000-000000000000";
/// The longest `az account get-access-token` may take (azure-identity gives it as long).
const CLI_DEADLINE: Duration = Duration::from_secs(10);

/// Whether `host` is an ACR registry (public, China and US Government clouds).
pub fn serves(host: &str) -> bool {
    [".azurecr.io", ".azurecr.cn", ".azurecr.us"]
        .iter()
        .any(|suffix| {
            host.strip_suffix(suffix)
                .is_some_and(|n| !n.is_empty() && !n.contains('.'))
        })
}

/// The Entra ID scope of the cloud an ACR host is in (Azure Resource Manager's).
fn scope_for(host: &str) -> &'static str {
    if host.ends_with(".azurecr.cn") {
        "https://management.chinacloudapi.cn/.default"
    } else if host.ends_with(".azurecr.us") {
        "https://management.usgovcloudapi.net/.default"
    } else {
        "https://management.azure.com/.default"
    }
}

/// The workload identity the webhook injected.
struct Identity {
    client_id: String,
    tenant_id: String,
    token_file: String,
    authority: String,
}

/// The Azure provider.
pub struct Acr {
    env: Env,
    client: Result<reqwest::Client, String>,
    cache: TokenCache,
}

impl Acr {
    pub fn new(env: Env, client: Result<reqwest::Client, String>) -> Acr {
        Acr {
            env,
            client,
            cache: TokenCache::default(),
        }
    }

    fn identity(&self) -> Option<Identity> {
        Some(Identity {
            client_id: self.env.var("AZURE_CLIENT_ID")?,
            tenant_id: self.env.var("AZURE_TENANT_ID")?,
            token_file: self.env.var("AZURE_FEDERATED_TOKEN_FILE")?,
            authority: self
                .env
                .var("AZURE_AUTHORITY_HOST")
                .unwrap_or_else(|| AUTHORITY.to_string()),
        })
    }

    /// The Azure CLI, where it is on `PATH`.
    fn cli(&self) -> Option<PathBuf> {
        let path = self.env.var("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("az"))
            .find(|az| az.is_file())
    }

    /// `registry_client` reaches the registry (its exchange endpoint is on
    /// the registry's host, which an image names: the registry guard holds).
    pub async fn lend(
        &self,
        registry: &str,
        insecure: bool,
        registry_client: &reqwest::Client,
    ) -> Lent {
        let scope = registry.to_ascii_lowercase();
        let fetched = match (self.identity(), self.cli()) {
            (Some(identity), _) => {
                let fetch = || self.token(registry, insecure, &identity, registry_client);
                self.cache.get(&scope, fetch).await
            }
            (None, Some(az)) => {
                let fetch = || self.cli_token(registry, insecure, az, registry_client);
                self.cache.get(&scope, fetch).await
            }
            (None, None) => return Lent::Nothing {
                hint: Some("no Azure Workload Identity is present (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE); label the syncer's pods azure.workload.identity/use: \"true\" and annotate its ServiceAccount with azure.workload.identity/client-id (outside a cluster: az login)".into()),
            },
        };
        match fetched {
            Ok(kept) => Lent::Credentials {
                credentials: kept.credentials,
                denied_fix: kept.denied_fix,
            },
            Err(why) => Lent::Failed(why),
        }
    }

    pub async fn forget(&self, registry: &str) {
        self.cache.forget(&registry.to_ascii_lowercase()).await;
    }

    async fn token(
        &self,
        registry: &str,
        insecure: bool,
        identity: &Identity,
        registry_client: &reqwest::Client,
    ) -> Result<(Credentials, String, Duration), String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let assertion = read_file(
            &identity.token_file,
            "the federated token (AZURE_FEDERATED_TOKEN_FILE)",
        )?;
        let account = service_account_of(&assertion)
            .map(|sa| format!(" and the ServiceAccount {sa}"))
            .unwrap_or_default();
        let host = crate::host_pattern::split_host_port(registry)
            .0
            .to_ascii_lowercase();
        let url = format!(
            "{}/{}/oauth2/v2.0/token",
            identity.authority.trim_end_matches('/'),
            identity.tenant_id
        );
        let pairs = [
            ("grant_type", "client_credentials"),
            ("client_id", &identity.client_id),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", &assertion),
            ("scope", scope_for(&host)),
        ];
        let answer = post_form(client.post(&url), &pairs, "Entra ID").await?;
        let json = answer.json();
        let text = |name: &str| super::text(&json, name);
        if !answer.status.is_success() {
            let error = text("error").unwrap_or_else(|| answer.status.to_string());
            let description = text("error_description").unwrap_or_else(|| said(&answer.body));
            // Entra's description runs on with trace ids: its first sentence says it.
            let first = description.split(". ").next().unwrap_or_default();
            return Err(format!(
                "Entra ID refused the federated token of client id {}: {error}: {}; check that identity's federated credential names this cluster's OIDC issuer{account}",
                identity.client_id,
                said(first)
            ));
        }
        let aad = text("access_token").ok_or("Entra ID answered without an access_token")?;
        let lifetime = json
            .as_ref()
            .and_then(|j| j.get("expires_in"))
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .unwrap_or(0);
        let who = Who {
            tenant: identity.tenant_id.clone(),
            grantee: format!(
                "the managed identity or app of client id {}",
                identity.client_id
            ),
            origin: format!("Azure Workload Identity (client id {})", identity.client_id),
        };
        exchange(registry, insecure, registry_client, &aad, lifetime, &who).await
    }

    /// The Entra ID token of the Azure CLI's login, then the exchange.
    async fn cli_token(
        &self,
        registry: &str,
        insecure: bool,
        az: PathBuf,
        registry_client: &reqwest::Client,
    ) -> Result<(Credentials, String, Duration), String> {
        let host = crate::host_pattern::split_host_port(registry)
            .0
            .to_ascii_lowercase();
        let mut command = Command::new(&az);
        command.args(["account", "get-access-token", "--output", "json", "--scope"]);
        command.arg(scope_for(&host));
        if let Some(tenant) = self.env.var("AZURE_TENANT_ID") {
            command.args(["--tenant", &tenant]);
        }
        let output = tokio::task::spawn_blocking(move || super::run(command, CLI_DEADLINE))
            .await
            .map_err(|e| format!("the Azure CLI did not finish: {e}"))?
            .map_err(|why| format!("the Azure CLI {why}; run az login"))?;
        let json: Option<Value> = serde_json::from_slice(&output).ok();
        let text = |name: &str| super::text(&json, name);
        let aad = text("accessToken")
            .ok_or("the Azure CLI answered without an accessToken; run az login")?;
        let tenant =
            text("tenant").ok_or("the Azure CLI answered without its tenant; run az login")?;
        // `expires_on` (seconds since the epoch) since az 2.54; older ones give 5 minutes.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let lifetime = json
            .as_ref()
            .and_then(|j| j.get("expires_on"))
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .map_or(300, |at| at.saturating_sub(now));
        let who = Who {
            tenant,
            grantee: "the account az is logged in with".to_string(),
            origin: "the Azure CLI login".to_string(),
        };
        exchange(registry, insecure, registry_client, &aad, lifetime, &who).await
    }
}

/// Whose Entra ID token is exchanged.
struct Who {
    /// The tenant the token is of.
    tenant: String,
    /// Who to assign AcrPull to, in words.
    grantee: String,
    /// Where the credentials come from, in words.
    origin: String,
}

/// Entra ID's token `aad` for `who`, exchanged at the registry's
/// `/oauth2/exchange` for an ACR refresh token.
async fn exchange(
    registry: &str,
    insecure: bool,
    registry_client: &reqwest::Client,
    aad: &str,
    lifetime: u64,
    who: &Who,
) -> Result<(Credentials, String, Duration), String> {
    let host = crate::host_pattern::split_host_port(registry)
        .0
        .to_ascii_lowercase();
    let scheme = if insecure { "http" } else { "https" };
    let pairs = [
        ("grant_type", "access_token"),
        ("service", host.as_str()),
        ("tenant", who.tenant.as_str()),
        ("access_token", aad),
    ];
    let exchange = post_form(
        registry_client.post(format!("{scheme}://{registry}/oauth2/exchange")),
        &pairs,
        &format!("{registry}'s /oauth2/exchange"),
    )
    .await?;
    let grant = format!("assign the AcrPull role on {host} to {}", who.grantee);
    if !exchange.status.is_success() {
        return Err(format!(
            "{registry} refused the Entra ID token at /oauth2/exchange ({}): {}; {grant}",
            exchange.status,
            said(&exchange.body)
        ));
    }
    let refresh = exchange
        .json()
        .and_then(|j| {
            j.get("refresh_token")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .ok_or_else(|| format!("{registry}'s /oauth2/exchange answered without a refresh_token"))?;
    Ok((
        Credentials {
            user: USER.to_string(),
            password: refresh,
            origin: who.origin.clone(),
        },
        grant,
        Duration::from_secs(lifetime),
    ))
}
