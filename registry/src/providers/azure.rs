//! ACR with Azure Workload Identity, as the azure-workload-identity
//! webhook sets it up: the federated token file, client and tenant ids
//! (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`,
//! `AZURE_AUTHORITY_HOST`) give an Entra ID token, which the registry's
//! `/oauth2/exchange` turns into an ACR refresh token: the password of the
//! user `00000000-0000-0000-0000-000000000000`, as `az acr login` uses it.

use std::time::Duration;

use serde_json::Value;

use super::{form, read_file, said, send, service_account_of, Env, Lent, TokenCache};
use crate::distribution::Credentials;

/// Entra ID's public cloud, when the webhook names no other.
const AUTHORITY: &str = "https://login.microsoftonline.com/";
/// The user an ACR refresh token goes with.
const USER: &str = "00000000-0000-0000-0000-000000000000";

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

    /// `registry_client` reaches the registry (its exchange endpoint is on
    /// the registry's host, which an image names: the registry guard holds).
    pub async fn lend(
        &self,
        registry: &str,
        insecure: bool,
        registry_client: &reqwest::Client,
    ) -> Lent {
        let Some(identity) = self.identity() else {
            return Lent::Nothing {
                hint: Some("no Azure Workload Identity is present (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE); label the syncer's pods azure.workload.identity/use: \"true\" and annotate its ServiceAccount with azure.workload.identity/client-id".into()),
            };
        };
        let scope = registry.to_ascii_lowercase();
        let fetch = || self.token(registry, insecure, &identity, registry_client);
        match self.cache.get(&scope, fetch).await {
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
        let body = form(&[
            ("grant_type", "client_credentials"),
            ("client_id", &identity.client_id),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", &assertion),
            ("scope", scope_for(&host)),
        ]);
        let answer = send(
            client
                .post(&url)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body),
            "Entra ID",
        )
        .await?;
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
        let scheme = if insecure { "http" } else { "https" };
        let exchange = send(
            registry_client
                .post(format!("{scheme}://{registry}/oauth2/exchange"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(form(&[
                    ("grant_type", "access_token"),
                    ("service", &host),
                    ("tenant", &identity.tenant_id),
                    ("access_token", &aad),
                ])),
            &format!("{registry}'s /oauth2/exchange"),
        )
        .await?;
        let grant = format!(
            "assign the AcrPull role on {host} to the managed identity or app of client id {}",
            identity.client_id
        );
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
            .ok_or_else(|| {
                format!("{registry}'s /oauth2/exchange answered without a refresh_token")
            })?;
        Ok((
            Credentials {
                user: USER.to_string(),
                password: refresh,
                origin: format!("Azure Workload Identity (client id {})", identity.client_id),
            },
            grant,
            Duration::from_secs(lifetime),
        ))
    }
}
