//! The cloud providers end to end: a real docker-registry behind htpasswd
//! whose password is the token a fake identity service issued
//! (`os_placement_e2e::identity`, each following its provider's wire
//! format), reached under ECR-, Artifact Registry- and ACR-shaped names
//! that /etc/hosts puts on 127.0.0.1 (`make test-hosts`). Lookups succeed;
//! tokens are renewed before they expire, over several renewals, with no
//! failed lookup; a token goes to no other host; refused identities give
//! the provider's words and the fix; absent or disabled identities are not
//! asked; the Docker config wins.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use os_placement_core::ImageFacts;
use os_placement_e2e::faults::registry::{Answer, Scripted};
use os_placement_e2e::identity::auth_registry::AuthRegistry;
use os_placement_e2e::identity::aws::{
    FakePodIdentity, FakeSts, KeyRing, PodIdentityFailure, StsFailure,
};
use os_placement_e2e::identity::azure::{AcrFront, EntraFailure, FakeEntra};
use os_placement_e2e::identity::ecr::{EcrFailure, EcrRegistry, FakeEcr};
use os_placement_e2e::identity::gcp::{FakeGce, GceFailure};
use os_placement_e2e::identity::{cloud_hosts_ready, renewed_in_time};

use super::*;

const ROLE: &str = "arn:aws:iam::123456789012:role/os-placement-facts-sync";
const ACCOUNT: &str = "123456789012";
const OTHER_ACCOUNT: &str = "210987654321";
const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const CLIENT: &str = "4f5c1a2e-0000-4000-8000-000000000001";
const ACR_HOST: &str = "osplacement.azurecr.io";
const GAR_HOST: &str = "europe-west4-docker.pkg.dev";
/// Lifetime of the tokens in the renewal tests: several renewals in seconds.
const SHORT: Duration = Duration::from_secs(3);
/// How long the renewal tests read.
const READING: Duration = Duration::from_secs(8);

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    registry: RegistryArgs,
}

/// What each test runs against; `None` after a visible skip outside CI.
fn setup() -> Option<(AuthRegistry, tempfile::TempDir)> {
    if !cloud_hosts_ready().unwrap() {
        return None;
    }
    let registry = AuthRegistry::start().unwrap()?;
    registry
        .push_image(
            "billing/api",
            "4.2",
            "windows",
            "amd64",
            Some("10.0.20348.2113"),
        )
        .unwrap();
    Some((registry, tempfile::tempdir().unwrap()))
}

/// The syncer's projected service account token, written to `name`.
fn service_account_token(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, os_placement_e2e::identity::service_account_token()).unwrap();
    path
}

fn resolver_for(flags: &[String], env: &[(&str, &str)]) -> Resolver {
    let args = ["test", "--registry-timeout", "3s", "--retries", "0"];
    let args = args
        .iter()
        .map(|a| a.to_string())
        .chain(flags.iter().cloned());
    Resolver::with_env(&Flags::try_parse_from(args).unwrap().registry, Env::of(env))
}

fn insecure(registry: &str) -> Vec<String> {
    vec!["--insecure-registry".into(), registry.into()]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn read(resolver: &Resolver, image: &str) -> ImageFacts {
    runtime().block_on(resolver.resolve(image))
}

fn platforms_of(facts: &ImageFacts) -> String {
    match facts {
        ImageFacts::Platforms(platforms) => platforms
            .iter()
            .map(|p| {
                format!(
                    "{}/{}/{}",
                    p.os,
                    p.architecture.clone().unwrap_or_default(),
                    p.os_version.clone().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(","),
        ImageFacts::LookupFailed(why) => panic!("lookup failed: {why}"),
        other => panic!("{other:?}"),
    }
}

fn failure(facts: ImageFacts) -> String {
    match facts {
        ImageFacts::LookupFailed(why) => why,
        other => panic!("not a failure: {other:?}"),
    }
}

/// Reads `image` every 300 ms for [`READING`]: every read succeeds.
fn read_throughout(resolver: &Resolver, image: &str) -> usize {
    let runtime = runtime();
    let started = Instant::now();
    let mut reads = 0;
    while started.elapsed() < READING {
        let facts = runtime.block_on(resolver.resolve(image));
        assert_eq!(
            platforms_of(&facts),
            "windows/amd64/10.0.20348.2113",
            "read {reads}"
        );
        reads += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    reads
}

/// The AWS variables of an IRSA pod, pointed at the fakes.
fn irsa_env<'a>(sts: &'a str, ecr: &'a str, token: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("AWS_ROLE_ARN", ROLE),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token),
        ("AWS_ENDPOINT_URL_STS", sts),
        ("AWS_ENDPOINT_URL_ECR", ecr),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
}

#[test]
fn ecr_is_read_with_irsa_and_its_token_renewed_before_it_expires() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let token = service_account_token(&dir, "irsa-token");
    let sts = FakeSts::start(&keys, ROLE, &token).unwrap();
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    ecr.set_lifetime(SHORT);
    let token = token.display().to_string();
    let (sts_url, ecr_url) = (sts.url(), ecr.url());
    let resolver = resolver_for(&insecure(&host), &irsa_env(&sts_url, &ecr_url, &token));

    let reads = read_throughout(&resolver, &format!("{host}/billing/api:4.2"));
    let issued = ecr.issued();
    assert!(
        issued.len() >= 3,
        "{} tokens over {reads} reads",
        issued.len()
    );
    assert!(
        renewed_in_time(&issued),
        "a renewal came after its token expired"
    );
    // Each token came from keys STS gave for the web identity token.
    assert!(!sts.seen().is_empty());
    assert!(ecr
        .seen()
        .iter()
        .all(|r| r.header("x-amz-security-token").is_some()));
    assert_eq!(
        resolver.lookups_by_credentials(),
        vec![("aws", reads as u64, 0)]
    );
}

#[test]
fn ecr_is_read_with_eks_pod_identity_and_tokens_stay_with_their_registry() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let token = service_account_token(&dir, "eks-pod-identity-token");
    let agent = FakePodIdentity::start(&keys, ROLE, &token).unwrap();
    let first = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let second = EcrRegistry::new(OTHER_ACCOUNT, "eu-west-1", &registry);
    let (first_host, second_host) = (
        format!("{}:{}", first.host(), registry.port()),
        format!("{}:{}", second.host(), registry.port()),
    );
    let ecr = FakeEcr::start(&keys, &[first, second]).unwrap();
    // A registry that is no cloud's, recording what it is sent.
    let other = Scripted::start(|_| Answer::challenge("Basic realm=\"other\"")).unwrap();
    let other_host = format!("registry.other.test:{}", other.port());
    let mut flags = insecure(&first_host);
    flags.extend(insecure(&second_host));
    flags.extend(insecure(&other_host));
    let (agent_url, ecr_url) = (format!("{}/v1/credentials", agent.url()), ecr.url());
    let token = token.display().to_string();
    let resolver = resolver_for(
        &flags,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", agent_url.as_str()),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token.as_str()),
            ("AWS_ENDPOINT_URL_ECR", ecr_url.as_str()),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    );

    let facts = read(&resolver, &format!("{first_host}/billing/api:4.2"));
    assert_eq!(platforms_of(&facts), "windows/amd64/10.0.20348.2113");
    let token_text = std::fs::read_to_string(dir.path().join("eks-pod-identity-token")).unwrap();
    assert!(agent
        .seen()
        .iter()
        .all(|r| r.header("authorization") == Some(token_text.as_str())));
    let first_token = ecr.issued()[0].token.clone();

    // The other account's registry gets a token of its own.
    let facts = read(&resolver, &format!("{second_host}/billing/api:4.2"));
    assert_eq!(platforms_of(&facts), "windows/amd64/10.0.20348.2113");
    let bodies: Vec<String> = ecr
        .seen()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(
        bodies.iter().any(|b| b.contains(OTHER_ACCOUNT)),
        "{bodies:?}"
    );
    assert_eq!(ecr.issued().len(), 2);

    // A registry that is no cloud's is sent no token at all.
    let why = failure(read(&resolver, &format!("{other_host}/billing/api:4.2")));
    assert!(why.contains("the Docker config has none for it"), "{why}");
    assert!(!other.seen().is_empty());
    for request in other.seen() {
        let authorization = request.header("authorization").unwrap_or_default();
        assert!(!authorization.contains(&first_token), "{authorization}");
        assert!(authorization.is_empty(), "{authorization}");
    }
}

#[test]
fn refused_aws_identities_give_the_providers_words_and_the_fix() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let token = service_account_token(&dir, "irsa-token");
    let sts = FakeSts::start(&keys, ROLE, &token).unwrap();
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let image = format!("{host}/billing/api:4.2");
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let token = token.display().to_string();
    let (sts_url, ecr_url) = (sts.url(), ecr.url());
    let env = irsa_env(&sts_url, &ecr_url, &token);
    let fresh = || resolver_for(&insecure(&host), &env);

    sts.set_failure(Some(StsFailure::AccessDenied));
    let why = failure(read(&fresh(), &image));
    assert!(why.contains("AssumeRoleWithWebIdentity"), "{why}");
    assert!(why.contains("AccessDenied"), "{why}");
    assert!(
        why.contains("; let the trust policy of arn:aws:iam::123456789012:role/os-placement-facts-sync allow sts:AssumeRoleWithWebIdentity for the ServiceAccount os-placement/os-placement-facts-sync"),
        "{why}"
    );
    sts.set_failure(Some(StsFailure::ExpiredToken));
    let why = failure(read(&fresh(), &image));
    assert!(why.contains("ExpiredTokenException"), "{why}");
    assert!(
        why.contains("; check the pod's aws-iam-token volume"),
        "{why}"
    );
    sts.set_failure(None);

    ecr.set_failure(Some(EcrFailure::AccessDenied));
    let why = failure(read(&fresh(), &image));
    assert!(why.contains("ecr:GetAuthorizationToken failed"), "{why}");
    assert!(why.contains("AccessDeniedException"), "{why}");
    assert!(
        why.contains("; grant ecr:GetAuthorizationToken to the role arn:aws:iam::123456789012:role/os-placement-facts-sync"),
        "{why}"
    );
    // The registry refuses a token it was given: asked again once, then said.
    ecr.set_failure(Some(EcrFailure::RegistryRefuses));
    let issued_before = ecr.issued().len();
    let why = failure(read(&fresh(), &image));
    assert!(why.contains("401"), "{why}");
    assert!(
        why.contains("come from the role arn:aws:iam::123456789012:role/os-placement-facts-sync"),
        "{why}"
    );
    assert_eq!(ecr.issued().len(), issued_before + 2);
    // No secret in any of it.
    for k in keys.all() {
        assert!(!why.contains(&k.secret_access_key));
    }
}

#[test]
fn absent_or_disabled_identities_are_not_asked_and_the_docker_config_wins() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let token = service_account_token(&dir, "irsa-token");
    let sts = FakeSts::start(&keys, ROLE, &token).unwrap();
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let image = format!("{host}/billing/api:4.2");
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let token = token.display().to_string();
    let (sts_url, ecr_url) = (sts.url(), ecr.url());

    // No AWS identity: the registry is read anonymously, and refuses.
    let absent = resolver_for(
        &insecure(&host),
        &[
            ("AWS_ENDPOINT_URL_STS", &sts_url),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    );
    let why = failure(read(&absent, &image));
    assert!(why.contains("no AWS identity is present"), "{why}");
    assert!(
        why.contains("; annotate the syncer's ServiceAccount with eks.amazonaws.com/role-arn"),
        "{why}"
    );
    // Nor Google's or Azure's, for their hosts.
    let gar = format!("{GAR_HOST}:{}", registry.port());
    let why = failure(read(
        &resolver_for(&insecure(&gar), &[]),
        &format!("{gar}/billing/api:4.2"),
    ));
    assert!(why.contains("no Google identity is present"), "{why}");

    // Turned off, the identity present is not used.
    let mut flags = insecure(&host);
    flags.extend(["--aws-credentials".to_string(), "off".to_string()]);
    let off = resolver_for(&flags, &irsa_env(&sts_url, &ecr_url, &token));
    let why = failure(read(&off, &image));
    assert!(why.contains("--aws-credentials is off"), "{why}");

    // The Docker config names the host: its credentials, not the role's.
    let pusher = registry.pusher_password();
    let owner = host.clone();
    let configured = resolver_for(&insecure(&host), &irsa_env(&sts_url, &ecr_url, &token))
        .with_credentials(move |r| {
            (r == owner).then(|| Credentials::docker_config("pusher".into(), pusher.clone()))
        });
    assert_eq!(
        platforms_of(&read(&configured, &image)),
        "windows/amd64/10.0.20348.2113"
    );
    assert_eq!(
        configured.lookups_by_credentials(),
        vec![("docker-config", 1, 0)]
    );

    assert!(sts.seen().is_empty(), "STS was asked");
    assert!(ecr.seen().is_empty(), "ECR was asked");
}

#[test]
fn artifact_registry_is_read_with_the_gke_metadata_server() {
    let Some((registry, _dir)) = setup() else {
        return;
    };
    let gce = FakeGce::start(&registry).unwrap();
    gce.set_lifetime(SHORT);
    let host = format!("{GAR_HOST}:{}", registry.port());
    let metadata = gce.host();
    let resolver = resolver_for(&insecure(&host), &[("GCE_METADATA_HOST", &metadata)]);

    read_throughout(&resolver, &format!("{host}/billing/api:4.2"));
    let issued = gce.issued();
    assert!(issued.len() >= 3, "{} tokens", issued.len());
    assert!(renewed_in_time(&issued));
    assert!(gce
        .seen()
        .iter()
        .all(|r| r.header("metadata-flavor") == Some("Google")));

    gce.set_failure(Some(GceFailure::Forbidden));
    let fresh = resolver_for(&insecure(&host), &[("GCE_METADATA_HOST", &metadata)]);
    let why = failure(read(&fresh, &format!("{host}/billing/api:4.2")));
    assert!(why.contains("the GKE metadata server"), "{why}");
    assert!(why.contains("; enable Workload Identity"), "{why}");
}

/// A service account key in GOOGLE_APPLICATION_CREDENTIALS (a CI pipeline
/// running `check --lookup`): an RS256 assertion the key signs, exchanged
/// at its `token_uri`, which checks it against the key's public half.
#[test]
fn artifact_registry_is_read_with_a_service_account_key() {
    use os_placement_e2e::identity::gcp::{service_account_key, FakeGoogleOAuth, OAuthFailure};
    let Some((registry, dir)) = setup() else {
        return;
    };
    let Some((pem, public)) = service_account_key(dir.path()).unwrap() else {
        return;
    };
    let email = "ci-reader@example-project.iam.gserviceaccount.com";
    let oauth = FakeGoogleOAuth::start(&registry, email, public).unwrap();
    oauth.set_lifetime(SHORT);
    let key = |private_key: &str| {
        serde_json::json!({"type": "service_account", "project_id": "example-project",
            "private_key_id": "8f2d", "private_key": private_key, "client_email": email,
            "client_id": "1", "token_uri": format!("{}/token", oauth.url())})
        .to_string()
    };
    let path = dir.path().join("key.json");
    std::fs::write(&path, key(&pem)).unwrap();
    let path = path.display().to_string();
    let host = format!("{GAR_HOST}:{}", registry.port());
    let image = format!("{host}/billing/api:4.2");
    let env = [("GOOGLE_APPLICATION_CREDENTIALS", path.as_str())];
    let resolver = resolver_for(&insecure(&host), &env);

    read_throughout(&resolver, &image);
    let issued = oauth.issued();
    assert!(issued.len() >= 3, "{} tokens", issued.len());
    assert!(renewed_in_time(&issued));

    // A deleted key: Google's words and the fix; no key material shown.
    oauth.set_failure(Some(OAuthFailure::KeyDeleted));
    let why = failure(read(&resolver_for(&insecure(&host), &env), &image));
    assert!(why.contains("Invalid JWT Signature."), "{why}");
    assert!(
        why.contains("; check that the key is not deleted or disabled, or create a new one"),
        "{why}"
    );
    assert!(!why.contains("PRIVATE KEY"), "{why}");
    // Negative: a key file without a usable key is said, and the endpoint not asked.
    oauth.set_failure(None);
    let asked = oauth.seen().len();
    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        key("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    let broken = broken.display().to_string();
    let why = failure(read(
        &resolver_for(
            &insecure(&host),
            &[("GOOGLE_APPLICATION_CREDENTIALS", &broken)],
        ),
        &image,
    ));
    assert!(why.contains("holds no RSA private key"), "{why}");
    assert!(
        why.contains(&format!("; create a new key for {email}")),
        "{why}"
    );
    assert_eq!(oauth.seen().len(), asked);
}

#[test]
fn acr_is_read_with_azure_workload_identity_through_its_exchange() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let token = service_account_token(&dir, "azure-identity-token");
    let entra = FakeEntra::start(TENANT, CLIENT, &token).unwrap();
    entra.set_lifetime(SHORT);
    let front = AcrFront::start(&registry, &entra, TENANT, ACR_HOST).unwrap();
    front.set_lifetime(SHORT);
    let host = format!("{ACR_HOST}:{}", front.port());
    let (authority, token) = (entra.url(), token.display().to_string());
    let env = [
        ("AZURE_CLIENT_ID", CLIENT),
        ("AZURE_TENANT_ID", TENANT),
        ("AZURE_FEDERATED_TOKEN_FILE", token.as_str()),
        ("AZURE_AUTHORITY_HOST", authority.as_str()),
    ];
    let resolver = resolver_for(&insecure(&host), &env);

    read_throughout(&resolver, &format!("{host}/billing/api:4.2"));
    let issued = front.issued();
    assert!(issued.len() >= 3, "{} refresh tokens", issued.len());
    assert!(renewed_in_time(&issued));
    assert!(renewed_in_time(&entra.issued()));
    // Entra's token went to the exchange only, never to the registry's API.
    let aad: Vec<String> = entra.issued().iter().map(|i| i.token.clone()).collect();
    for request in front.seen() {
        if request.path != "/oauth2/exchange" {
            let authorization = request
                .header("authorization")
                .unwrap_or_default()
                .to_string();
            assert!(aad.iter().all(|t| !authorization.contains(t.as_str())));
        }
    }

    entra.set_failure(Some(EntraFailure::AssertionExpired));
    let fresh = resolver_for(&insecure(&host), &env);
    let why = failure(read(&fresh, &format!("{host}/billing/api:4.2")));
    assert!(why.contains("AADSTS700024"), "{why}");
    assert!(
        why.contains("; check that identity's federated credential names this cluster's OIDC issuer and the ServiceAccount os-placement/os-placement-facts-sync"),
        "{why}"
    );
}

/// A laptop without a workload identity: `az account get-access-token`
/// (a stand-in `az` on PATH, printing what az 2.54+ prints) gives Entra's
/// token, as azure-identity's AzureCliCredential reads it.
#[test]
fn acr_is_read_with_an_azure_cli_login_outside_a_cluster() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let federated = service_account_token(&dir, "azure-identity-token");
    let entra = FakeEntra::start(TENANT, CLIENT, &federated).unwrap();
    let front = AcrFront::start(&registry, &entra, TENANT, ACR_HOST).unwrap();
    let host = format!("{ACR_HOST}:{}", front.port());
    let image = format!("{host}/billing/api:4.2");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let az = |script: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.join("az");
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"$*\" >> \"$0.args\"\n{script}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let calls = || std::fs::read_to_string(bin.join("az.args")).unwrap_or_default();
    let signed_in = entra.sign_in();
    let expires_on = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let printed = serde_json::json!({"accessToken": signed_in.token, "expiresOn": "2026-11-29 10:00:00.000000",
        "expires_on": expires_on, "subscription": "s", "tenant": TENANT, "tokenType": "Bearer"});
    az(&format!("echo '{printed}'"));
    let path = bin.display().to_string();
    let resolver = resolver_for(&insecure(&host), &[("PATH", &path)]);
    assert!(platforms_of(&read(&resolver, &image)).contains("10.0.20348.2113"));
    assert_eq!(
        calls().trim(),
        "account get-access-token --output json --scope https://management.azure.com/.default"
    );
    assert_eq!(front.issued().len(), 1);
    // Kept: a second read runs az no more.
    read(&resolver, &image);
    assert_eq!(calls().lines().count(), 1);

    // A workload identity wins where present: az is not run.
    let (authority, token) = (entra.url(), federated.display().to_string());
    let with_identity = resolver_for(
        &insecure(&host),
        &[
            ("PATH", &path),
            ("AZURE_CLIENT_ID", CLIENT),
            ("AZURE_TENANT_ID", TENANT),
            ("AZURE_FEDERATED_TOKEN_FILE", &token),
            ("AZURE_AUTHORITY_HOST", &authority),
        ],
    );
    assert!(platforms_of(&read(&with_identity, &image)).contains("10.0.20348.2113"));
    assert_eq!(calls().lines().count(), 1);

    // Not logged in: az's own words and the fix; no token shown.
    az("echo \"ERROR: Please run 'az login' to setup account.\" >&2; exit 1");
    let fresh = resolver_for(&insecure(&host), &[("PATH", &path)]);
    let why = failure(read(&fresh, &image));
    assert!(
        why.contains("Please run 'az login' to setup account."),
        "{why}"
    );
    assert!(why.ends_with("; run az login"), "{why}");
    assert!(!why.contains(&signed_in.token));

    // Negative: no az and no identity: not asked, and the 401 says how to give one.
    let none = resolver_for(&insecure(&host), &[("PATH", "/nonexistent")]);
    let why = failure(read(&none, &image));
    assert!(why.contains("(outside a cluster: az login)"), "{why}");
}

/// A laptop's AWS profiles, as the SDKs' profile provider reads them: an
/// IAM Identity Center (SSO) login's cached token exchanged at the portal
/// (a fake one at AWS_ENDPOINT_URL_SSO), and a `credential_process`.
#[test]
fn ecr_is_read_with_an_aws_sso_profile_and_a_credential_process() {
    use os_placement_e2e::identity::aws::{FakeSsoPortal, SsoFailure};
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let image = format!("{host}/billing/api:4.2");
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let portal = FakeSsoPortal::start(&keys, "sso-token-1", ACCOUNT, "EcrReader").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".aws/sso/cache")).unwrap();
    let process = dir.path().join("credentials.sh");
    std::fs::write(
        home.join(".aws/config"),
        format!(
            "[profile dev]\nsso_session = corp\nsso_account_id = {ACCOUNT}\nsso_role_name = EcrReader\nregion = us-east-1\n\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n\n[profile ci]\ncredential_process = sh {} --profile ci\n",
            process.display()
        ),
    )
    .unwrap();
    // `aws sso login` caches the token under the SHA-1 of the session's name.
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, b"corp");
    let name: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let cache = home.join(format!(".aws/sso/cache/{name}.json"));
    let login = |expires: &str| {
        let cached = serde_json::json!({"startUrl": "https://corp.awsapps.com/start", "region": "us-east-1",
            "accessToken": "sso-token-1", "expiresAt": expires});
        std::fs::write(&cache, cached.to_string()).unwrap();
    };
    login("2099-01-01T00:00:00Z");
    let (home_text, portal_url, ecr_url) = (home.display().to_string(), portal.url(), ecr.url());
    let env = |profile: &'static str| {
        vec![
            ("HOME", home_text.clone()),
            ("AWS_PROFILE", profile.to_string()),
            ("AWS_ENDPOINT_URL_SSO", portal_url.clone()),
            ("AWS_ENDPOINT_URL_ECR", ecr_url.clone()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_string()),
        ]
    };
    let resolver = |profile: &'static str| {
        let vars = env(profile);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        resolver_for(&insecure(&host), &vars)
    };
    assert!(platforms_of(&read(&resolver("dev"), &image)).contains("10.0.20348.2113"));
    assert_eq!(portal.issued().len(), 1);
    let request = &portal.seen()[0];
    assert!(request
        .query
        .contains(&("account_id".into(), ACCOUNT.into())));

    // No access to the role: the portal's words, and what to assign.
    portal.set_failure(Some(SsoFailure::NoAccess));
    let why = failure(read(&resolver("dev"), &image));
    assert!(why.contains("403"), "{why}");
    assert!(
        why.ends_with("; assign the permission set EcrReader in account 123456789012 to your user"),
        "{why}"
    );
    portal.set_failure(None);
    // An expired login is said without asking the portal.
    login("2020-01-01T00:00:00Z");
    let asked = portal.seen().len();
    let why = failure(read(&resolver("dev"), &image));
    assert!(
        why.contains("has expired; run aws sso login --profile dev"),
        "{why}"
    );
    assert_eq!(portal.seen().len(), asked);

    // A credential_process printing a user's static keys.
    let user = keys.add_static(ACCOUNT, "ci");
    let printed = serde_json::json!({"Version": 1, "AccessKeyId": user.access_key_id,
        "SecretAccessKey": user.secret_access_key});
    std::fs::write(&process, format!("echo '{printed}'\n")).unwrap();
    assert!(platforms_of(&read(&resolver("ci"), &image)).contains("10.0.20348.2113"));
    // One that fails: its words and the fix; no key shown.
    std::fs::write(&process, "echo 'the vault is locked' >&2; exit 3\n").unwrap();
    let why = failure(read(&resolver("ci"), &image));
    assert!(why.contains("the vault is locked"), "{why}");
    assert!(
        why.ends_with("; check the credential_process of the AWS profile ci"),
        "{why}"
    );
    assert!(!why.contains(&user.secret_access_key));
}

/// A role profile (`role_arn` with `source_profile`): the source's static
/// keys sign `sts:AssumeRole` (checked by the fake STS with the AWS
/// SigV4 rules), and the role's keys sign GetAuthorizationToken.
#[test]
fn ecr_is_read_with_a_role_an_aws_profile_assumes() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let base = keys.add_static(ACCOUNT, "developer");
    let unused = dir.path().join("no-web-identity-token");
    let sts = FakeSts::start(&keys, ROLE, &unused).unwrap();
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let image = format!("{host}/billing/api:4.2");
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        format!(
            "[base]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            base.access_key_id, base.secret_access_key
        ),
    )
    .unwrap();
    std::fs::write(
        home.join(".aws/config"),
        format!("[profile deploy]\nrole_arn = {ROLE}\nsource_profile = base\nrole_session_name = laptop\n"),
    )
    .unwrap();
    let (home, sts_url, ecr_url) = (home.display().to_string(), sts.url(), ecr.url());
    let env = [
        ("HOME", home.as_str()),
        ("AWS_PROFILE", "deploy"),
        ("AWS_ENDPOINT_URL_STS", sts_url.as_str()),
        ("AWS_ENDPOINT_URL_ECR", ecr_url.as_str()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    assert!(
        platforms_of(&read(&resolver_for(&insecure(&host), &env), &image))
            .contains("10.0.20348.2113")
    );
    // STS was asked once, signed with the base profile's key; ECR with the role's.
    let asked = sts.seen();
    assert_eq!(asked.len(), 1);
    let authorization = asked[0]
        .header("authorization")
        .unwrap_or_default()
        .to_string();
    assert!(
        authorization.contains(&base.access_key_id),
        "{authorization}"
    );
    let role_key = sts.issued()[0].token.clone();
    assert!(ecr.seen().iter().all(|r| r
        .header("authorization")
        .unwrap_or_default()
        .contains(&role_key)));

    // Not trusted: STS's words, and which trust policy to change.
    sts.set_failure(Some(StsFailure::AccessDenied));
    let why = failure(read(&resolver_for(&insecure(&host), &env), &image));
    assert!(why.contains("AssumeRole for arn:aws:iam::123456789012:role/os-placement-facts-sync (the AWS profile deploy) failed: AccessDenied"), "{why}");
    let fix = format!("; let the trust policy of {ROLE} allow sts:AssumeRole for the IAM identity of the AWS profile base ({home}/.aws/credentials)");
    assert!(why.ends_with(&fix), "{why}");
    assert!(!why.contains(&base.secret_access_key));
}

#[test]
fn pod_identity_refusals_are_said_in_the_agents_words() {
    let Some((registry, dir)) = setup() else {
        return;
    };
    let keys = KeyRing::new();
    let token = service_account_token(&dir, "eks-pod-identity-token");
    let agent = FakePodIdentity::start(&keys, ROLE, &token).unwrap();
    agent.set_failure(Some(PodIdentityFailure::AccessDenied));
    let ecr_registry = EcrRegistry::new(ACCOUNT, "us-east-1", &registry);
    let host = format!("{}:{}", ecr_registry.host(), registry.port());
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let (agent_url, ecr_url) = (format!("{}/v1/credentials", agent.url()), ecr.url());
    let token = token.display().to_string();
    let resolver = resolver_for(
        &insecure(&host),
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", agent_url.as_str()),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token.as_str()),
            ("AWS_ENDPOINT_URL_ECR", ecr_url.as_str()),
        ],
    );
    let why = failure(read(&resolver, &format!("{host}/billing/api:4.2")));
    assert!(why.contains("EKS Pod Identity agent"), "{why}");
    assert!(why.contains("403"), "{why}");
    assert!(why.contains("; create a Pod Identity association"), "{why}");
    assert!(ecr.seen().is_empty());
}
