//! Cases for mutants cargo-mutants found uncaught in the rule modules
//! (see README, Development), each named after the mutated code.

use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::{Facts, Settings};
use os_placement_core::{ImageFacts, Platform};
use serde_json::json;

/// affinity.rs `expression_placement`: `NotIn` reads as "every node but
/// those" only for labels whose values map exactly to nodes (OS, build).
/// `kubernetes.azure.com/os-sku NotIn [Windows2019]` does not exclude the
/// 2019 nodes the policy knows of (a node may lack the label, or carry
/// another SKU name), so a 2019 image beside it is no conflict; with
/// `kubernetes.io/os NotIn [windows]` it is.
/// Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity
/// (NotIn matches nodes without the label).
#[test]
fn affinity_not_in_is_exact_only_for_os_and_build_labels() {
    let spec = |key: &str, value: &str| {
        pod(json!({
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2019"}],
            "affinity": required_affinity(json!([{"key": key, "operator": "NotIn", "values": [value]}])),
        }))
    };
    let sku = create(&spec("kubernetes.azure.com/os-sku", "Windows2019"), &eks());
    assert!(sku.accepted, "{:?}", sku.message());
    let os = create(&spec("kubernetes.io/os", "windows"), &eks());
    assert_rejected_with(&os, "os-conflict");
    assert_eq!(codes(&os), vec!["os-conflict"], "{:?}", os.message());
}

/// affinity.rs `describe`: a conflict with required node affinity quotes
/// the expressions that bear on placement (OS and build labels), so the
/// user sees which one to change; others are left out.
#[test]
fn affinity_conflict_message_quotes_the_placement_expression() {
    let object = pod(json!({
        "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2019"}],
        "affinity": required_affinity(json!([
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "disktype", "operator": "In", "values": ["ssd"]}])),
    }));
    let d = create(&object, &eks());
    assert_rejected_with(&d, "os-conflict");
    let m = message(&d);
    assert!(m.contains("kubernetes.io/os In [linux]"), "{m}");
    assert!(!m.contains("disktype"), "{m}");
}

/// build.rs `WindowsBuild::parse_version`: a revision must be digits and
/// not empty ("10.0.17763." and "10.0.17763.x" are not versions).
#[test]
fn windows_version_revision_must_be_digits() {
    use os_placement_core::WindowsBuild;
    assert_eq!(
        WindowsBuild::parse_version("10.0.17763.4131"),
        Some(WindowsBuild::LTSC2019)
    );
    assert_eq!(
        WindowsBuild::parse_version("10.0.17763"),
        Some(WindowsBuild::LTSC2019)
    );
    assert_eq!(WindowsBuild::parse_version("10.0.17763."), None);
    assert_eq!(WindowsBuild::parse_version("10.0.17763.x1"), None);
    assert_eq!(WindowsBuild::parse_version("10.0..1"), None);
}

/// build.rs `WindowsBuild::parse_version`: the build part is digits only.
/// Rust's `u32` parser also takes a leading `+`, so `10.0.+17763` must be
/// refused before it reaches it. Upstream: the kubelet writes the label as
/// `%d.%d.%d` (pkg/kubelet/kubelet_node_status_windows.go).
#[test]
fn windows_build_version_with_a_sign_is_no_build() {
    use os_placement_core::WindowsBuild;
    assert_eq!(
        WindowsBuild::parse_version("10.0.17763").map(WindowsBuild::number),
        Some(17763)
    );
    assert_eq!(WindowsBuild::parse_version("10.0.+17763"), None);
    assert_eq!(WindowsBuild::parse_version("10.0.+17763.1"), None);
}

/// image.rs `valid_registry`: a registry host is letters, digits, `.`, `-`
/// (and a port); `bad!host.com/app` is no reference, so it says nothing.
/// Upstream: distribution/reference `domainComponent` (regexp.go).
#[test]
fn registry_with_a_character_no_host_has_is_no_reference() {
    use os_placement_core::ImageRef;
    let ok = ImageRef::parse("my-host.example.com:5000/app:1").expect("a reference");
    assert_eq!(ok.registry, Some("my-host.example.com:5000"));
    for bad in ["bad!host.com/app:1", "bad host.com/app:1", "host.c*m/app"] {
        assert!(ImageRef::parse(bad).is_none(), "{bad}");
    }
}

/// image.rs `release_of_word`: a release may follow its Windows word after
/// up to two fillers (`windows-server-core-2022`), not three.
/// Upstream: the Windows base image names list "Windows Server Core 2022"
/// (learn.microsoft.com, container base images).
#[test]
fn windows_word_reaches_its_release_over_two_fillers() {
    use os_placement_core::WindowsBuild;
    use os_placement_core::{classify, ImageOs};
    let build = |image: &str| match classify(image, &[]) {
        ImageOs::Windows { build, .. } => build.map(WindowsBuild::number),
        other => panic!("{image}: {other:?}"),
    };
    assert_eq!(build("example.com/win-server-core-2022:1"), Some(20348));
    assert_eq!(
        build("example.com/tools/app:windows-server-core-2022"),
        Some(20348)
    );
    // Three fillers: the release is out of reach, so no build is read.
    let far = classify("example.com/tools/app:windows-server-core-amd64-2022", &[]);
    assert!(
        !matches!(far, ImageOs::Windows { build: Some(_), .. }),
        "{far:?}"
    );
}

/// image.rs `has_linux_token`: Red Hat's UBI tags name a version
/// (`ubi8`, `ubi9-minimal`); a word that only starts with `ubi` says nothing.
/// Upstream: Red Hat Universal Base Images, registry.access.redhat.com/ubi9.
#[test]
fn ubi_token_needs_its_version() {
    assert!(is_linux("example.com/tools/app:1.2-ubi9"));
    assert!(!is_linux("example.com/tools/app:1.2-ubi"));
    assert!(!is_linux("example.com/tools/app:ubiquity"));
}

/// image.rs `is_linux_official_image`: a bare official name is Docker Hub's
/// `library/` image only on Docker Hub; `registry.example.com/alpine` is
/// somebody else's repository and says nothing.
/// Upstream: distribution/reference `ParseNormalizedNamed` (normalize.go).
#[test]
fn official_name_is_official_only_on_docker_hub() {
    assert!(is_linux("alpine:3.20"));
    assert!(is_linux("docker.io/alpine:3.20"));
    assert!(!is_linux("registry.example.com/alpine:3.20"));
}

/// place.rs `plan`: a pod bound with `spec.nodeName` skips the scheduler,
/// so selector entries the policy would add are dropped with a
/// `bound-to-node` warning; when nothing was dropped there is no warning.
/// Upstream: a pod with nodeName is not scheduled (kube-scheduler only
/// queues pods whose nodeName is empty: pkg/scheduler/eventhandlers.go).
#[test]
fn bound_pod_is_warned_about_only_when_a_selector_entry_is_dropped() {
    let placed = pod(json!({
        "nodeName": "win-1",
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
        "containers": [{"name": "c", "image": WIN2019}],
    }));
    let d = create(&placed, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        patch_paths(&d),
        ["/spec/tolerations"],
        "the toleration is still added"
    );
    assert!(
        !warning_codes(&d).contains(&"bound-to-node"),
        "{:?}",
        warning_codes(&d)
    );
    let unplaced =
        pod(json!({"nodeName": "win-1", "containers": [{"name": "c", "image": WIN2019}]}));
    let d = create(&unplaced, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert!(
        warning_codes(&d).contains(&"bound-to-node"),
        "{:?}",
        warning_codes(&d)
    );
    let paths = patch_paths(&d);
    assert!(
        !paths.iter().any(|p| p.starts_with("/spec/nodeSelector")),
        "the selector entries are dropped: {paths:?}"
    );
    assert!(
        paths.iter().any(|p| p.starts_with("/spec/tolerations")),
        "{paths:?}"
    );
}

/// A Windows 2019 pod that selects its OS and build but does not tolerate
/// the EKS Windows taint.
fn selected_windows_pod() -> serde_json::Value {
    pod(json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
        "containers": [{"name": "c", "image": WIN2019}],
    }))
}

/// EKS settings with `preferRuntimeClass` and one declared class.
fn prefer_runtime_class(class: serde_json::Value) -> Settings {
    eks_with(json!({
        "preferRuntimeClass": true,
        "runtimeClasses": [class]
    }))
}

/// place.rs `no_matching_runtime_class`: the fallback warning says what
/// was added instead; a pod that only lacked the toleration got only that.
#[test]
fn prefer_runtime_class_fallback_names_a_lone_toleration() {
    let d = create(
        &selected_windows_pod(),
        &prefer_runtime_class(json!({"name": "linux", "scheduling": {
            "nodeSelector": {"kubernetes.io/os": "linux"}}})),
    );
    let w = d
        .warnings
        .iter()
        .find(|w| w.code.as_str() == "no-matching-runtime-class")
        .expect("fallback warning");
    assert!(w.message.contains("its toleration was added"), "{w}");
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(patch_paths(&d), ["/spec/tolerations"]);
}

/// place.rs `windows_missing`: with the cluster's builds known
/// (`windowsBuilds`), an image that names no build still gets the
/// `unknown-build` warning: the set placement needs the image's builds.
#[test]
fn image_without_build_is_warned_about_when_the_cluster_builds_are_known() {
    let object = pod_with_images(&["mcr.microsoft.com/windows/servercore:latest"]);
    let settings = eks_with(json!({
        "windowsBuilds": ["10.0.17763", "10.0.20348"]
    }));
    let d = create(&object, &settings);
    assert!(d.accepted, "{}", message(&d));
    assert!(
        warning_codes(&d).contains(&"unknown-build"),
        "{:?}",
        warning_codes(&d)
    );
}

/// image.rs `by_rules`: a `windowsImages` pattern matches the reference as
/// written, trimmed, or lower-cased, whichever matches. Mutating admission
/// runs before the API server validates the object (Kubernetes admission
/// control phases), so a pasted image with a leading space reaches the
/// policy, and a pattern written in the registry's own case still matches it.
#[test]
fn windows_images_pattern_matches_a_trimmed_reference_in_its_own_case() {
    use os_placement_core::{classify, ImageOs, ImageRule};
    let rules = [ImageRule::new("registry.example.com/Win/*", None).unwrap()];
    let is_windows = |image: &str| matches!(classify(image, &rules), ImageOs::Windows { .. });
    assert!(is_windows("registry.example.com/Win/app:1"));
    assert!(is_windows(" registry.example.com/Win/app:1"));
    assert!(!is_windows(" registry.example.com/Linux/app:1"));
}

const BUILD_LABEL: &str = "node.kubernetes.io/windows-build";

/// A private image whose registry index lists Windows 2019 and 2022
/// entries (OCI image index `platform.os.version`).
fn two_build_index() -> Facts {
    image_facts(
        PRIVATE,
        ImageFacts::Platforms(vec![
            platform("windows", "amd64", Some("10.0.17763.6414")),
            platform("windows", "amd64", Some("10.0.20348.2700")),
        ]),
    )
}

/// place.rs `build_placement`: when no node build of the cluster runs the
/// image, the pod keeps the image's own pin and waits for such a node;
/// an affinity over no build would match nothing.
/// Upstream: Windows container version compatibility (learn.microsoft.com):
/// a process-isolated ltsc2022 image needs a 10.0.20348 host.
#[test]
fn no_fitting_cluster_build_keeps_the_images_own_pin() {
    let object = pod_with_images(&[WIN2022]);
    let only_2019 = eks_with(json!({
        "windowsBuilds": ["10.0.17763"]
    }));
    let d = create(&object, &only_2019);
    assert!(d.accepted, "{}", message(&d));
    let selector = result_object(&object, &d)["spec"]["nodeSelector"].clone();
    assert_eq!(selector[BUILD_LABEL], "10.0.20348", "{selector}");
    assert!(
        !patch_paths(&d).iter().any(|p| p.contains("affinity")),
        "{:?}",
        patch_paths(&d)
    );
}

/// place.rs `join_builds`: without mutation, the rejection names the builds
/// the pod must select.
#[test]
fn build_affinity_rejection_names_the_builds() {
    let object = pod_with_images(&[PRIVATE]);
    let validate_only = Settings {
        mutate: false,
        ..eks()
    };
    let d = with_facts(&object, &validate_only, &two_build_index());
    assert_rejected_with(&d, "missing-build-pin");
    assert!(
        message(&d).contains("builds 10.0.17763, 10.0.20348"),
        "{}",
        message(&d)
    );
}

/// place.rs `choose_runtime_class`: with `preferRuntimeClass`, a declared
/// class that agrees with the pod's OS and its own nodeSelector entries and
/// provides what is missing (here only the toleration) is set instead of
/// the fields themselves.
/// Upstream: RuntimeClass scheduling merges the class's tolerations into the
/// pod (plugin/pkg/admission/runtimeclass/admission.go).
#[test]
fn prefer_runtime_class_sets_a_class_that_provides_the_missing_toleration() {
    let d = create(
        &selected_windows_pod(),
        &prefer_runtime_class(json!({"name": "windows-tolerant", "scheduling": {
            "nodeSelector": {"kubernetes.io/os": "windows"},
            "tolerations": [eks_toleration()]}})),
    );
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, "/spec/runtimeClassName"),
        Some(&json!("windows-tolerant"))
    );
}

/// The messages for the Windows pod of `containers[0].securityContext`.
fn forbidden_messages(security_context: serde_json::Value) -> Vec<String> {
    let object = pod(json!({
        "os": {"name": "windows"},
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
        "tolerations": [eks_toleration()],
        "containers": [{"name": "c", "image": WIN2019, "securityContext": security_context}],
    }));
    let d = create(&object, &eks());
    assert!(
        !d.accepted,
        "a forbidden field is a violation: {security_context}"
    );
    d.violations.iter().map(|v| v.message.clone()).collect()
}

/// windows_rules.rs `unremarkable`: a forbidden field set to a value that
/// looks harmless (false, 0, empty) is named so, since the API forbids it
/// anyway; any other value gets the plain message.
/// Upstream: `validateWindows` tests these pointers and lists against nil
/// (pkg/apis/core/validation/validation.go).
#[test]
fn forbidden_field_messages_name_harmless_looking_values_only() {
    let cases = [
        (json!({"runAsUser": 0}), Some("even when 0")),
        (json!({"runAsUser": 1000}), None),
        (json!({"procMount": ""}), Some("even when empty")),
        (json!({"procMount": "Default"}), None),
        (json!({"capabilities": {}}), Some("even when empty")),
        (json!({"capabilities": {"drop": ["ALL"]}}), None),
        (json!({"privileged": false}), Some("even when false")),
    ];
    for (security_context, wording) in cases {
        let messages = forbidden_messages(security_context.clone());
        match wording {
            Some(w) => assert!(
                messages.iter().any(|m| m.contains(w)),
                "{security_context}: {messages:?}"
            ),
            None => assert!(
                messages.iter().all(|m| !m.contains("even when")),
                "{security_context}: {messages:?}"
            ),
        }
    }
    let object = pod(json!({
        "os": {"name": "windows"},
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
        "tolerations": [eks_toleration()],
        "securityContext": {"supplementalGroups": []},
        "containers": [{"name": "c", "image": WIN2019}],
    }));
    let empty = create(&object, &eks());
    assert!(
        message(&empty).contains("even when empty"),
        "{}",
        message(&empty)
    );
    let listed = with_spec(
        object,
        json!({"securityContext": {"supplementalGroups": [1000]}}),
    );
    let listed = create(&listed, &eks());
    assert_rejected_with(&listed, "forbidden-field");
    assert!(
        !message(&listed).contains("even when"),
        "{}",
        message(&listed)
    );
}

/// windows_rules.rs `host_process_rules`: pod and container `hostProcess`
/// must agree; when they do, there is nothing to say; when they do not,
/// the message names both values.
/// Upstream: validateWindowsHostProcessPod (pkg/apis/core/validation/validation.go).
#[test]
fn host_process_pod_and_container_values_must_agree() {
    let spec = |container: bool| {
        host_process_pod(json!({"containers": [{"name": "c", "image": WIN2019,
            "securityContext": {"windowsOptions": {"hostProcess": container}}}]}))
    };
    let agree = create(&spec(true), &eks());
    assert!(agree.accepted, "{}", message(&agree));
    assert!(
        !codes(&agree).contains(&"host-process"),
        "{}",
        message(&agree)
    );
    let disagree = create(&spec(false), &eks());
    assert_rejected_with(&disagree, "host-process");
    assert!(
        message(&disagree)
            .contains("is false but the pod's securityContext.windowsOptions.hostProcess is true"),
        "{}",
        message(&disagree)
    );
}

/// toleration.rs `describe`: an `Exists` toleration of one key tolerates
/// any value of it. Upstream: Toleration.ToleratesTaint (k8s.io/api core/v1
/// toleration.go).
#[test]
fn exists_toleration_is_described_as_any_value_of_its_key() {
    use k8s_openapi::api::core::v1::Toleration;
    let exists = Toleration {
        key: Some("os".into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    };
    assert_eq!(
        os_placement_core::describe_toleration(&exists),
        "os (any value):NoSchedule"
    );
    let equal = Toleration {
        operator: Some("Equal".into()),
        value: Some("windows".into()),
        ..exists
    };
    assert_eq!(
        os_placement_core::describe_toleration(&equal),
        "os=windows:NoSchedule"
    );
}

// ---- resolve.rs and settings.rs ----

fn platform(os: &str, arch: &str, version: Option<&str>) -> Platform {
    Platform {
        os: os.into(),
        os_version: version.map(Into::into),
        architecture: Some(arch.into()),
    }
}

fn settings_error(v: serde_json::Value) -> String {
    match Settings::from_value(&v) {
        Ok(_) => panic!("settings {v} were accepted"),
        Err(e) => e.to_string(),
    }
}

/// resolve.rs `Resolution::image_builds`: only the images' own signals
/// give the image builds. Node affinity on two builds does not tell which
/// build an image without a build tag needs, so it still gets the
/// `unknown-build` warning; an image naming its build gets none.
/// Upstream: Windows container version compatibility (Microsoft docs:
/// process isolation needs the host build to match the image build).
#[test]
fn node_affinity_builds_are_not_image_builds() {
    let spec = |image: &str| {
        pod(json!({
            "containers": [{"name": "c", "image": image}],
            "affinity": required_affinity(json!([{"key": "node.kubernetes.io/windows-build", "operator": "In",
                    "values": ["10.0.17763", "10.0.20348"]}])),
        }))
    };
    let d = create(&spec("mcr.microsoft.com/windows/servercore:latest"), &eks());
    assert!(d.accepted, "{}", message(&d));
    assert!(
        warning_codes(&d).contains(&"unknown-build"),
        "{:?}",
        warning_codes(&d)
    );
    let d = create(&spec(WIN2019), &eks());
    assert!(d.accepted, "{}", message(&d));
    assert!(
        !warning_codes(&d).contains(&"unknown-build"),
        "{:?}",
        warning_codes(&d)
    );
}

/// resolve.rs `Found::windows_options`: a conflict names a HostProcess
/// pod's windowsOptions as `hostProcess: true`, the field that makes it a
/// Windows pod, not the list of every option set.
/// Upstream: Kubernetes docs, "Create a Windows HostProcess Pod".
#[test]
fn host_process_conflict_names_host_process_alone() {
    let object = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "hostNetwork": true,
        "containers": [{"name": "c", "image": "registry.example.com/tool:1"}],
    }));
    let d = create(&object, &eks());
    let m = message(&d);
    assert_rejected_with(&d, "os-conflict");
    assert!(m.contains("hostProcess: true"), "{m}");
    assert!(!m.contains("runAsUserName"), "{m}");
    // Without hostProcess, the options set are listed.
    let object = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}},
        "containers": [{"name": "c", "image": "registry.example.com/tool:1"}],
    }));
    let d = create(&object, &eks());
    let m = message(&d);
    assert_rejected_with(&d, "os-conflict");
    assert!(m.contains("runAsUserName"), "{m}");
}

/// resolve.rs `Found::lookup_failed`: with `lookupFailure: reject`, the
/// rejection's fix also names the setting that turns it into a warning;
/// the warning (`lookupFailure: warn`) does not.
/// Upstream: OCI distribution spec (a manifest fetch can fail: 401, 404).
#[test]
fn lookup_failure_rejection_names_the_setting_to_warn_instead() {
    let facts = image_facts(
        WIN2022,
        ImageFacts::LookupFailed("connection refused".into()),
    );
    let object = pod(spec_with_images(&[WIN2022]));
    let strict = eks_with(json!({
        "lookupFailure": "reject"
    }));
    let d = with_facts(&object, &strict, &facts);
    assert_rejected_with(&d, "lookup-failed");
    let m = message(&d);
    assert!(m.contains("or set lookupFailure: warn"), "{m}");
    let d = with_facts(&object, &eks(), &facts);
    assert!(d.accepted);
    let lines = d.warning_lines();
    assert!(
        lines.iter().any(|w| w.contains("connection refused")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|w| w.contains("lookupFailure")),
        "{lines:?}"
    );
}

/// resolve.rs `Found::image_by_reference`: a Hyper-V RuntimeClass lets an
/// image run on its build and newer ones. Under node affinity on 2019 and
/// 2022, an ltsc2022 image is pinned to 2022, the one build both allow; an
/// ltsc2019 image runs on both, so it gets no pin, while with process
/// isolation it is pinned to its own build.
/// Upstream: Microsoft docs, Windows container version compatibility
/// (Hyper-V isolation runs older images on newer hosts).
#[test]
fn hyperv_image_by_reference_is_pinned_within_the_affinity_builds() {
    let declared = eks_with(json!({
        "runtimeClasses": [{"name": "win-hv", "isolation": "hyperv", "scheduling": {
            "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [eks_toleration()]}}]
    }));
    let spec = |image: &str, runtime_class: Option<&str>| {
        pod(json!({"runtimeClassName": runtime_class,
            "containers": [{"name": "c", "image": image}],
            "affinity": required_affinity(json!([{"key": "node.kubernetes.io/windows-build", "operator": "In",
                    "values": ["10.0.17763", "10.0.20348"]}])),
        }))
    };
    let pin = |image: &str, runtime_class: Option<&str>| {
        let object = spec(image, runtime_class);
        let d = create(&object, &declared);
        assert!(d.accepted, "{}", message(&d));
        result_object(&object, &d)["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"]
            .clone()
    };
    assert_eq!(pin(WIN2022, Some("win-hv")), json!("10.0.20348"));
    assert_eq!(pin(WIN2019, Some("win-hv")), json!(null));
    assert_eq!(pin(WIN2019, None), json!("10.0.17763"));
}

/// resolve.rs `describe_platforms`: a registry-based conflict lists the
/// image's Linux and Windows entries, leaves out attestation entries
/// (`unknown/unknown`), and counts what is beyond four.
/// Upstream: OCI image index spec (platform.os; attestation manifests use
/// `unknown`, BuildKit docs).
#[test]
fn registry_platforms_are_described_in_the_conflict() {
    let reference = "registry.example.com/app:1";
    let object = pod(json!({"nodeSelector": {"kubernetes.io/os": "windows"},
        "containers": [{"name": "c", "image": reference}]}));
    let few = vec![
        platform("linux", "amd64", None),
        platform("unknown", "unknown", None),
    ];
    let d = with_facts(
        &object,
        &eks(),
        &image_facts(reference, ImageFacts::Platforms(few)),
    );
    let m = message(&d);
    assert_rejected_with(&d, "os-conflict");
    assert!(m.contains("registry: linux/amd64"), "{m}");
    assert!(!m.contains("unknown"), "{m}");
    assert!(!m.contains("more"), "{m}");
    let many = ["amd64", "arm64", "arm", "ppc64le", "s390x"]
        .iter()
        .map(|arch| platform("linux", arch, None))
        .collect();
    let d = with_facts(
        &object,
        &eks(),
        &image_facts(reference, ImageFacts::Platforms(many)),
    );
    let m = message(&d);
    assert!(
        m.contains("linux/amd64, linux/arm64, linux/arm, linux/ppc64le and 1 more"),
        "{m}"
    );
    assert!(!m.contains("s390x"), "{m}");
}

/// resolve.rs `find_conflicts`: required node affinity that no node
/// matches is fixed in its nodeSelectorTerms; a nodeSelector value no node
/// carries is fixed by changing or removing the entry.
/// Upstream: Kubernetes docs, "Assign Pods to Nodes" (nodeSelectorTerms are
/// ORed, matchExpressions ANDed).
#[test]
fn affinity_no_node_matches_is_fixed_in_its_terms() {
    let object = pod(json!({
        "containers": [{"name": "c", "image": "registry.example.com/app:1"}],
        "affinity": required_affinity(json!([
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}])),
    }));
    let d = create(&object, &eks());
    let m = message(&d);
    assert_rejected_with(&d, "unschedulable");
    assert!(m.contains("nodeSelectorTerm"), "{m}");
    let object = pod(json!({
        "containers": [{"name": "c", "image": "registry.example.com/app:1"}],
        "nodeSelector": {"kubernetes.io/os": "plan9"},
    }));
    let d = create(&object, &eks());
    let m = message(&d);
    assert_rejected_with(&d, "unschedulable");
    assert!(!m.contains("nodeSelectorTerm"), "{m}");
    assert!(
        m.contains("use a value nodes carry, or remove the entry"),
        "{m}"
    );
}

/// settings.rs `Reader::taint`: a `windowsTaint.key` or `.effect` of the
/// wrong type is reported as such, not also as missing.
/// Upstream: Kubernetes Taint type (key and effect are required strings,
/// k8s.io/api/core/v1/types.go).
#[test]
fn taint_field_of_the_wrong_type_is_not_also_missing() {
    let e = settings_error(
        json!({"windowsTaint": {"key": 5, "value": "windows", "effect": "NoSchedule"}}),
    );
    assert!(e.contains("windowsTaint.key"), "{e}");
    assert!(e.contains("the number 5"), "{e}");
    assert!(!e.contains("is required"), "{e}");
    let e =
        settings_error(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": true}}));
    assert!(e.contains("windowsTaint.effect"), "{e}");
    assert!(!e.contains("is required"), "{e}");
    // Missing, they are required.
    let e = settings_error(json!({"windowsTaint": {"value": "windows"}}));
    assert!(e.contains("windowsTaint.key: is required"), "{e}");
    assert!(e.contains("windowsTaint.effect: is required"), "{e}");
}

/// settings.rs `json_type_name`: settings of the wrong JSON type name the
/// type they got.
#[test]
fn settings_of_the_wrong_type_name_the_type() {
    for (value, name) in [
        (json!([]), "a list"),
        (json!(true), "a boolean"),
        (json!("x"), "the string \"x\""),
        (json!(1), "the number 1"),
    ] {
        let e = settings_error(value);
        assert!(
            e.contains(&format!("expected an object, got {name}")),
            "{e}"
        );
    }
    let e = settings_error(json!({"windowsTaint": []}));
    assert!(e.contains("windowsTaint: expected an object"), "{e}");
    assert!(e.contains("got a list"), "{e}");
}

/// image.rs `is_linux_official_image`: `amazonlinux` is official on Docker
/// Hub and in Amazon's own `amazonlinux/amazonlinux` repository, not under
/// any other owner. Upstream: Amazon Linux container images
/// (docs.aws.amazon.com, public.ecr.aws/amazonlinux/amazonlinux).
#[test]
fn amazonlinux_is_official_only_in_its_own_repositories() {
    assert!(is_linux("public.ecr.aws/amazonlinux/amazonlinux:2023"));
    assert!(is_linux("amazonlinux:2023"));
    assert!(!is_linux("registry.example.com/team/amazonlinux:2023"));
}

/// The built-in conventions read `image` as a Linux image.
fn is_linux(image: &str) -> bool {
    use os_placement_core::{classify, ImageOs};
    matches!(classify(image, &[]), ImageOs::Linux { .. })
}
