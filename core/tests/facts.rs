//! Placement with facts from the registry and the cluster. Each rule has a
//! case where the fact changes the outcome and one where it must not.

use crate::common::*;
use os_placement_core::{needs, Decision, Facts, Operation, Review, Settings};
use os_placement_core::{
    ClusterRuntimeClass, ImageFacts, Node, NodeFacts, Platform, RuntimeClassFacts, SchedulingFacts,
    Taint,
};
use serde_json::{json, Value};

use crate::common::with_facts as with;

fn linux(arch: &str) -> Platform {
    Platform {
        os: "linux".into(),
        os_version: None,
        architecture: Some(arch.into()),
    }
}

fn windows(version: &str) -> Platform {
    Platform {
        os: "windows".into(),
        os_version: Some(version.into()),
        architecture: Some("amd64".into()),
    }
}

fn image(reference: &str, platforms: Vec<Platform>) -> Facts {
    image_facts(reference, ImageFacts::Platforms(platforms))
}

fn deployment(spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {"metadata": {}, "spec": spec}}
    })
}

fn selector(d: &Decision, object: &Value) -> Value {
    result_object(object, d)["spec"]["nodeSelector"].clone()
}

fn node(name: &str, os: &str, build: Option<&str>, taints: &[(&str, &str, &str)]) -> Node {
    let mut labels: os_placement_core::StringMap =
        [("kubernetes.io/os".to_string(), os.to_string())].into();
    if let Some(b) = build {
        labels.insert("node.kubernetes.io/windows-build".into(), b.into());
    }
    Node {
        name: name.into(),
        os: Some(os.into()),
        windows_build: build.map(str::to_string),
        architecture: Some("amd64".into()),
        labels,
        taints: taints
            .iter()
            .map(|(k, v, e)| Taint {
                key: (*k).into(),
                value: (*v).into(),
                effect: (*e).into(),
            })
            .collect(),
        ..Node::default()
    }
}

/// EKS-like: Linux, Windows 2019 and 2022, Windows tainted os=windows.
fn eks_nodes() -> Vec<Node> {
    let taint = [("os", "windows", "NoSchedule")];
    vec![
        node("linux-a", "linux", None, &[]),
        node("win-2019", "windows", Some("10.0.17763"), &taint),
        node("win-2022", "windows", Some("10.0.20348"), &taint),
    ]
}

fn nodes_facts(nodes: Vec<Node>) -> Facts {
    Facts {
        nodes: Some(NodeFacts::Listed(nodes)),
        ..Facts::default()
    }
}

// ---- no facts: exactly as before ----

#[test]
fn empty_facts_give_the_same_decision_as_evaluate() {
    for spec in [
        spec_with_images(&[WIN2022]),
        spec_with_images(&[PRIVATE]),
        spec_with_images(&[LINUX_IMAGE]),
        spec_with_images(&[WIN2019, LINUX_IMAGE]),
    ] {
        let object = pod(spec);
        assert_eq!(
            with(&object, &eks(), &Facts::default()),
            create(&object, &eks())
        );
    }
}

// ---- image index: containerd matches platform.os and os.version ----
// (containerd pkg/platforms: an index entry runs where os, and for Windows
// the os.version build, match the host)

#[test]
fn index_with_only_linux_entries_is_a_linux_signal() {
    let object = pod(spec_with_images(&[PRIVATE]));
    let facts = image(PRIVATE, vec![linux("amd64"), linux("arm64")]);
    let settings = settings(json!({"windowsTaint": null, "defaultOS": "none"}));
    let d = with(&object, &settings, &facts);
    assert!(d.accepted);
    assert_eq!(selector(&d, &object)["kubernetes.io/os"], "linux");
    // Negative: without the fact, defaultOS none leaves it alone.
    assert_unchanged(&create(&object, &settings));
}

#[test]
fn index_with_only_windows_entries_is_windows_with_its_builds() {
    let object = pod(spec_with_images(&[PRIVATE]));
    let facts = image(PRIVATE, vec![windows("10.0.20348.2700")]);
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{:?}", d.message());
    let sel = selector(&d, &object);
    assert_eq!(sel["kubernetes.io/os"], "windows");
    assert_eq!(sel["node.kubernetes.io/windows-build"], "10.0.20348");
    assert_idempotent_with(&object, &d, &eks(), &facts);
    // Negative: a Linux selector on it is a conflict naming the registry.
    let object = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [{"name": "c", "image": PRIVATE}]
    }));
    let d = with(&object, &eks(), &facts);
    assert!(!d.accepted);
    assert!(
        message(&d).contains("registry: windows/amd64 10.0.20348.2700"),
        "{}",
        message(&d)
    );
}

fn assert_idempotent_with(object: &Value, d: &Decision, settings: &Settings, facts: &Facts) {
    let once = result_object(object, d);
    let again = with(&once, settings, facts);
    assert!(again.accepted, "{:?}", again.message());
    assert!(
        again.patch.is_empty(),
        "second pass patched: {:?}",
        again.patch
    );
}

#[test]
fn multi_build_index_gets_required_affinity_on_its_builds() {
    let object = deployment(spec_with_images(&[PRIVATE]));
    let facts = image(
        PRIVATE,
        vec![windows("10.0.17763.6414"), windows("10.0.20348.2700")],
    );
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{:?}", d.message());
    let after = result_object(&object, &d);
    let spec = &after["spec"]["template"]["spec"];
    assert!(spec["nodeSelector"]
        .get("node.kubernetes.io/windows-build")
        .is_none());
    let terms = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    assert_eq!(
        terms[0]["matchExpressions"][0],
        json!({"key": "node.kubernetes.io/windows-build", "operator": "In",
               "values": ["10.0.17763", "10.0.20348", "10.0.26100"]})
    );
    assert_idempotent_with(&object, &d, &eks(), &facts);
}

#[test]
fn build_affinity_is_added_to_every_term_after_the_users_expressions() {
    // NodeAffinity: terms are ORed, so each term needs the build expression.
    let user = json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]});
    let object = pod(json!({
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [user]}, {"matchFields": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]}}},
        "containers": [{"name": "c", "image": PRIVATE}]
    }));
    let facts = image(
        PRIVATE,
        vec![windows("10.0.17763.1"), windows("10.0.20348.1")],
    );
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{:?}", d.message());
    let after = result_object(&object, &d);
    let terms = &after["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    assert_eq!(terms[0]["matchExpressions"][0], user);
    assert_eq!(
        terms[0]["matchExpressions"][1]["key"],
        "node.kubernetes.io/windows-build"
    );
    assert_eq!(terms[1]["matchExpressions"][0]["operator"], "In");
    assert_eq!(terms[1]["matchFields"][0]["key"], "metadata.name");
    // Validate-only: the same is a violation naming the affinity.
    let strict = Settings {
        mutate: false,
        ..eks()
    };
    let d = with(&object, &strict, &facts);
    assert!(!d.accepted);
    assert!(message(&d).contains("spec.affinity"), "{}", message(&d));
}

#[test]
fn mixed_index_gives_no_os_but_narrows_windows_builds() {
    // The pause image: Linux and Windows 2019/2022 entries.
    let pause = "registry.k8s.io/pause:3.10";
    let facts = image(
        pause,
        vec![
            linux("amd64"),
            windows("10.0.17763.1"),
            windows("10.0.20348.1"),
        ],
    );
    // Alone: no OS signal, so defaultOS gives Linux.
    let object = pod(spec_with_images(&[pause]));
    let d = with(&object, &aks(), &facts);
    assert_eq!(selector(&d, &object)["kubernetes.io/os"], "linux");
    // With a Windows 2025-only selector: no entry runs there... but 2022
    // images run on 2025 hosts (process isolation, hcsshim), so accepted.
    let object = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.26100"},
        "containers": [{"name": "c", "image": pause}]
    }));
    assert!(with(&object, &aks(), &facts).accepted);
    // Negative: a 2019 pin against an index of only 2022 and Linux is a conflict.
    let facts = image(pause, vec![linux("amd64"), windows("10.0.20348.1")]);
    let object = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
        "containers": [{"name": "c", "image": pause}]
    }));
    let d = with(&object, &aks(), &facts);
    assert_rejected_with(&d, "build-conflict");
}

fn aks() -> Settings {
    settings(json!({}))
}

/// AKS defaults with the inventory read for placement, not only warnings.
fn aks_inventory() -> Settings {
    settings(json!({"nodeInventory": "warn"}))
}

#[test]
fn single_manifest_config_is_read_like_a_one_entry_index() {
    let facts = image(PRIVATE, vec![windows("10.0.17763.4131")]);
    let object = pod(spec_with_images(&[PRIVATE]));
    let d = with(&object, &eks(), &facts);
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.17763"
    );
    // Negative: a config of an unknown OS says nothing; reference rules
    // apply, and a warning names what the registry lacks.
    let facts = image(
        PRIVATE,
        vec![Platform {
            os: "unknown".into(),
            os_version: None,
            architecture: None,
        }],
    );
    let mut d = with(&object, &eks(), &facts);
    let gap = d.warnings.remove(0);
    assert_eq!(gap.code.as_str(), "registry-incomplete");
    assert_eq!(gap.path, "spec.containers[0].image");
    assert!(
        gap.message.contains("api:4.2 no linux or windows entry"),
        "{gap}"
    );
    assert_eq!(d, create(&object, &eks()));
}

#[test]
fn facts_override_a_misleading_reference() {
    // `myapp:ltsc2022` whose registry says Linux only.
    let misleading = "registry.corp.example/tools/cli:ltsc2022";
    let facts = image(misleading, vec![linux("amd64")]);
    let object = pod(spec_with_images(&[misleading]));
    let d = with(&object, &eks(), &facts);
    // A Linux pod the Windows taint keeps off needs nothing; a missing build
    // alone would also pass with a Windows selector and no pin.
    assert_unchanged(&d);
    // Negative: without facts the reference says Windows 2022.
    let d = create(&object, &eks());
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
}

// ---- failed lookups ----

/// The warning containing `needle` of an object that falls back to the
/// rules of its references under `settings`: accepted, with the patch it
/// gets without facts, the warning under the API server's 256 bytes.
fn fallback_warning(object: &Value, settings: &Settings, facts: &Facts, needle: &str) -> String {
    let d = with(object, settings, facts);
    let plain = create(object, settings);
    assert!(d.accepted, "{:?}", d.violations);
    assert_eq!(d.patch, plain.patch);
    let lines = d.warning_lines();
    let warning = lines
        .iter()
        .find(|w| w.contains(needle))
        .unwrap_or_else(|| panic!("no warning with {needle:?}: {lines:?}"));
    assert!(warning.len() < 256, "{warning}");
    warning.clone()
}

#[test]
fn failed_lookup_falls_back_with_a_warning_naming_image_and_error() {
    let facts = image_facts(
        WIN2022,
        ImageFacts::LookupFailed("connection refused".into()),
    );
    let object = pod(spec_with_images(&[WIN2022]));
    let warning = fallback_warning(&object, &eks(), &facts, "connection refused");
    assert!(warning.contains(WIN2022), "{warning}");
    // With lookupFailure: reject, it is a rejection.
    let strict = eks_with(json!({
        "lookupFailure": "reject"
    }));
    let d = with(&object, &strict, &facts);
    assert!(!d.accepted);
    assert!(codes(&d).contains(&"lookup-failed"));
}

/// The registry client ends a failure with the fix for it (`; grant …`,
/// registry/src/providers/aws.rs): the warning's fix is the syncer's, so
/// the role to change is named; an error whose tail is no fix keeps the
/// general one.
#[test]
fn a_fix_the_syncer_published_is_the_warnings_fix() {
    let image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/billing/api:4.2";
    let object = deployment(spec_with_images(&[image]));
    let denied = "ecr:GetAuthorizationToken failed: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/sync/1 is not authorized; grant ecr:GetAuthorizationToken to the role arn:aws:iam::123456789012:role/sync";
    let facts = image_facts(image, ImageFacts::LookupFailed(denied.into()));
    let warning = fallback_warning(&object, &eks(), &facts, "syncer's lookup of");
    assert!(
        warning.ends_with(
            "; grant ecr:GetAuthorizationToken to the role arn:aws:iam::123456789012:role/sync"
        ),
        "{warning}"
    );
    // The cause is left to the facts and the syncer's log.
    assert!(!warning.contains("AccessDenied"), "{warning}");
    let short = "corp/api:1";
    let object = deployment(spec_with_images(&[short]));
    // A missing identity's fix (registry/src/providers/aws.rs).
    let absent = "answered 401: no AWS identity is present; annotate the syncer's ServiceAccount with eks.amazonaws.com/role-arn";
    let facts = image_facts(short, ImageFacts::LookupFailed(absent.into()));
    let warning = fallback_warning(&object, &eks(), &facts, "syncer's lookup of");
    assert!(
        warning.ends_with("; annotate the syncer's ServiceAccount with eks.amazonaws.com/role-arn"),
        "{warning}"
    );
    // A namespace whose pull Secret cannot read it (cli/src/sync/pull.rs):
    // the fix names that Secret, and the warning stays under 256 characters.
    let refused = "read with the pull credentials of namespace team-a, but not with those of namespace team-b: registry.corp answered 401 Unauthorized for the manifest (credentials for registry.corp come from the pull Secret team-b/regcred); check the user name and password in the pull Secret team-b/regcred";
    let facts = image_facts(short, ImageFacts::LookupFailed(refused.into()));
    let warning = fallback_warning(&object, &eks(), &facts, "syncer's lookup of");
    assert!(
        warning.ends_with("; check the user name and password in the pull Secret team-b/regcred"),
        "{warning}"
    );
    assert!(warning.len() < 256, "{}", warning.len());
    // A tail that is no fix ("caused by: …", "retry later") is the cause's.
    for error in ["timeout; caused by: connection reset", "busy; retry later"] {
        let facts = image_facts(short, ImageFacts::LookupFailed(error.into()));
        let warning = fallback_warning(&object, &eks(), &facts, "syncer's lookup of");
        assert!(
            warning.ends_with("check that the syncer may reach the registry"),
            "{warning}"
        );
    }
}

/// Regression: a long host error (policy-server's "Host error: ... not
/// granted access ...") filled the warning, and the API server's 256-character
/// cut removed the fix.
#[test]
fn long_lookup_error_keeps_the_fix_in_the_warning() {
    let error = "Host error: Policy has not been granted access to the 'oci/v1/oci_manifest' host capability; caused by: error sending request for url";
    let image = "docker.io/library/nginx:1.27.3";
    let object = deployment(spec_with_images(&[image]));
    let facts = image_facts(image, ImageFacts::LookupFailed(error.into()));
    // imageFacts: registry: the policy server asked the registry.
    let registry = eks_with(json!({"imageFacts": "registry"}));
    let warning = fallback_warning(&object, &registry, &facts, "registry lookup");
    assert!(
        warning.ends_with("check the registry and the policy server's credentials"),
        "{warning}"
    );
    // imageFacts: cluster (the default): the syncer asked the registry and
    // the policy read what it published; the fix says where to look.
    let warning = fallback_warning(&object, &eks(), &facts, "syncer's lookup of");
    assert!(
        warning.ends_with("check that the syncer may reach the registry"),
        "{warning}"
    );
    let nodes = Facts {
        nodes: Some(NodeFacts::LookupFailed(error.into())),
        ..Facts::default()
    };
    let from_nodes = settings(json!({"windowsTaint": "fromNodes"}));
    let d = with(&pod(spec_with_images(&[WIN2022])), &from_nodes, &nodes);
    let lines = d.warning_lines();
    let warning = lines.iter().find(|w| w.contains("the node facts")).unwrap();
    assert!(!warning.ends_with('…'), "{warning}");
}

/// An image the published facts do not hold yet: the reference rules with a
/// warning naming the image, and never a rejection, even with
/// `lookupFailure: reject` (the syncer learns images only from workloads the
/// API server stored, so rejecting would keep a new image out for good).
#[test]
fn unpublished_image_falls_back_with_a_warning_and_is_never_rejected() {
    let facts = image_facts(PRIVATE, ImageFacts::Unpublished);
    let object = pod(spec_with_images(&[PRIVATE]));
    // No syncer state read: nothing is published in the namespace.
    let warning = fallback_warning(&object, &eks(), &facts, "no facts syncer publishes");
    assert!(warning.contains(PRIVATE), "{warning}");
    assert!(warning.contains("namespace os-placement"), "{warning}");
    let strict = eks_with(json!({"lookupFailure": "reject", "imageFactsNamespace": "facts"}));
    let d = with(&object, &strict, &facts);
    assert!(d.accepted, "{:?}", d.violations);
    assert!(d
        .warning_lines()
        .iter()
        .any(|w| w.contains("namespace facts")));
    // Negative: a published failed lookup is still rejected under reject.
    let failed = image_facts(PRIVATE, ImageFacts::LookupFailed("timeout".into()));
    assert!(!with(&object, &strict, &failed).accepted);
}

// ---- what to look up ----

#[test]
fn image_facts_say_where_the_images_are_read() {
    use os_placement_core::ImageSource;
    let object = pod(spec_with_images(&[PRIVATE]));
    // cluster, the default: the published ConfigMaps of the namespace.
    assert_eq!(
        needs_of(&object, &eks()).image_source,
        ImageSource::Cluster {
            namespace: "os-placement".into()
        }
    );
    let elsewhere = eks_with(json!({"imageFactsNamespace": "kubewarden"}));
    assert_eq!(
        needs_of(&object, &elsewhere).image_source,
        ImageSource::Cluster {
            namespace: "kubewarden".into()
        }
    );
    // registry: each image's registry; the images wanted are the same.
    let registry = eks_with(json!({"imageFacts": "registry"}));
    let n = needs_of(&object, &registry);
    assert_eq!(n.image_source, ImageSource::Registry);
    assert_eq!(n.images, needs_of(&object, &eks()).images);
}

#[test]
fn undecided_looks_up_only_images_whose_reference_decides_nothing() {
    let object = pod(spec_with_images(&[WIN2022, PRIVATE, PRIVATE]));
    assert_eq!(needs_of(&object, &eks()).images, vec![PRIVATE.to_string()]);
    // A pod already pinned to one build: no answer can change placement.
    let pinned = pod(json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"},
        "containers": [{"name": "c", "image": PRIVATE}]
    }));
    assert!(needs_of(&pinned, &eks()).images.is_empty());
    let always = settings(json!({"imageLookup": "always"}));
    assert_eq!(
        needs_of(&object, &always).images,
        vec![WIN2022.to_string(), PRIVATE.to_string()]
    );
    let off = settings(json!({"imageLookup": "off"}));
    assert!(needs_of(&object, &off).images.is_empty());
}

#[test]
fn needs_names_undeclared_runtime_classes_and_the_inventory() {
    let object =
        pod(json!({"runtimeClassName": "win-hv", "containers": [{"name": "c", "image": WIN2022}]}));
    let n = needs_of(&object, &eks());
    assert_eq!(n.runtime_classes, vec!["win-hv".to_string()]);
    // nodeInventory auto, the default, reads the Nodes; off does not.
    assert!(n.nodes);
    assert!(!needs_of(&object, &eks_with(json!({"nodeInventory": "off"}))).nodes);
    let declared = settings(
        json!({"runtimeClasses": [{"name": "win-hv", "scheduling": {}}],
        "nodeInventory": "warn"}),
    );
    let n = needs_of(&object, &declared);
    assert!(n.runtime_classes.is_empty());
    assert!(n.nodes);
    // DELETE asks for nothing.
    let r = Review {
        operation: Operation::Delete,
        ..review_of(&object)
    };
    assert!(needs(&r, &declared).is_empty());
}

/// Under `nodeInventory: auto` the node facts only add a warning, which on
/// a Pod a controller creates reaches nobody: such a Pod reads none.
#[test]
fn a_controllers_pod_reads_no_node_facts_under_auto() {
    // The policy places it (its image says Windows 2022): not its author.
    let mut object = pod(json!({"containers": [{"name": "c", "image": WIN2022}]}));
    object["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "iis-5c9d", "uid": "u", "controller": true}]);
    assert!(needs_of(&object, &eks()).is_empty());
    // Negative: the full check, pinArchitecture, no controller, a workload.
    assert!(needs_of(&object, &eks_with(json!({"nodeInventory": "warn"}))).nodes);
    assert!(needs_of(&object, &eks_with(json!({"pinArchitecture": true}))).nodes);
    let mut bare = object.clone();
    bare["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    assert!(needs_of(&bare, &eks()).nodes);
    let workload = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": object["metadata"],
        "spec": {"template": {"spec": object["spec"]}}});
    assert!(needs_of(&workload, &eks()).nodes);
}

/// Under `nodeInventory: auto`, a Pod whose own selection fixes its OS and
/// (Windows) build can only land where its author chose: no node facts.
#[test]
fn a_pod_placed_by_its_author_reads_no_node_facts_under_auto() {
    let with = |spec: Value| needs_of(&pod(spec), &eks());
    let windows_2022 =
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"});
    assert!(with(
        json!({"nodeSelector": windows_2022, "containers": [{"name": "c", "image": WIN2022}]})
    )
    .is_empty());
    assert!(with(json!({"nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [{"name": "c", "image": "nginx:1.27"}]}))
    .is_empty());
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}});
    assert!(with(
        json!({"affinity": affinity, "containers": [{"name": "c", "image": "nginx:1.27"}]})
    )
    .is_empty());
    // Negative: the OS or the build left open, so the policy places it.
    assert!(with(json!({"containers": [{"name": "c", "image": WIN2022}]})).nodes);
    assert!(
        with(json!({"nodeSelector": {"kubernetes.io/os": "windows"},
        "containers": [{"name": "c", "image": WIN2022}]}))
        .nodes
    );
    // Negative: the full check reads them all the same.
    let full = needs_of(
        &pod(
            json!({"nodeSelector": windows_2022, "containers": [{"name": "c", "image": WIN2022}]}),
        ),
        &eks_with(json!({"nodeInventory": "warn"})),
    );
    assert!(full.nodes);
}

/// The full check (nodeInventory warn or reject) looks up the nodes a pod
/// selects by name (`matchFields` on metadata.name, as the DaemonSet
/// controller writes it) or hostname, once each and at most 16; the
/// automatic check, which reads no selector, looks up none.
#[test]
fn needs_names_the_nodes_a_pod_selects_for_the_full_check() {
    let terms = json!([
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ip-1", "ip-2"]}]},
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["ip-2", "ip-3"]},
                              {"key": "zone", "operator": "In", "values": ["a"]}]}]);
    let object = pod(json!({"nodeSelector": {"kubernetes.io/hostname": "ip-0"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}},
        "containers": [{"name": "c", "image": WIN2022}]}));
    let reject = eks_with(json!({"nodeInventory": "reject"}));
    assert_eq!(
        needs_of(&object, &reject).node_names,
        ["ip-0", "ip-1", "ip-2", "ip-3"]
    );
    assert_eq!(needs_of(&object, &reject).facts_namespace, "os-placement");
    // Negative: the automatic check looks up no name.
    assert!(needs_of(&object, &eks()).node_names.is_empty());
    let many: Vec<String> = (0..40).map(|i| format!("n-{i}")).collect();
    let object = pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": many}]}]}}},
        "containers": [{"name": "c", "image": WIN2022}]}),
    );
    assert_eq!(needs_of(&object, &reject).node_names.len(), 16);
}

// ---- RuntimeClasses from the cluster (RuntimeClass admission merge:
// kubernetes plugin/pkg/admission/runtimeclass) ----

fn cluster_rc(name: &str, rc: RuntimeClassFacts) -> Facts {
    Facts {
        runtime_classes: [(name.to_string(), rc)].into(),
        ..Facts::default()
    }
}

fn win2019_class(handler: &str) -> RuntimeClassFacts {
    RuntimeClassFacts::Found(ClusterRuntimeClass {
        handler: handler.into(),
        scheduling: SchedulingFacts {
            node_selector: [
                ("kubernetes.io/os".to_string(), "windows".to_string()),
                (
                    "node.kubernetes.io/windows-build".to_string(),
                    "10.0.17763".to_string(),
                ),
            ]
            .into(),
            tolerations: vec![serde_json::from_value(eks_toleration()).unwrap()],
        },
        isolation: None,
    })
}

#[test]
fn runtime_class_from_the_cluster_places_the_pod() {
    let object = deployment(json!({"runtimeClassName": "windows-2019",
        "containers": [{"name": "c", "image": WIN2019}]}));
    let facts = cluster_rc("windows-2019", win2019_class("runhcs-wcow-process"));
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted);
    assert!(d.patch.is_empty(), "{:?}", d.patch);
    // Negative: its selector conflicts with the image build.
    let object = deployment(json!({"runtimeClassName": "windows-2019",
        "containers": [{"name": "c", "image": WIN2022}]}));
    let d = with(&object, &eks(), &facts);
    assert!(!d.accepted);
    assert!(
        message(&d).contains("RuntimeClass selects"),
        "{}",
        message(&d)
    );
}

#[test]
fn settings_copy_of_a_runtime_class_wins_over_the_cluster() {
    let object = deployment(json!({"runtimeClassName": "windows-2019",
        "containers": [{"name": "c", "image": WIN2022}]}));
    let declared = eks_with(json!({
        "runtimeClasses": [{"name": "windows-2019", "scheduling": {
            "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"},
            "tolerations": [eks_toleration()]}}]}));
    let facts = cluster_rc("windows-2019", win2019_class("runhcs-wcow-process"));
    assert!(with(&object, &declared, &facts).accepted);
}

#[test]
fn runtime_class_missing_from_the_cluster_is_rejected_with_a_fix() {
    let object = deployment(json!({"runtimeClassName": "windows-2091",
        "containers": [{"name": "c", "image": WIN2022}]}));
    let d = with(
        &object,
        &eks(),
        &cluster_rc("windows-2091", RuntimeClassFacts::Missing),
    );
    assert!(!d.accepted);
    assert_eq!(codes(&d), vec!["runtime-class-missing"]);
    assert!(message(&d).contains("spec.template.spec.runtimeClassName"));
    // A failed lookup is no proof it is missing: warn and go on.
    let d = with(
        &object,
        &eks(),
        &cluster_rc(
            "windows-2091",
            RuntimeClassFacts::LookupFailed("forbidden".into()),
        ),
    );
    assert!(d.accepted);
    assert!(d.warning_lines().iter().any(|w| w.contains("forbidden")));
}

// ---- Hyper-V isolation: newer hosts run older images (Microsoft
// version-compatibility; Kubernetes documents Hyper-V isolation as
// experimental) ----

#[test]
fn hyperv_runtime_class_allows_newer_builds_and_no_exact_pin() {
    let object = pod(json!({"runtimeClassName": "win-hv",
        "containers": [{"name": "c", "image": WIN2019}]}));
    let hv = RuntimeClassFacts::Found(ClusterRuntimeClass {
        handler: "runhcs-wcow-hypervisor".into(),
        scheduling: SchedulingFacts {
            node_selector: [("kubernetes.io/os".to_string(), "windows".to_string())].into(),
            tolerations: vec![serde_json::from_value(eks_toleration()).unwrap()],
        },
        isolation: None,
    });
    let facts = cluster_rc("win-hv", hv.clone());
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{:?}", d.message());
    assert!(selector(&d, &object)
        .get("node.kubernetes.io/windows-build")
        .is_none());
    // A 2022 node runs it: no conflict with a 2022 selector.
    let on_2022 = pod(json!({"runtimeClassName": "win-hv",
        "nodeSelector": {"node.kubernetes.io/windows-build": "10.0.20348"},
        "containers": [{"name": "c", "image": WIN2019}]}));
    assert!(with(&on_2022, &eks(), &facts).accepted);
    // Negative: an older host is still a conflict, and process isolation
    // keeps the exact build.
    let older = pod(json!({"runtimeClassName": "win-hv",
        "nodeSelector": {"node.kubernetes.io/windows-build": "10.0.17763"},
        "containers": [{"name": "c", "image": WIN2022}]}));
    assert_rejected_with(&with(&older, &eks(), &facts), "build-conflict");
    let process = cluster_rc("win-hv", win2019_class("runhcs-wcow-process"));
    let d = with(&on_2022, &eks(), &process);
    assert_rejected_with(&d, "build-conflict");
}

#[test]
fn hyperv_pin_is_chosen_among_newer_builds_the_nodes_run() {
    let declared = eks_with(json!({
        "runtimeClasses": [{"name": "win-hv", "isolation": "hyperv", "scheduling": {
            "nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": [eks_toleration()]}}],
        "windowsBuilds": ["10.0.14393", "10.0.20348"]
    }));
    let object = pod(json!({"runtimeClassName": "win-hv",
        "containers": [{"name": "c", "image": WIN2019}]}));
    let d = with(&object, &declared, &Facts::default());
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
}

// ---- node inventory (scheduler NodeAffinity and TaintToleration filters) ----

#[test]
fn pod_no_node_can_run_is_rejected_naming_the_builds() {
    let reject = eks_with(json!({
        "nodeInventory": "reject"}));
    let win2025 = "mcr.microsoft.com/windows/servercore:ltsc2025";
    let object = pod(spec_with_images(&[win2025]));
    let d = with(&object, &reject, &nodes_facts(eks_nodes()));
    assert!(!d.accepted);
    assert_eq!(codes(&d), vec!["no-node"]);
    assert!(
        message(&d)
            .contains("no node runs Windows build 10.0.26100; nodes run 10.0.17763, 10.0.20348"),
        "{}",
        message(&d)
    );
    // warn: admitted with the same finding.
    let warn = eks_with(json!({
        "nodeInventory": "warn"}));
    let d = with(&object, &warn, &nodes_facts(eks_nodes()));
    assert!(d.accepted);
    assert!(d.warning_lines().iter().any(|w| w.contains("10.0.26100")));
    // Negative: a 2022 image runs on win-2022.
    let object = pod(spec_with_images(&[WIN2022]));
    assert!(with(&object, &reject, &nodes_facts(eks_nodes())).accepted);
}

#[test]
fn untolerated_node_taint_is_named() {
    let reject = settings(json!({"nodeInventory": "reject"}));
    let object = pod(spec_with_images(&[WIN2022]));
    let d = with(&object, &reject, &nodes_facts(eks_nodes()));
    assert!(!d.accepted);
    assert!(
        message(&d).contains("os=windows:NoSchedule"),
        "{}",
        message(&d)
    );
}

#[test]
fn pin_is_chosen_among_builds_that_exist() {
    // Windows 2019 and 2025 nodes: a 2022 image runs only on 2025 hosts.
    let nodes = vec![
        node("linux-a", "linux", None, &[]),
        node("win-2019", "windows", Some("10.0.17763"), &[]),
        node("win-2025", "windows", Some("10.0.26100"), &[]),
    ];
    let object = pod(spec_with_images(&[WIN2022]));
    let d = with(&object, &aks_inventory(), &nodes_facts(nodes.clone()));
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.26100"
    );
    // Under nodeInventory auto the nodes only warn: the image's own build.
    let d = with(&object, &aks(), &nodes_facts(nodes));
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    // With 2019 and 2022 nodes, the image's own build.
    let d = with(&object, &aks_inventory(), &nodes_facts(eks_nodes()));
    assert_eq!(
        selector(&d, &object)["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    // Negative: every Windows node runs it (only 2025 nodes): no pin.
    let only_2025 = vec![node("win-2025", "windows", Some("10.0.26100"), &[])];
    let d = with(&object, &aks_inventory(), &nodes_facts(only_2025));
    // Still placed on Windows: a rejection would carry no pin either.
    assert!(d.accepted, "{}", message(&d));
    let sel = selector(&d, &object);
    assert_eq!(sel["kubernetes.io/os"], "windows", "{sel}");
    assert!(
        sel.get("node.kubernetes.io/windows-build").is_none(),
        "{sel}"
    );
}

#[test]
fn no_pin_when_every_node_build_runs_the_image() {
    let pause = "registry.k8s.io/pause:3.10";
    let facts = Facts {
        images: [(
            pause.to_string(),
            ImageFacts::Platforms(vec![windows("10.0.17763.1"), windows("10.0.20348.1")]),
        )]
        .into(),
        nodes: Some(NodeFacts::Listed(eks_nodes())),
        ..Facts::default()
    };
    let object = pod(spec_with_images(&[pause]));
    let d = with(&object, &eks_with(json!({"nodeInventory": "warn"})), &facts);
    assert!(d.accepted);
    let sel = selector(&d, &object);
    assert_eq!(sel["kubernetes.io/os"], "windows");
    assert!(sel.get("node.kubernetes.io/windows-build").is_none());
    assert!(result_object(&object, &d)["spec"].get("affinity").is_none());
}

#[test]
fn windows_taint_from_nodes() {
    let from_nodes = settings(json!({"windowsTaint": "fromNodes"}));
    let object = pod(spec_with_images(&[WIN2022]));
    let d = with(&object, &from_nodes, &nodes_facts(eks_nodes()));
    let after = result_object(&object, &d);
    assert_eq!(after["spec"]["tolerations"][0], eks_toleration());
    // Untainted Windows nodes (AKS): no toleration added.
    let aks_nodes = vec![
        node("linux-a", "linux", None, &[]),
        node("win-2022", "windows", Some("10.0.20348"), &[]),
    ];
    let d = with(&object, &from_nodes, &nodes_facts(aks_nodes));
    // Still placed: a rejection would add no toleration either.
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(selector(&d, &object)["kubernetes.io/os"], "windows");
    assert!(result_object(&object, &d)["spec"]
        .get("tolerations")
        .is_none());
    // Nodes unreadable: a warning says so.
    let failed = Facts {
        nodes: Some(NodeFacts::LookupFailed("forbidden".into())),
        ..Facts::default()
    };
    let d = with(&object, &from_nodes, &failed);
    assert!(d.warning_lines().iter().any(|w| w.contains("forbidden")));
}

#[test]
fn facts_round_trip_through_json() {
    let facts = Facts {
        images: [(
            PRIVATE.to_string(),
            ImageFacts::Platforms(vec![windows("10.0.20348.1")]),
        )]
        .into(),
        runtime_classes: [("x".to_string(), RuntimeClassFacts::Missing)].into(),
        nodes: Some(NodeFacts::Listed(eks_nodes())),
        syncer: None,
        unreadable: None,
    };
    let text = serde_json::to_string(&facts).unwrap();
    assert!(text.contains("\"osVersion\":\"10.0.20348.1\""), "{text}");
    let back: Facts = serde_json::from_str(&text).unwrap();
    assert_eq!(back, facts);
}

// ---- nodeInventory auto, the default ----

/// With default settings and a readable Node list, an image no node runs
/// is admitted with a warning naming the build the nodes lack (Windows
/// Server 2025 is 10.0.26100: hcsshim osversion; a 2019 or 2022 host does
/// not run it: MicrosoftDocs version-compatibility).
#[test]
fn auto_warns_when_no_node_runs_the_image_build() {
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2025"}]}}}});
    let d = with(&object, &eks(), &nodes_facts(eks_nodes()));
    assert!(d.accepted, "{}", message(&d));
    let lines = d.warning_lines();
    let warning = lines
        .iter()
        .find(|w| w.contains("no node runs"))
        .expect("a no-node warning");
    assert!(warning.contains("10.0.26100"), "{warning}");
    assert!(
        warning.contains("10.0.17763") && warning.contains("10.0.20348"),
        "{warning}"
    );
    assert!(warning.chars().count() <= 256, "{warning}");
    assert!(warning_codes(&d).contains(&"no-node"));
    // The image's own pin stays: the pod waits for such a node.
    assert_eq!(
        result_object(&object, &d)["spec"]["template"]["spec"]["nodeSelector"]
            ["node.kubernetes.io/windows-build"],
        "10.0.26100"
    );
    // Negative: an image the nodes run gets no warning.
    let fits = pod(spec_with_images(&[WIN2022]));
    let d = with(&fits, &eks(), &nodes_facts(eks_nodes()));
    assert!(!warning_codes(&d).contains(&"no-node"), "{:?}", d.warnings);
}

/// Under auto only the platform counts: selectors and taints may point at
/// pools an autoscaler adds later, and a list the host will not give is
/// not mentioned on every request.
#[test]
fn auto_stays_silent_on_selectors_taints_and_unreadable_nodes() {
    let object = pod(
        json!({"nodeSelector": {"kubernetes.io/os": "linux", "pool": "gpu"},
        "containers": [{"name": "c", "image": LINUX_IMAGE}]}),
    );
    let d = with(&object, &eks(), &nodes_facts(eks_nodes()));
    assert!(
        d.accepted && !warning_codes(&d).contains(&"no-node"),
        "{:?}",
        d.warnings
    );
    let warn = eks_with(json!({"nodeInventory": "warn"}));
    let d = with(&object, &warn, &nodes_facts(eks_nodes()));
    assert!(warning_codes(&d).contains(&"no-node"), "{:?}", d.warnings);
    let failed = Facts {
        nodes: Some(NodeFacts::LookupFailed("forbidden".into())),
        ..Facts::default()
    };
    let d = with(&pod(spec_with_images(&[WIN2022])), &eks(), &failed);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let d = with(&pod(spec_with_images(&[WIN2022])), &warn, &failed);
    assert!(d.warning_lines().iter().any(|w| w.contains("forbidden")));
}

/// dapr/dapr#9699: an image index whose Windows entry has no `os.version`
/// (OCI image-index spec: `platform.os.version` is optional) leaves the
/// build open; a warning names the image and the missing field.
#[test]
fn a_windows_entry_without_os_version_is_named() {
    let facts = image(
        PRIVATE,
        vec![Platform {
            os: "windows".into(),
            os_version: None,
            architecture: Some("amd64".into()),
        }],
    );
    let object = pod(spec_with_images(&[PRIVATE]));
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{}", message(&d));
    let lines = d.warning_lines();
    let named = lines
        .iter()
        .find(|w| w.contains("os.version"))
        .expect("a warning");
    assert!(
        named.contains("api:4.2") && named.starts_with("spec.containers[0].image: "),
        "{named}"
    );
    assert!(named.chars().count() <= 256);
    assert_eq!(selector(&d, &object)["kubernetes.io/os"], "windows");
    // Negative: with os.version, or on a Linux pod that cannot run Windows
    // anyway, nothing is said.
    let complete = image(PRIVATE, vec![windows("10.0.20348.1")]);
    let d = with(&object, &eks(), &complete);
    assert!(!warning_codes(&d).contains(&"registry-incomplete"));
    let both = image(
        PRIVATE,
        vec![
            linux("amd64"),
            Platform {
                os: "windows".into(),
                os_version: None,
                architecture: None,
            },
        ],
    );
    let linux_pod = pod(json!({"nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [{"name": "c", "image": PRIVATE}]}));
    let d = with(&linux_pod, &eks(), &both);
    assert!(
        !warning_codes(&d).contains(&"registry-incomplete"),
        "{:?}",
        d.warnings
    );
}
