//! ECR with the AWS identity ([`super::aws_identity`]): a registry host
//! names its account and region (`<account>.dkr.ecr.<region>.amazonaws.com`,
//! as cloud-provider-aws's ecr-credential-provider reads it), and
//! `ecr:GetAuthorizationToken`, signed with SigV4 by the AWS SDK's own
//! signer (aws-sigv4), gives the password of the user `AWS` for 12 hours.
//! `public.ecr.aws` is not among these hosts: its token service gives
//! anonymous tokens.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use super::aws_identity::{sign_request, Chain, Keys, Source};
use super::{said, send, Env, Lent, TokenCache};
use crate::distribution::Credentials;

/// The operation, as the JSON 1.1 protocol names it.
const TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";

/// The DNS suffixes of AWS partitions a private ECR registry lives under.
const SUFFIXES: &[&str] = &[
    "amazonaws.com",
    "amazonaws.com.cn",
    "sc2s.sgov.gov",
    "c2s.ic.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
];

/// A private ECR registry, as its host names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcrRegistry {
    /// The 12-digit account.
    pub account: String,
    /// e.g. `us-east-1`.
    pub region: String,
    /// A FIPS endpoint (`dkr.ecr-fips`).
    pub fips: bool,
    /// The partition's DNS suffix (`amazonaws.com`, …).
    pub suffix: String,
}

impl EcrRegistry {
    /// `<account>.dkr.ecr[-fips].<region>.<suffix>` or the dual-stack
    /// `<account>.dkr-ecr[-fips].<region>.on.aws`; lower case, no port.
    pub fn parse(host: &str) -> Option<EcrRegistry> {
        let mut labels = host.splitn(4, '.');
        let account = labels.next()?;
        if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (second, service, rest) = (labels.next()?, labels.next()?, labels.next()?);
        // `dkr.ecr[-fips].<region>.<suffix>`, or `dkr-ecr[-fips].<region>.on.aws`.
        let (fips, region, suffix) = match (second, service) {
            ("dkr", "ecr" | "ecr-fips") => {
                let (region, suffix) = rest.split_once('.')?;
                (service == "ecr-fips", region, suffix)
            }
            ("dkr-ecr" | "dkr-ecr-fips", region) => {
                if rest != "on.aws" {
                    return None;
                }
                (second == "dkr-ecr-fips", region, "amazonaws.com")
            }
            _ => return None,
        };
        let region_ok = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        (region_ok && SUFFIXES.contains(&suffix)).then(|| EcrRegistry {
            account: account.to_string(),
            region: region.to_string(),
            fips,
            suffix: suffix.to_string(),
        })
    }

    /// The ECR API's endpoint for the registry's region.
    fn api_endpoint(&self) -> String {
        if self.fips {
            format!("https://ecr-fips.{}.{}/", self.region, self.suffix)
        } else {
            format!("https://api.ecr.{}.{}/", self.region, self.suffix)
        }
    }
}

/// The AWS provider.
pub struct Ecr {
    env: Env,
    client: Result<reqwest::Client, String>,
    chain: Chain,
    cache: TokenCache,
}

impl Ecr {
    pub fn new(env: Env, client: Result<reqwest::Client, String>) -> Ecr {
        Ecr {
            chain: Chain::new(env.clone(), client.clone()),
            env,
            client,
            cache: TokenCache::default(),
        }
    }

    pub async fn lend(&self, registry: &str) -> Lent {
        let host = crate::host_pattern::split_host_port(registry)
            .0
            .to_ascii_lowercase();
        let Some(ecr) = EcrRegistry::parse(&host) else {
            return Lent::Nothing { hint: None };
        };
        let absent = || {
            Lent::Nothing {
            hint: Some("no AWS identity is present (IRSA, EKS Pod Identity or a node role); annotate the syncer's ServiceAccount with eks.amazonaws.com/role-arn, or create an EKS Pod Identity association for it".into()),
        }
        };
        let Some(source) = self.chain.source() else {
            return absent();
        };
        // The token is kept per registry as the image names it: it goes nowhere else.
        let scope = registry.to_ascii_lowercase();
        match self.cache.get(&scope, || self.token(&ecr, &source)).await {
            Ok(kept) => Lent::Credentials {
                credentials: kept.credentials,
                denied_fix: kept.denied_fix,
            },
            // The instance endpoint did not answer: no identity after all.
            Err(why) if why.is_empty() => absent(),
            Err(why) => Lent::Failed(why),
        }
    }

    pub async fn forget(&self, registry: &str) {
        self.cache.forget(&registry.to_ascii_lowercase()).await;
    }

    /// The registry's password from `ecr:GetAuthorizationToken`; an empty
    /// error when the chain's last source turned out absent.
    async fn token(
        &self,
        ecr: &EcrRegistry,
        source: &Source,
    ) -> Result<(Credentials, String, Duration), String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let Some(keys) = self.chain.keys(source, &ecr.region).await? else {
            return Err(String::new());
        };
        let endpoint = self
            .env
            .var("AWS_ENDPOINT_URL_ECR")
            .or_else(|| self.env.var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| ecr.api_endpoint());
        let body = serde_json::json!({ "registryIds": [ecr.account] }).to_string();
        let headers = signed_headers(&keys, &ecr.region, &endpoint, &body)?;
        let mut request = client.post(&endpoint).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let answer = send(request, "ECR's GetAuthorizationToken").await?;
        let registry = format!("{}.dkr.ecr.{}.{}", ecr.account, ecr.region, ecr.suffix);
        if !answer.status.is_success() {
            let json = answer.json();
            let text = |name: &str| super::text(&json, name);
            // `__type` may carry the shape's namespace: `com.amazonaws…#AccessDeniedException`.
            let code = text("__type")
                .map(|t| t.rsplit('#').next().unwrap_or_default().to_string())
                .unwrap_or_else(|| answer.status.to_string());
            let message = text("message")
                .or_else(|| text("Message"))
                .unwrap_or_else(|| said(&answer.body));
            return Err(format!(
                "ecr:GetAuthorizationToken failed for {registry}: {code}: {}; grant ecr:GetAuthorizationToken to {}",
                said(&message),
                keys.principal
            ));
        }
        let data = answer
            .json()
            .and_then(|j| j.get("authorizationData")?.as_array()?.first().cloned())
            .ok_or("ECR's GetAuthorizationToken answered without authorizationData")?;
        let decoded = data
            .get("authorizationToken")
            .and_then(Value::as_str)
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or("ECR's authorizationToken is not base64 of user:password")?;
        let (user, password) = decoded
            .split_once(':')
            .ok_or("ECR's authorizationToken is not base64 of user:password")?;
        let lifetime = data
            .get("expiresAt")
            .and_then(Value::as_f64)
            .map(super::clock::left_until_epoch)
            .unwrap_or_default();
        // The token lasts no longer than the keys that asked for it.
        let lifetime = keys.lifetime.map_or(lifetime, |keys| keys.min(lifetime));
        Ok((
            Credentials {
                user: user.to_string(),
                password: password.to_string(),
                origin: keys.principal.clone(),
            },
            format!(
                "grant ecr:BatchGetImage and ecr:GetDownloadUrlForLayer on the repository to {}",
                keys.principal
            ),
            lifetime,
        ))
    }
}

/// The headers of a GetAuthorizationToken request, SigV4 signature included.
fn signed_headers(
    keys: &Keys,
    region: &str,
    endpoint: &str,
    body: &str,
) -> Result<Vec<(String, String)>, String> {
    let headers = [
        ("content-type", "application/x-amz-json-1.1"),
        ("x-amz-target", TARGET),
    ];
    sign_request(keys, region, "ecr", endpoint, &headers, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecr(host: &str) -> Option<(String, String, bool, String)> {
        EcrRegistry::parse(host).map(|r| (r.account, r.region, r.fips, r.suffix))
    }

    /// The hosts cloud-provider-aws's ecr-credential-provider matches
    /// (cmd/ecr-credential-provider/main.go, `ecrPattern`), and the
    /// dual-stack ones.
    #[test]
    fn ecr_hosts_name_their_account_and_region() {
        assert_eq!(
            ecr("123456789012.dkr.ecr.us-east-1.amazonaws.com"),
            Some((
                "123456789012".into(),
                "us-east-1".into(),
                false,
                "amazonaws.com".into()
            ))
        );
        assert_eq!(
            ecr("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com").map(|r| r.2),
            Some(true)
        );
        assert_eq!(
            ecr("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn").map(|r| r.3),
            Some("amazonaws.com.cn".into())
        );
        assert_eq!(
            ecr("123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov").map(|r| r.1),
            Some("us-iso-east-1".into())
        );
        assert_eq!(
            ecr("123456789012.dkr-ecr.eu-west-1.on.aws").map(|r| r.1),
            Some("eu-west-1".into())
        );
        // Not ECR: ECR Public, short accounts, other domains, look-alikes.
        assert_eq!(ecr("public.ecr.aws"), None);
        assert_eq!(ecr("12345.dkr.ecr.us-east-1.amazonaws.com"), None);
        // Every suffix a region gives is one a registry host may have.
        for (region, suffix) in [
            ("us-east-1", "amazonaws.com"),
            ("us-gov-west-1", "amazonaws.com"),
            ("cn-northwest-1", "amazonaws.com.cn"),
            ("us-iso-east-1", "c2s.ic.gov"),
            ("us-isob-east-1", "sc2s.sgov.gov"),
            ("eu-isoe-west-1", "cloud.adc-e.uk"),
            ("us-isof-south-1", "csp.hci.ic.gov"),
        ] {
            assert_eq!(
                super::super::aws_identity::partition_suffix(region),
                suffix,
                "{region}"
            );
            assert!(SUFFIXES.contains(&suffix));
        }
        assert_eq!(
            ecr("123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.example"),
            None
        );
        assert_eq!(ecr("123456789012.dkr.ecr.us-east-1.example.com"), None);
        assert_eq!(ecr("123456789012.s3.us-east-1.amazonaws.com"), None);
    }

    #[test]
    fn the_api_endpoint_follows_the_registry() {
        let api = |host: &str| EcrRegistry::parse(host).map(|r| r.api_endpoint());
        assert_eq!(
            api("123456789012.dkr.ecr.eu-west-1.amazonaws.com").as_deref(),
            Some("https://api.ecr.eu-west-1.amazonaws.com/")
        );
        assert_eq!(
            api("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com").as_deref(),
            Some("https://ecr-fips.us-east-1.amazonaws.com/")
        );
    }

    #[test]
    fn a_request_is_signed_for_ecr_in_the_registry_region() {
        let keys = Keys {
            access_key_id: "ASIAEXAMPLE".into(),
            secret_access_key: "secret".into(),
            session_token: Some("session".into()),
            lifetime: None,
            principal: String::new(),
        };
        let headers =
            signed_headers(&keys, "eu-west-1", "http://127.0.0.1:9/", "{}").unwrap_or_default();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let authorization = get("authorization").unwrap_or_default();
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/"),
            "{authorization}"
        );
        assert!(
            authorization.contains("/eu-west-1/ecr/aws4_request"),
            "{authorization}"
        );
        assert!(authorization.contains("x-amz-target"), "{authorization}");
        assert_eq!(get("x-amz-security-token").as_deref(), Some("session"));
        assert!(get("host").is_none());
        assert!(!authorization.contains("secret"));
    }
}
