//! Signing end to end, checked by the real verifiers: keys from `cargo xtask
//! keypair`, artifacts pushed to a local registry and signed with `cargo
//! xtask sign`; `kwctl verify -k cosign.pub` accepts the signed one and
//! refuses an unsigned one and one signed with another key; policy-server
//! with a `pubKey` verification config serves the signed module and refuses
//! to start with the unsigned one. Both verify offline with Sigstore's trust
//! root from the PyPI `sigstore` package (`make tools` writes it).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use xtask::local::external;
use xtask::local::policy_server::PolicyServer;
use xtask::local::registry::LocalRegistry;

use super::support::{
    insecure, kwctl, policy_server, registry, run_kwctl, sources_file, stderr, write_annotated,
    xtask_ok, xtask_with_env,
};

const PASSWORD: &str = "correct horse battery staple";

/// The ClientTrustConfig `make tools` writes: `$SIGSTORE_TRUST_CONFIG`, else
/// `target/tools/sigstore-trust-config.json`.
fn trust_config() -> Option<PathBuf> {
    let path = std::env::var_os("SIGSTORE_TRUST_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            xtask::local::repo_root().join("target/tools/sigstore-trust-config.json")
        });
    if path.is_file() {
        return Some(path);
    }
    external::missing(
        &path.display().to_string(),
        "`make tools` writes it from the PyPI package sigstore",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A key pair made by `cargo xtask keypair` in `dir`; returns (cosign.key, cosign.pub).
fn keypair(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let printed = xtask_ok(
        &["keypair", "--output-dir", dir.to_str().unwrap()],
        &[("COSIGN_PASSWORD", PASSWORD)],
    );
    assert_eq!(printed.lines().count(), 2, "{printed}");
    (dir.join("cosign.key"), dir.join("cosign.pub"))
}

/// Pushes the annotated module to `path` in `registry`; returns its reference.
fn push(registry: &LocalRegistry, wasm: &Path, path: &str) -> String {
    let reference = registry.reference(path);
    xtask_ok(&["push", wasm.to_str().unwrap(), &reference], &[]);
    reference
}

fn sign(reference: &str, key: &Path) -> String {
    xtask_ok(
        &["sign", reference, "--key", key.to_str().unwrap()],
        &[("COSIGN_PASSWORD", PASSWORD)],
    )
}

/// The three artifacts: signed with key A, unsigned, signed with key B; and
/// key A's public key.
struct Artifacts {
    signed: String,
    unsigned: String,
    other_key: String,
    public_key: PathBuf,
}

fn artifacts(registry: &LocalRegistry, dir: &Path) -> Artifacts {
    let wasm = write_annotated(dir);
    let (key, public_key) = keypair(&dir.join("a"));
    let (other, _) = keypair(&dir.join("b"));
    // A signature belongs to a manifest digest in one repository: each
    // artifact gets its own repository.
    let signed = push(registry, &wasm, "os-placement/signed:v0.1.0");
    let printed = sign(&signed, &key);
    let (_, digest) = registry.manifest("os-placement/signed", "v0.1.0").unwrap();
    assert!(printed.contains(&digest), "{printed}");
    let signature_tag = format!("{}.sig", digest.replace(':', "-"));
    let (signature, _) = registry
        .manifest("os-placement/signed", &signature_tag)
        .unwrap();
    assert_eq!(
        signature["layers"][0]["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    assert!(
        signature["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"].is_string()
    );
    let other_key = push(registry, &wasm, "os-placement/other:v0.1.0");
    sign(&other_key, &other);
    let unsigned = push(registry, &wasm, "os-placement/unsigned:v0.1.0");
    Artifacts {
        signed,
        unsigned,
        other_key,
        public_key,
    }
}

#[test]
fn kwctl_verify_accepts_only_what_the_key_signed() {
    let (Some(kwctl), Some(trust)) = (kwctl(), trust_config()) else {
        return;
    };
    let Some(registry) = registry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let artifacts = artifacts(&registry, dir.path());
    let sources = sources_file(dir.path(), &registry);
    let verify = |reference: &str| {
        run_kwctl(
            &kwctl,
            dir.path(),
            &[
                "verify",
                "--sigstore-trust-config",
                trust.to_str().unwrap(),
                "--sources-path",
                sources.to_str().unwrap(),
                "-k",
                artifacts.public_key.to_str().unwrap(),
                reference,
            ],
        )
    };
    let signed = verify(&artifacts.signed);
    assert!(
        signed.status.success(),
        "signed artifact refused: {}",
        stderr(&signed)
    );
    for (refused, why) in [
        (&artifacts.unsigned, "no signatures found"),
        (&artifacts.other_key, "missing signatures"),
    ] {
        let output = verify(refused);
        assert!(!output.status.success(), "{refused} passed kwctl verify");
        assert!(
            stderr(&output).contains(why),
            "{refused}: {}",
            stderr(&output)
        );
    }
}

/// policy-server's verification config: every policy must be signed with the key.
fn verification_config(dir: &Path, public_key: &Path) -> PathBuf {
    let key = std::fs::read_to_string(public_key).unwrap();
    let path = dir.join("verification.yml");
    let config = json!({"apiVersion": "v1", "allOf": [{"kind": "pubKey", "key": key}]});
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    path
}

fn serve(
    binary: &Path,
    dir: &Path,
    module: &str,
    registry: &LocalRegistry,
    artifacts: &Artifacts,
    trust: &Path,
) -> PolicyServer {
    std::fs::create_dir_all(dir).unwrap();
    let policies =
        json!({"placement": {"module": module, "settings": {}, "allowedToMutate": true}});
    let verification = verification_config(dir, &artifacts.public_key);
    let extra = [
        OsStr::new("--verification-path"),
        verification.as_os_str(),
        OsStr::new("--sigstore-trust-config"),
        trust.as_os_str(),
    ];
    PolicyServer::spawn_with(binary, dir, &policies, Some(&insecure(registry)), &extra).unwrap()
}

#[test]
fn policy_server_with_a_pub_key_config_serves_only_the_signed_module() {
    let (Some(binary), Some(trust)) = (policy_server(), trust_config()) else {
        return;
    };
    let Some(registry) = registry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let artifacts = artifacts(&registry, dir.path());

    let mut server = serve(
        &binary,
        &dir.path().join("signed"),
        &artifacts.signed,
        &registry,
        &artifacts,
        &trust,
    );
    server
        .wait_ready(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}"));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "n"},
                     "spec": {"containers": [{"name": "a", "image": "alpine:3.20"}]}});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE", "userInfo": {"username": "test"}, "namespace": "n", "name": "a", "object": pod}});
    let answer = server.validate("placement", &review).unwrap();
    assert_eq!(answer["response"]["uid"], "u-1");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(
        server.logs().contains("verified-signatures"),
        "{}",
        server.logs()
    );
    drop(server);

    for refused in [&artifacts.unsigned, &artifacts.other_key] {
        let name = refused.rsplit('/').next().unwrap().replace(':', "-");
        let mut server = serve(
            &binary,
            &dir.path().join(name),
            refused,
            &registry,
            &artifacts,
            &trust,
        );
        let status = server.wait_exit(Duration::from_secs(120));
        assert!(
            status.is_some_and(|s| !s.success()),
            "policy-server started with {refused}:\n{}",
            server.logs()
        );
        assert!(
            server.logs().contains("signatures"),
            "{refused}:\n{}",
            server.logs()
        );
    }
}

#[test]
fn sign_without_a_password_or_with_a_wrong_one_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (key, _) = keypair(dir.path());
    let reference = "registry://127.0.0.1:1/os-placement/policy:v0.1.0";
    let output = xtask_with_env(&["sign", reference, "--key", key.to_str().unwrap()], &[]);
    // The variable may be set in the caller's environment: only check it is read.
    if std::env::var_os("COSIGN_PASSWORD").is_none() {
        assert_eq!(output.status.code(), Some(1));
        assert!(
            stderr(&output).contains("COSIGN_PASSWORD is not set"),
            "{}",
            stderr(&output)
        );
    }
    let output = xtask_with_env(
        &["sign", reference, "--key", key.to_str().unwrap()],
        &[("COSIGN_PASSWORD", "wrong")],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("cannot decrypt the private key"),
        "{}",
        stderr(&output)
    );
    let output = xtask_with_env(
        &["keypair", "--output-dir", dir.path().to_str().unwrap()],
        &[("COSIGN_PASSWORD", PASSWORD)],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("exists"), "{}", stderr(&output));
}
