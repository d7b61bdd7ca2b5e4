//! Interop with the real kwctl: it pulls what we push and we pull what it
//! pushes, with the same manifest.

use super::support::{
    annotated_bytes, assert_success, kwctl, registry, run_kwctl, sources_file, write_annotated,
    xtask_ok,
};

#[test]
fn kwctl_pulls_what_we_push_and_we_pull_what_kwctl_pushes() {
    let Some(kwctl) = kwctl() else { return };
    let Some(registry) = registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let sources = sources_file(dir.path(), &registry);
    let sources = sources.to_str().unwrap();

    let ours = registry.reference("os-placement/ours:v0.1.0");
    xtask_ok(&["push", wasm.to_str().unwrap(), &ours], &[]);
    let kwctl_out = dir.path().join("kwctl-pulled.wasm");
    let pulled = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "pull",
            "--sources-path",
            sources,
            &ours,
            "--output-path",
            kwctl_out.to_str().unwrap(),
        ],
    );
    assert_success("kwctl pull", &pulled);
    assert_eq!(std::fs::read(&kwctl_out).unwrap(), annotated_bytes());

    let theirs = registry.reference("os-placement/theirs:v0.1.0");
    let pushed = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "push",
            "--sources-path",
            sources,
            wasm.to_str().unwrap(),
            &theirs,
        ],
    );
    assert_success("kwctl push", &pushed);
    let our_out = dir.path().join("our-pulled.wasm");
    xtask_ok(
        &["pull", &theirs, "--output-path", our_out.to_str().unwrap()],
        &[],
    );
    assert_eq!(std::fs::read(&our_out).unwrap(), annotated_bytes());

    // The same module pushed by both tools: the same manifest, field by field.
    let (our_manifest, our_digest) = registry.manifest("os-placement/ours", "v0.1.0").unwrap();
    let (kwctl_manifest, kwctl_digest) =
        registry.manifest("os-placement/theirs", "v0.1.0").unwrap();
    for field in [
        "schemaVersion",
        "mediaType",
        "config",
        "layers",
        "annotations",
        "artifactType",
    ] {
        assert_eq!(
            our_manifest.get(field),
            kwctl_manifest.get(field),
            "{field}"
        );
    }
    assert_eq!(our_manifest, kwctl_manifest);
    assert_eq!(our_digest, kwctl_digest);
}
