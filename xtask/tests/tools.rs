//! What the release ships, checked by the tools of its ecosystems: the SBOMs
//! of the module and of the CLI (`make sbom`, `make image-sbom`) through the
//! SPDX project's validator, and the workflows through actionlint, both from
//! the pinned venv (`make tools`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use xtask::local::{external, repo_root};

/// A program of the venv `make tools` makes (`$VENV`, else `target/venv`).
fn venv_tool(name: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv"));
    let path = venv.join("bin").join(name);
    if external::executable(&path) {
        return Some(path);
    }
    external::missing(&path.display().to_string(), "`make tools` installs it")
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An SBOM `make <target>` writes: `$<variable>`, else `name` at the root.
fn sbom_path(variable: &str, name: &str, target: &str) -> Option<PathBuf> {
    let path = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(name));
    if path.is_file() {
        return Some(path);
    }
    external::missing(
        &path.display().to_string(),
        &format!("`make {target}` writes it"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs pyspdxtools over `sbom` and returns the document, which must be SPDX 2.3.
fn validated(validator: &std::path::Path, sbom: &std::path::Path) -> Value {
    let output = Command::new(validator)
        .arg("-i")
        .arg(sbom)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && !said.contains("must"),
        "pyspdxtools refused {}:\n{said}",
        sbom.display()
    );
    let document: Value = serde_json::from_slice(&std::fs::read(sbom).unwrap()).unwrap();
    assert_eq!(document["spdxVersion"], "SPDX-2.3");
    document
}

/// Each of `names` is a package of `document` at its Cargo.lock version, with a licence.
fn lists_locked(document: &Value, names: &[&str]) {
    let packages = document["packages"].as_array().unwrap();
    for name in names {
        let package = packages
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap_or_else(|| panic!("{name} not in the SBOM"));
        assert_eq!(
            package["versionInfo"].as_str(),
            Some(locked_version(name).as_str()),
            "{name}"
        );
        let licence = package["licenseDeclared"].as_str().unwrap_or_default();
        assert!(
            licence.contains("Apache-2.0") || licence.contains("MIT") || licence.contains("ISC"),
            "{name}: {licence:?}"
        );
    }
}

/// `name`'s version in Cargo.lock (the only one of that name).
fn locked_version(name: &str) -> String {
    let lock = std::fs::read_to_string(repo_root().join("Cargo.lock")).unwrap();
    let versions: Vec<&str> = lock
        .split("[[package]]")
        .filter(|entry| entry.contains(&format!("name = \"{name}\"\n")))
        .filter_map(|entry| entry.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"'))
        .collect();
    assert_eq!(versions.len(), 1, "{name}: {versions:?}");
    versions[0].to_owned()
}

#[test]
fn sbom_is_valid_spdx_listing_the_module_crates() {
    let (Some(validator), Some(sbom)) = (
        venv_tool("pyspdxtools"),
        sbom_path("SBOM", "policy-sbom.spdx.json", "sbom"),
    ) else {
        return;
    };
    let document = validated(&validator, &sbom);
    assert!(sbom.file_name().unwrap().to_string_lossy().contains("sbom"));
    let packages = document["packages"].as_array().unwrap();
    lists_locked(
        &document,
        &[
            "os-placement-policy",
            "os-placement-core",
            "kubewarden-policy-sdk",
            "wapc-guest",
            "serde_json",
        ],
    );
    let described = &document["relationships"][0];
    assert_eq!(described["relationshipType"], "DESCRIBES");
    // Only what the module is built from: no host crates (the e2e host, the signing tools).
    for host_only in ["wasmtime", "sigstore", "os-placement-e2e"] {
        assert!(
            !packages.iter().any(|p| p["name"] == host_only),
            "{host_only} in the SBOM"
        );
    }
}

/// The SBOM attested to the CLI's image describes the CLI and what it is built from.
#[test]
fn image_sbom_is_valid_spdx_listing_the_cli_crates() {
    let (Some(validator), Some(sbom)) = (
        venv_tool("pyspdxtools"),
        sbom_path("IMAGE_SBOM", "os-placement-sbom.spdx.json", "image-sbom"),
    ) else {
        return;
    };
    let document = validated(&validator, &sbom);
    lists_locked(
        &document,
        &[
            "os-placement-cli",
            "os-placement-core",
            "os-placement-door",
            "kube-client",
            "rustls",
            "ring",
        ],
    );
    let described = &document["relationships"][0];
    assert_eq!(described["relationshipType"], "DESCRIBES");
    let packages = document["packages"].as_array().unwrap();
    let cli = packages
        .iter()
        .find(|p| p["name"] == "os-placement-cli")
        .unwrap();
    assert_eq!(described["relatedSpdxElement"], cli["SPDXID"]);
    // Not the test host's crates, nor the chores'.
    for other in [
        "wasmtime",
        "sigstore",
        "os-placement-e2e",
        "os-placement-playground",
    ] {
        assert!(
            !packages.iter().any(|p| p["name"] == other),
            "{other} in the SBOM"
        );
    }
}

fn workflows() -> Vec<PathBuf> {
    let dir = repo_root().join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn workflows_pass_actionlint() {
    let Some(actionlint) = venv_tool("actionlint") else {
        return;
    };
    let files = workflows();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["ci.yml", "pages.yml", "release.yml"]);
    // shellcheck off: the same result whether or not it is installed.
    let output = Command::new(&actionlint)
        .arg("-shellcheck=")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Actions are pinned by commit, as Kubewarden pins them.
#[test]
fn actions_are_pinned_by_commit() {
    let mut uses = 0;
    for file in workflows() {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text
            .lines()
            .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("uses: "))
        {
            uses += 1;
            let pin = line.split('@').nth(1).unwrap_or_default();
            let sha = pin.split_whitespace().next().unwrap_or_default();
            assert!(
                sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                "{}: {line}",
                file.display()
            );
        }
    }
    assert!(uses >= 8, "{uses}");
}

/// The release follows Kubewarden's sequence.
#[test]
fn release_workflow_signs_and_publishes_what_kubewarden_does() {
    let text = std::fs::read_to_string(repo_root().join(".github/workflows/release.yml")).unwrap();
    let release = xtask::yaml::parse("release.yml", &text).unwrap();
    assert_eq!(release["on"]["push"]["tags"][0], "v*");
    for step in [
        "make policy.wasm annotated-policy.wasm",
        "make e2e-tests",
        "ghcr.io/${{ github.repository_owner }}/policies/os-placement",
        "--new-bundle-format=false",
        "--new-bundle-format=true",
        "cosign sign-blob",
        "SHA256SUMS",
        "checkout --orphan artifacthub",
        "io.kubewarden.policy.version",
    ] {
        assert!(text.contains(step), "release.yml lacks {step:?}");
    }
    assert!(text.contains("tag=latest"), "main publishes :latest");
}
