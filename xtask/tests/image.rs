//! The CLI's container image (`make image`, `$OS_PLACEMENT_IMAGE`, else
//! target/os-placement-image) pushed by `cargo xtask push-image` to a real
//! registry on 127.0.0.1 and read back by skopeo, a client of its own: an
//! index of linux/amd64 and linux/arm64, each a non-root config and one
//! layer holding the static binary and the CA bundle only; the amd64 binary
//! runs here.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use xtask::image::{check_binary, read_layout, sha256_digest, Platform};
use xtask::local::registry::{free_port, LocalRegistry};
use xtask::local::{external, repo_root};

use super::support::{assert_success, metadata_yml, registry, stderr, xtask, xtask_ok};

const REPOSITORY: &str = "os-placement/os-placement";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Every entry of a layer, directories with a trailing slash.
const FILES: [&str; 5] = [
    "etc/",
    "etc/ssl/",
    "etc/ssl/certs/",
    "etc/ssl/certs/ca-certificates.crt",
    "os-placement",
];

/// The layout `make image` writes, or `None` after a visible skip.
fn image_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OS_PLACEMENT_IMAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/os-placement-image"));
    if dir.join("index.json").is_file() {
        return Some(dir);
    }
    external::missing(&dir.display().to_string(), "`make image` writes it")
        .unwrap_or_else(|e| panic!("{e}"))
}

fn skopeo() -> Option<PathBuf> {
    external::on_path(
        "skopeo",
        "install the Debian package skopeo (`make deps` does)",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn run(program: &Path, args: &[&str]) -> Vec<u8> {
    let output = Command::new(program).args(args).output().unwrap();
    assert_success(&format!("{} {args:?}", program.display()), &output);
    output.stdout
}

/// Pushes the layout and returns the printed reference and the registry's repository address.
fn push(layout: &Path, registry: &LocalRegistry) -> (String, String) {
    let reference = registry.reference(&format!("{REPOSITORY}:v0.1.0"));
    let printed = xtask_ok(&["push-image", layout.to_str().unwrap(), &reference], &[]);
    (
        printed,
        format!("docker://{}/{REPOSITORY}:v0.1.0", registry.host()),
    )
}

/// An OCI layout as skopeo wrote it: blobs by digest.
struct Pulled(PathBuf);

impl Pulled {
    fn blob(&self, descriptor: &Value) -> Vec<u8> {
        let digest = descriptor["digest"].as_str().unwrap();
        let bytes = std::fs::read(
            self.0
                .join("blobs/sha256")
                .join(digest.strip_prefix("sha256:").unwrap()),
        )
        .unwrap();
        assert_eq!(sha256_digest(&bytes), digest);
        assert_eq!(descriptor["size"], bytes.len());
        bytes
    }

    fn json(&self, descriptor: &Value) -> Value {
        serde_json::from_slice(&self.blob(descriptor)).unwrap()
    }
}

/// An entry of a layer.
struct File {
    /// Directories end with `/`.
    path: String,
    mode: u32,
    uid: u64,
    contents: Vec<u8>,
}

/// The tar in a gzip layer, and its entries.
fn entries(gzip: &[u8]) -> (Vec<u8>, Vec<File>) {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(gzip)
        .read_to_end(&mut tar)
        .unwrap();
    let mut archive = tar::Archive::new(tar.as_slice());
    let listed = archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let header = entry.header().clone();
            let path = header.path().unwrap().display().to_string();
            assert_eq!(header.entry_type().is_dir(), path.ends_with('/'), "{path}");
            let mut contents = Vec::new();
            entry.read_to_end(&mut contents).unwrap();
            File {
                path,
                mode: header.mode().unwrap(),
                uid: header.uid().unwrap(),
                contents,
            }
        })
        .collect();
    (tar, listed)
}

/// One platform of the pulled image: the config's settings, the layer's
/// files, the binary's machine; returns the binary.
fn check_platform(pulled: &Pulled, entry: &Value) -> Vec<u8> {
    let architecture = entry["platform"]["architecture"].as_str().unwrap();
    let manifest = pulled.json(entry);
    let config = pulled.json(&manifest["config"]);
    assert_eq!(config["architecture"], architecture);
    assert_eq!(config["os"], "linux");
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/os-placement"])
    );
    let metadata = metadata_yml();
    let labels = &config["config"]["Labels"];
    for (label, value) in [
        ("licenses", "Apache-2.0"),
        ("title", "os-placement"),
        (
            "version",
            metadata["annotations"]["io.kubewarden.policy.version"]
                .as_str()
                .unwrap(),
        ),
        (
            "source",
            metadata["annotations"]["io.kubewarden.policy.source"]
                .as_str()
                .unwrap(),
        ),
    ] {
        let key = format!("org.opencontainers.image.{label}");
        assert_eq!(labels[&key], value, "{key}");
        assert_eq!(manifest["annotations"][&key], value, "{key}");
    }
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let (tar, files) = entries(&pulled.blob(&layers[0]));
    assert_eq!(config["rootfs"]["diff_ids"][0], sha256_digest(&tar));
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, FILES, "{architecture}: no shell, nothing else");
    assert_eq!((files[3].mode, files[3].uid), (0o644, 0));
    let certificates = String::from_utf8_lossy(&files[3].contents)
        .matches("BEGIN CERTIFICATE")
        .count();
    assert!(certificates > 100, "{certificates} certificates");
    let File {
        mode,
        uid,
        contents: binary,
        ..
    } = files.into_iter().nth(4).unwrap();
    assert_eq!((mode, uid), (0o755, 0));
    let platform = Platform::parse(&format!("linux/{architecture}")).unwrap();
    check_binary(&platform, &binary).unwrap();
    binary
}

#[test]
fn pushed_image_pulls_back_as_two_static_platforms() {
    let (Some(layout), Some(skopeo), Some(registry)) = (image_dir(), skopeo(), registry()) else {
        return;
    };
    let (printed, address) = push(&layout, &registry);
    let built = read_layout(&layout).unwrap().index.digest();
    assert!(printed.ends_with(&format!(":v0.1.0@{built}")), "{printed}");

    let raw = run(
        &skopeo,
        &["inspect", "--raw", "--tls-verify=false", &address],
    );
    assert_eq!(
        sha256_digest(&raw),
        built,
        "the registry serves the index as built"
    );
    let index: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(index["mediaType"], INDEX);
    let platforms: BTreeSet<String> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap(),
                m["platform"]["architecture"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        platforms,
        BTreeSet::from(["linux/amd64".to_owned(), "linux/arm64".to_owned()])
    );
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2);

    let dir = tempfile::tempdir().unwrap();
    let target = format!("oci:{}:v0.1.0", dir.path().join("pulled").display());
    run(
        &skopeo,
        &["copy", "--all", "--src-tls-verify=false", &address, &target],
    );
    let pulled = Pulled(dir.path().join("pulled"));
    let top: Value =
        serde_json::from_slice(&std::fs::read(pulled.0.join("index.json")).unwrap()).unwrap();
    assert_eq!(top["manifests"][0]["digest"], built.as_str());
    let index = pulled.json(&top["manifests"][0]);
    let mut binaries = Vec::new();
    for entry in index["manifests"].as_array().unwrap() {
        binaries.push((
            entry["platform"]["architecture"].clone(),
            check_platform(&pulled, entry),
        ));
    }

    // The amd64 binary from the pulled layer runs here: it is static.
    let (_, amd64) = binaries.iter().find(|(a, _)| a == "amd64").unwrap();
    let binary = dir.path().join("os-placement");
    std::fs::write(&binary, amd64).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let help = String::from_utf8(run(&binary, &["facts", "sync", "--help"])).unwrap();
    assert!(help.contains("Usage: os-placement facts sync"), "{help}");
}

/// The chore, given what the built image holds (binaries, CA bundle, time,
/// revision), writes the same layout again, byte for byte.
#[test]
fn image_is_reproducible() {
    let Some(layout) = image_dir() else { return };
    let built = read_layout(&layout).unwrap();
    let image = Pulled(layout.clone());
    let dir = tempfile::tempdir().unwrap();
    let metadata = repo_root().join("metadata.yml");
    let mut args = vec![
        "image".to_owned(),
        "-m".to_owned(),
        metadata.display().to_string(),
    ];
    let index: Value = serde_json::from_slice(&built.index.bytes).unwrap();
    let mut labels = Value::Null;
    for entry in index["manifests"].as_array().unwrap() {
        let architecture = entry["platform"]["architecture"].as_str().unwrap();
        let manifest = image.json(entry);
        labels = image.json(&manifest["config"])["config"]["Labels"].clone();
        let (_, files) = entries(&image.blob(&manifest["layers"][0]));
        let [.., bundle, binary] = files.as_slice() else {
            panic!("{architecture}: {} files", files.len())
        };
        let (bundle_path, binary_path) = (dir.path().join("ca.crt"), dir.path().join(architecture));
        std::fs::write(&bundle_path, &bundle.contents).unwrap();
        std::fs::write(&binary_path, &binary.contents).unwrap();
        args.extend([
            "--ca-bundle".to_owned(),
            bundle_path.display().to_string(),
            "--binary".to_owned(),
            format!("linux/{architecture}={}", binary_path.display()),
        ]);
    }
    let created = labels["org.opencontainers.image.created"].as_str().unwrap();
    let epoch = chrono::DateTime::parse_from_rfc3339(created)
        .unwrap()
        .timestamp();
    args.extend(["--source-date-epoch".to_owned(), epoch.to_string()]);
    if let Some(revision) = labels["org.opencontainers.image.revision"].as_str() {
        args.extend(["--revision".to_owned(), revision.to_owned()]);
    }
    let again = dir.path().join("again");
    args.extend(["--output-dir".to_owned(), again.display().to_string()]);
    xtask_ok(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    assert_eq!(read_layout(&again).unwrap(), built);
}

#[test]
fn push_to_a_registry_that_is_down_fails_cleanly() {
    let Some(layout) = image_dir() else { return };
    let port = free_port().unwrap();
    let output = xtask(&[
        "push-image",
        layout.to_str().unwrap(),
        &format!("registry://127.0.0.1:{port}/{REPOSITORY}:v0.1.0"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("127.0.0.1:{port}/{REPOSITORY}:v0.1.0")),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
}

#[test]
fn push_of_a_directory_that_is_no_image_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let output = xtask(&[
        "push-image",
        dir.path().to_str().unwrap(),
        "registry://127.0.0.1:1/p:t",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("index.json"),
        "{}",
        stderr(&output)
    );
}

/// The release pushes the image where the syncer's manifests pull it from,
/// signs it and attests its SBOM.
#[test]
fn release_publishes_the_image_the_manifests_run() {
    let text = std::fs::read_to_string(repo_root().join(".github/workflows/release.yml")).unwrap();
    let release = xtask::yaml::parse("release.yml", &text).unwrap();
    let target = release["jobs"]["release"]["env"]["IMAGE_TARGET"]
        .as_str()
        .unwrap();
    assert_eq!(
        target,
        "ghcr.io/${{ github.repository_owner }}/os-placement"
    );
    for step in [
        r#"make -s push-image REGISTRY="$IMAGE_TARGET""#,
        "cosign sign --yes --recursive",
        "make image-sbom",
        "cosign attest --yes --type spdxjson --predicate os-placement-sbom.spdx.json",
    ] {
        assert!(text.contains(step), "release.yml lacks {step:?}");
    }
    // The owner of the released repository, and the tag of this version.
    let metadata = metadata_yml();
    let source = metadata["annotations"]["io.kubewarden.policy.source"]
        .as_str()
        .unwrap();
    let owner = source
        .trim_start_matches("https://github.com/")
        .split('/')
        .next()
        .unwrap();
    let version = metadata["annotations"]["io.kubewarden.policy.version"]
        .as_str()
        .unwrap();
    let released = format!("ghcr.io/{owner}/os-placement:v{version}");
    for manifest in ["deploy/facts-sync.yaml", "deploy/facts-sync-cronjob.yaml"] {
        let text = std::fs::read_to_string(repo_root().join(manifest)).unwrap();
        let images: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("image: "))
            .collect();
        assert_eq!(images, [released.as_str()], "{manifest}");
    }
}
