//! `facts sync --pull-secrets` reads each image with the pull Secrets of the
//! namespaces that use it, as the kubelet pulls it: a real registry behind
//! htpasswd serves one host to several users; namespaces hold different
//! `kubernetes.io/dockerconfigjson` Secrets for it (named by a Pod, a
//! Deployment, or a Deployment's ServiceAccount); a Pod naming none reads
//! with the syncer's Docker config. One namespace's credentials are never
//! lent to another's: a Secret with a wrong password fails its own
//! namespace's image, and an image read by one namespace but not by another
//! is published as a failure naming the one that cannot. A namespace whose
//! Secrets the syncer may not read (403) says what to grant; no password
//! is in the facts or the log.

use std::process::Command;

use base64::Engine as _;
use os_placement_e2e::faults::api::FakeApi;
use os_placement_e2e::identity::auth_registry::AuthRegistry;
use os_placement_e2e::identity::{cloud_hosts_ready, pull_secret};
use serde_json::{json, Value};

use super::setup::cli_binary;

/// A workload of `kind` in `namespace` running `image`, with `extra` in its pod spec.
fn workload(kind: &str, namespace: &str, name: &str, image: &str, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": image}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    match kind {
        "Pod" => json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}),
        _ => json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}),
    }
}

/// The published image facts, by image, as the policy reads them.
fn published(api: &FakeApi) -> serde_json::Map<String, Value> {
    api.objects("ConfigMap")
        .iter()
        .filter_map(|m| m["data"]["images"].as_str())
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .filter_map(|v| v.get("images").and_then(Value::as_object).cloned())
        .flatten()
        .collect()
}

/// The CLI and a registry behind htpasswd under `registry.other.test`;
/// `None` after a visible skip outside CI.
fn prepare() -> Option<(std::path::PathBuf, AuthRegistry)> {
    let cli = cli_binary().unwrap()?;
    if !cloud_hosts_ready().unwrap() {
        return None;
    }
    Some((cli, AuthRegistry::start().unwrap()?))
}

#[test]
fn each_namespace_reads_its_images_with_its_own_pull_secrets() {
    let Some((cli, registry)) = prepare() else {
        return;
    };
    for (repository, os, version) in [
        ("team-a/app", "windows", Some("10.0.20348.2113")),
        ("team-b/app", "linux", None),
        ("team-c/app", "windows", Some("10.0.17763.5830")),
        ("team-d/app", "windows", Some("10.0.26100.1742")),
        ("team-e/app", "linux", None),
        ("team-f/app", "linux", None),
        ("shared/app", "windows", Some("10.0.20348.2113")),
    ] {
        registry
            .push_image(repository, "1", os, "amd64", version)
            .unwrap();
    }
    let passwords = [
        ("alice", "alice-pw-1"),
        ("bob", "bob-pw-1"),
        ("carol", "carol-pw-1"),
        ("dave", "dave-pw-1"),
    ];
    for (user, password) in passwords {
        registry.set_password(user, password).unwrap();
    }
    let host = format!("registry.other.test:{}", registry.port());
    let image = |repository: &str| format!("{host}/{repository}:1");
    let objects = vec![
        pull_secret("team-a", "regcred", &host, "alice", "alice-pw-1"),
        // team-b's Secret holds a password the registry no longer takes.
        pull_secret("team-b", "regcred", &host, "bob", "bob-old-pw"),
        pull_secret("team-d", "builder-pull", &host, "dave", "dave-pw-1"),
        pull_secret("team-e", "regcred", &host, "alice", "alice-pw-1"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "team-d"},
            "imagePullSecrets": [{"name": "builder-pull"}]}),
        // team-f's ServiceAccount names a Secret with a stale password: its
        // failure shows the ServiceAccount's Secret is what reads, not the
        // Docker config (which could read it).
        pull_secret("team-f", "builder-pull", &host, "dave", "dave-old-pw"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "team-f"},
            "imagePullSecrets": [{"name": "builder-pull"}]}),
        workload(
            "Deployment",
            "team-f",
            "f",
            &image("team-f/app"),
            json!({"serviceAccountName": "builder"}),
        ),
        workload(
            "Pod",
            "team-a",
            "a",
            &image("team-a/app"),
            json!({"imagePullSecrets": [{"name": "regcred"}]}),
        ),
        workload(
            "Pod",
            "team-a",
            "shared",
            &image("shared/app"),
            json!({"imagePullSecrets": [{"name": "regcred"}]}),
        ),
        workload(
            "Deployment",
            "team-b",
            "b",
            &image("team-b/app"),
            json!({"imagePullSecrets": [{"name": "regcred"}]}),
        ),
        workload(
            "Deployment",
            "team-b",
            "shared",
            &image("shared/app"),
            json!({"imagePullSecrets": [{"name": "regcred"}]}),
        ),
        // No Secret, the default ServiceAccount has none: the syncer's Docker config.
        workload("Pod", "team-c", "c", &image("team-c/app"), json!({})),
        workload(
            "Deployment",
            "team-d",
            "d",
            &image("team-d/app"),
            json!({"serviceAccountName": "builder"}),
        ),
        workload(
            "Deployment",
            "team-e",
            "e",
            &image("team-e/app"),
            json!({"imagePullSecrets": [{"name": "regcred"}]}),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let docker = dir.path().join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    let carol = base64::engine::general_purpose::STANDARD.encode("carol:carol-pw-1");
    std::fs::write(
        docker.join("config.json"),
        json!({"auths": {&host: {"auth": carol}}}).to_string(),
    )
    .unwrap();

    let run = |api: &FakeApi, pull_secrets: bool| {
        let kubeconfig = dir.path().join(format!("kubeconfig-{pull_secrets}"));
        api.kubeconfig(&kubeconfig).unwrap();
        let mut command = Command::new(&cli);
        command
            .args(["facts", "sync", "--once", "--namespace", "os-placement"])
            .args(["--registry-timeout", "3s", "--retries", "0"])
            .args(["--insecure-registry", &host])
            .env("KUBECONFIG", &kubeconfig)
            .env("DOCKER_CONFIG", &docker)
            .env("AWS_EC2_METADATA_DISABLED", "true");
        if pull_secrets {
            command.arg("--pull-secrets");
        }
        let output = command.output().unwrap();
        let log = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{log}");
        log
    };

    // Negative: without --pull-secrets no Secret is read, and every image
    // is read with the Docker config, team-b's too.
    let plain = FakeApi::start(objects.clone()).unwrap();
    let log = run(&plain, false);
    assert!(
        !plain.seen().iter().any(|s| s.path.contains("/secrets/")),
        "{log}"
    );
    let b = published(&plain)
        .get(&image("team-b/app"))
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(b.contains("linux"), "{b}\n{log}");

    let api = FakeApi::start(objects).unwrap();
    api.forbid("secrets", "team-e");
    let log = run(&api, true);
    let facts = published(&api);
    let text = |repository: &str| {
        facts
            .get(&image(repository))
            .map(Value::to_string)
            .unwrap_or_else(|| panic!("{repository} not published: {facts:?}\n{log}"))
    };
    // Each namespace's image read with its own Secret, or the Docker config.
    assert!(text("team-a/app").contains("10.0.20348.2113"), "{log}");
    assert!(text("team-c/app").contains("10.0.17763.5830"), "{log}");
    assert!(text("team-d/app").contains("10.0.26100.1742"), "{log}");
    let f = text("team-f/app");
    assert!(
        f.contains("check the user name and password in the pull Secret team-f/builder-pull"),
        "{f}"
    );
    // team-b's wrong password is not mended with another namespace's.
    let b = text("team-b/app");
    assert!(b.contains("401 Unauthorized"), "{b}");
    assert!(
        b.contains("check the user name and password in the pull Secret team-b/regcred"),
        "{b}"
    );
    // Read by team-a, refused to team-b: not published as readable.
    let shared = text("shared/app");
    assert!(
        shared.contains(
            "read with the pull credentials of namespace team-a, but not with those of namespace team-b"
        ),
        "{shared}"
    );
    assert!(!shared.contains("10.0.20348"), "{shared}");
    // A namespace whose Secrets may not be read says what to grant.
    let e = text("team-e/app");
    assert!(
        e.contains("the Secret team-e/regcred may not be read (403)"),
        "{e}"
    );
    assert!(e.contains("deploy/facts-sync-pull-secrets.yaml"), "{e}");
    // The Secrets and the ServiceAccount were read one by one, never listed.
    let seen = api.seen();
    let got = |path: &str| seen.iter().any(|s| s.method == "GET" && s.path == path);
    assert!(got("/api/v1/namespaces/team-a/secrets/regcred"));
    assert!(got("/api/v1/namespaces/team-d/serviceaccounts/builder"));
    assert!(got("/api/v1/namespaces/team-d/secrets/builder-pull"));
    assert!(!seen
        .iter()
        .any(|s| s.path.ends_with("/secrets") || s.path == "/api/v1/secrets"));
    // No password anywhere.
    let all_facts = format!("{facts:?}");
    for (_, password) in passwords {
        assert!(!all_facts.contains(password) && !log.contains(password));
    }
    for stale in ["bob-old-pw", "dave-old-pw"] {
        assert!(!log.contains(stale) && !all_facts.contains(stale));
    }
}

/// The running syncer: an image a new namespace starts pulling is read
/// again with that namespace's Secret at once, and its facts withdrawn
/// when that Secret cannot read it; back when the namespace stops using
/// it. Lookups with a pull Secret are counted as such in `/metrics`.
#[test]
fn a_namespace_that_starts_pulling_an_image_has_it_read_again_with_its_own_secret() {
    let Some((cli, registry)) = prepare() else {
        return;
    };
    registry
        .push_image(
            "shared/app",
            "1",
            "windows",
            "amd64",
            Some("10.0.20348.2113"),
        )
        .unwrap();
    registry.set_password("alice", "alice-pw-1").unwrap();
    registry.set_password("bob", "bob-pw-1").unwrap();
    let host = format!("registry.other.test:{}", registry.port());
    let image = format!("{host}/shared/app:1");
    let secrets = json!({"imagePullSecrets": [{"name": "regcred"}]});
    let api = FakeApi::start(vec![
        pull_secret("team-a", "regcred", &host, "alice", "alice-pw-1"),
        pull_secret("team-b", "regcred", &host, "bob", "bob-old-pw"),
        workload("Deployment", "team-a", "a", &image, secrets.clone()),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let replica = super::syncer::Replica::spawn_with(
        &cli,
        &api,
        dir.path(),
        "syncer-a",
        &["--pull-secrets", "--insecure-registry", &host],
    );
    let facts = || {
        published(&api)
            .get(&image)
            .map(Value::to_string)
            .unwrap_or_default()
    };
    let within = std::time::Duration::from_secs(20);
    let read = super::syncer::wait_for(within, || facts().contains("10.0.20348.2113"));
    assert!(read.is_some(), "{}\n{}", facts(), replica.logged());
    let counted = replica
        .metric("os_placement_sync_lookups_by_credentials_total{credentials=\"pull-secret\"}")
        .unwrap_or_default();
    assert_eq!(counted, "1", "{}", replica.logged());

    // team-b starts pulling it with a Secret that cannot: withdrawn, team-b named.
    api.put(workload("Deployment", "team-b", "b", &image, secrets));
    let withdrawn = super::syncer::wait_for(within, || {
        facts().contains("read with the pull credentials of namespace team-a, but not with those of namespace team-b")
    });
    assert!(withdrawn.is_some(), "{}\n{}", facts(), replica.logged());
    // team-b moves to another image: read with team-a's alone again.
    api.put(workload(
        "Deployment",
        "team-b",
        "b",
        &format!("{host}/other/app:1"),
        json!({}),
    ));
    let back = super::syncer::wait_for(within, || facts().contains("10.0.20348.2113"));
    assert!(back.is_some(), "{}\n{}", facts(), replica.logged());
    assert!(!replica.logged().contains("bob-old-pw") && !facts().contains("alice-pw-1"));
}
