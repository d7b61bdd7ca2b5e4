//! `--lookup` against a real registry process (Debian's docker-registry on
//! 127.0.0.1): the images the objects need are read from their indexes
//! (OCI image-index `platform`: `os`, `os.version`, `architecture`) and
//! decide the answer as published image facts do in the cluster; a
//! registry that cannot be reached gives the policy's warning naming the
//! image, not a failed command; a `--facts` file keeps the last word.

use os_placement_e2e::images::{push_image, Format, ImagePlatform, TestImage};
use os_placement_e2e::registry::LocalRegistry;
use serde_json::Value;

use crate::common::{code, run_in, stderr, stdout};

fn windows_2022_only() -> TestImage {
    TestImage {
        name: "corp/billing:4.2".to_owned(),
        platforms: vec![ImagePlatform {
            os: "windows".to_owned(),
            os_version: Some("10.0.20348.2700".to_owned()),
            architecture: "amd64".to_owned(),
        }],
        single: false,
        format: Format::Oci,
    }
}

fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: billing}}\nspec:\n  selector: {{matchLabels: {{app: billing}}}}\n  template:\n    metadata: {{labels: {{app: billing}}}}\n    spec:\n      containers: [{{name: billing, image: \"{image}\"}}]\n"
    )
}

/// `check -o json --preset eks` of one manifest, with `extra` arguments.
fn check_manifest(dir: &std::path::Path, manifest: &str, extra: &[&str]) -> (i32, Value, String) {
    std::fs::write(dir.join("billing.yaml"), manifest).unwrap();
    let mut args = vec!["check", "billing.yaml", "-o", "json", "--preset", "eks"];
    args.extend_from_slice(extra);
    let output = run_in(dir, &args, None);
    let report = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&output), stderr(&output)));
    (code(&output), report, stderr(&output))
}

#[test]
fn lookup_reads_the_index_and_a_failed_lookup_is_a_warning() {
    let Some(registry) = LocalRegistry::start().unwrap_or_else(|e| panic!("{e:#}")) else {
        return;
    };
    let pushed = push_image(&registry.host(), &windows_2022_only()).unwrap();
    let dir = std::env::temp_dir().join(format!("os-placement-lookup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = registry.host();
    let manifest = deployment(&pushed.reference);

    let (exit, report, said) =
        check_manifest(&dir, &manifest, &["--lookup", "--insecure-registry", &host]);
    let result = &report["results"][0];
    assert_eq!(
        (exit, result["verdict"].as_str()),
        (0, Some("patched")),
        "{report}"
    );
    let patch = result["patch"].to_string();
    assert!(
        patch.contains("windows") && patch.contains("10.0.20348"),
        "{patch}"
    );
    assert!(
        said.contains("looked up 1 image in their registries (0 failed)"),
        "{said}"
    );

    // Without --lookup the reference says nothing: the pod is left alone.
    let (_, report, _) = check_manifest(&dir, &manifest, &[]);
    assert_eq!(
        report["results"][0]["patch"],
        Value::Array(Vec::new()),
        "{report}"
    );

    // A facts file that holds the image (here: a 2019 build) keeps the last
    // word: it is not looked up.
    let facts = format!(
        "images:\n  \"{}\":\n    platforms: [{{os: windows, architecture: amd64, osVersion: 10.0.17763.1}}]\n",
        pushed.reference
    );
    std::fs::write(dir.join("facts.yaml"), facts).unwrap();
    let (_, report, said) = check_manifest(
        &dir,
        &manifest,
        &[
            "--lookup",
            "--insecure-registry",
            &host,
            "--facts",
            "facts.yaml",
        ],
    );
    let patch = report["results"][0]["patch"].to_string();
    assert!(
        patch.contains("10.0.17763") && !patch.contains("10.0.20348"),
        "{patch}"
    );
    assert!(!said.contains("looked up"), "{said}");

    // Nothing listens on the port: the lookup fails fast and the object
    // is answered with the policy's warning naming the image.
    let port = os_placement_e2e::registry::free_port().unwrap();
    let gone = format!("127.0.0.1:{port}/corp/app:1");
    let (exit, report, said) = check_manifest(
        &dir,
        &deployment(&gone),
        &[
            "--lookup",
            "--insecure-registry",
            &format!("127.0.0.1:{port}"),
            "--retries",
            "0",
        ],
    );
    assert_eq!(exit, 0, "{report}");
    // As the policy says it once the syncer has published the failure.
    let warning = &report["results"][0]["warnings"][0];
    assert_eq!(warning["code"], "lookup-failed", "{report}");
    assert_eq!(warning["path"], "spec.template.spec.containers[0].image");
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("the syncer's lookup of {gone} failed")),
        "{message}"
    );
    assert_eq!(
        warning["fix"],
        "check that the syncer may reach the registry"
    );
    assert!(said.contains("(1 failed)"), "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}
