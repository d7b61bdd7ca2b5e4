//! The syncer reads private cloud images with the identity of its pod:
//! `facts sync --once` against the fake API, with IRSA's variables pointed
//! at the fake STS and ECR (`os_placement_e2e::identity`), publishes the
//! platforms of an ECR image that a real registry serves only to ECR's
//! token, and for an ACR image with no Azure identity a failed lookup that
//! says which identity is missing and how to give it; the log says it once,
//! and no token is in the facts or the log.

use std::process::Command;

use os_placement_e2e::faults::api::FakeApi;
use os_placement_e2e::identity::auth_registry::AuthRegistry;
use os_placement_e2e::identity::aws::{FakeSts, KeyRing};
use os_placement_e2e::identity::cloud_hosts_ready;
use os_placement_e2e::identity::ecr::{EcrRegistry, FakeEcr};

use super::setup::{cli_binary, deployment};

const ROLE: &str = "arn:aws:iam::123456789012:role/os-placement-facts-sync";

#[test]
fn the_syncer_reads_ecr_with_irsa_and_names_a_missing_azure_identity() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    if !cloud_hosts_ready().unwrap() {
        return;
    }
    let Some(registry) = AuthRegistry::start().unwrap() else {
        return;
    };
    registry
        .push_image(
            "billing/api",
            "4.2",
            "windows",
            "amd64",
            Some("10.0.20348.2113"),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = os_placement_e2e::identity::service_account_token();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token).unwrap();
    let keys = KeyRing::new();
    let sts = FakeSts::start(&keys, ROLE, &token_file).unwrap();
    let ecr_registry = EcrRegistry::new("123456789012", "us-east-1", &registry);
    let ecr_host = format!("{}:{}", ecr_registry.host(), registry.port());
    let ecr = FakeEcr::start(&keys, &[ecr_registry]).unwrap();
    let acr_host = format!("osplacement.azurecr.io:{}", registry.port());
    let (ecr_image, acr_image) = (
        format!("{ecr_host}/billing/api:4.2"),
        format!("{acr_host}/billing/api:4.2"),
    );
    let api = FakeApi::start(vec![
        deployment("billing", &ecr_image),
        deployment("portal", &acr_image),
    ])
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();

    let output = Command::new(&cli)
        .args(["facts", "sync", "--once", "--namespace", "os-placement"])
        .args(["--registry-timeout", "3s", "--retries", "0"])
        .args([
            "--insecure-registry",
            &ecr_host,
            "--insecure-registry",
            &acr_host,
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("DOCKER_CONFIG", dir.path().join("docker"))
        .env("AWS_ROLE_ARN", ROLE)
        .env("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file)
        .env("AWS_ENDPOINT_URL_STS", sts.url())
        .env("AWS_ENDPOINT_URL_ECR", ecr.url())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AZURE_CLIENT_ID")
        .env_remove("AZURE_FEDERATED_TOKEN_FILE")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{log}");

    let published: String = api
        .objects("ConfigMap")
        .iter()
        .filter_map(|m| m["data"]["images"].as_str().map(str::to_owned))
        .collect();
    let images: serde_json::Value = api
        .objects("ConfigMap")
        .iter()
        .filter_map(|m| m["data"]["images"].as_str())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .find(|v| v.to_string().contains(&ecr_image))
        .unwrap_or_else(|| panic!("no shard with {ecr_image}: {published}\n{log}"));
    let text = images.to_string();
    assert!(text.contains("10.0.20348.2113"), "{text}");
    assert!(
        published.contains("no Azure Workload Identity is present"),
        "{published}"
    );
    assert!(
        published.contains("azure.workload.identity/client-id"),
        "{published}"
    );
    let said = log.matches(&format!("{acr_image} was not read")).count();
    assert_eq!(said, 1, "{log}");
    assert!(!log.contains(&format!("{ecr_image} was not read")), "{log}");
    // The role's keys asked ECR once; neither token nor keys are shown.
    assert_eq!(ecr.issued().len(), 1);
    for token in ecr.issued().iter().map(|i| i.token.clone()) {
        assert!(!published.contains(&token) && !log.contains(&token));
    }
    for key in keys.all() {
        assert!(
            !published.contains(&key.secret_access_key) && !log.contains(&key.secret_access_key)
        );
    }
}
