//! The published facts through Kubewarden's own policy-server
//! (`$KUBEWARDEN_BIN`, else `../shared/kubewarden`) when the policy may not
//! read them. The fake Kubernetes API (`os_placement_e2e::faults::api`)
//! holds published facts that place the image on Windows Server 2022; a
//! policy granted `v1/ConfigMap` reads them, one whose
//! `contextAwareResources` lacks it is refused by policy-server ("Policy
//! has not been granted access to Kubernetes v1/ConfigMap resources. The
//! violation has been reported.", policy-evaluator `runtimes/callback.rs`),
//! and so is one not granted the host capability. The refused ones warn once,
//! naming the grant to add, never the facts syncer, which did nothing wrong;
//! our host, refusing in policy-server's words, answers the same. A
//! policy-server that cannot reach its API server is quoted, and named.

use std::sync::Arc;
use std::time::Duration;

use os_placement_core::{published, ImageFacts, Platform, SortedMap, DEFAULT_FACTS_NAMESPACE};
use os_placement_e2e::capabilities::{Cluster, ContextHost};
use os_placement_e2e::external;
use os_placement_e2e::faults::api::{write_kubeconfig, FakeApi};
use os_placement_e2e::policy_server::{comparable, PolicyServer};
use os_placement_e2e::registry::free_port;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, repo_root, wasm_path, LoadedPolicy, PolicyModule};
use serde_json::{json, Value};
use xtask::annotate::{annotate_file, AnnotateFiles};

/// A private image whose reference says nothing of its OS.
const IMAGE: &str = "registry.corp.example/billing/api:4.2";

/// What the warning of a policy refused `v1/ConfigMap` says of [`deployment`].
const CONFIGMAPS_WITHHELD: &str = "spec.template.spec.containers[0].image: the image facts cannot be read (policy-server denies v1/ConfigMap), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; add v1/ConfigMap to the policy's contextAwareResources";

/// What the warning of a policy refused the host capability says.
const CAPABILITY_WITHHELD: &str = "spec.template.spec.containers[0].image: the image facts cannot be read (policy-server denies kubernetes/list_resources_by_namespace), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; add it to the policy's hostCapabilities";

/// The words of the warning for a failure the syncer published.
const SYNCER_BLAMED: &str = "check that the syncer may reach the registry";

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "billing"},
        "spec": {"selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": IMAGE}]}}}})
}

/// The facts ConfigMaps the syncer would publish for [`IMAGE`], a Windows
/// Server 2022 image, and their namespace.
fn published_objects() -> Vec<Value> {
    let images = SortedMap::from([(
        IMAGE.to_string(),
        ImageFacts::Platforms(vec![Platform {
            os: "windows".into(),
            os_version: Some("10.0.20348.2700".into()),
            architecture: Some("amd64".into()),
        }]),
    )]);
    let mut objects = published::config_maps(
        &published::Sources {
            images: &images,
            ..published::Sources::default()
        },
        DEFAULT_FACTS_NAMESPACE,
    );
    objects.push(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": DEFAULT_FACTS_NAMESPACE}}));
    objects
}

/// The response's warnings.
fn warnings(answer: &Value) -> Vec<String> {
    answer["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[test]
fn policy_server_refusing_the_facts_names_the_grant_not_the_syncer() {
    let Some(binary) = external::kubewarden_tool("policy-server").unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("annotated-policy.wasm");
    let root = repo_root();
    let files = AnnotateFiles {
        wasm: &wasm_path(),
        metadata: &root.join("metadata.yml"),
        usage: Some(&root.join("README.md")),
        output: &wasm,
    };
    annotate_file(&files, "v1").expect("run `make build` first");
    let api = FakeApi::start(published_objects()).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();

    let taint = json!({"key": "os", "value": "windows", "effect": "NoSchedule"});
    let eks = json!({"windowsTaint": taint});
    let strict = json!({"windowsTaint": taint, "lookupFailure": "reject"});
    let all_resources = json!([{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"},
                               {"apiVersion": "v1", "kind": "ConfigMap"}]);
    let no_configmaps = json!([{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"}]);
    let no_list = json!([
        "kubernetes/get_resource",
        "oci/v1/oci_manifest",
        "oci/v1/oci_manifest_config"
    ]);
    // (id, settings, contextAwareResources, hostCapabilities): the
    // controller grants a ClusterAdmissionPolicy every capability ("*").
    let policies = [
        ("granted", &eks, &all_resources, json!(["*"])),
        ("configmaps-withheld", &eks, &no_configmaps, json!(["*"])),
        (
            "configmaps-withheld-reject",
            &strict,
            &no_configmaps,
            json!(["*"]),
        ),
        ("capability-withheld", &eks, &all_resources, no_list),
    ];
    let entries: serde_json::Map<String, Value> = policies
        .iter()
        .map(|(id, settings, resources, capabilities)| {
            let entry = json!({"module": format!("file://{}", wasm.display()),
                "settings": settings, "allowedToMutate": true,
                "contextAwareResources": resources, "hostCapabilities": capabilities});
            ((*id).to_string(), entry)
        })
        .collect();
    let mut server = PolicyServer::spawn_with_kubeconfig(
        &binary,
        dir.path(),
        &Value::Object(entries),
        None,
        &kubeconfig,
    )
    .unwrap();
    server
        .wait_ready(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let review = review_of(&admission_request(&deployment(), "CREATE", None, None));
    let answer = |id: &str| {
        let theirs = comparable(&server.validate(id, &review).unwrap());
        eprintln!("policy-server {id}: {theirs}");
        theirs
    };

    // Granted: the published platforms place the image, nothing to say.
    let granted = answer("granted");
    assert_eq!(granted["allowed"], true, "{granted}");
    assert!(warnings(&granted).is_empty(), "{granted}");
    let selector = granted["patch"].to_string();
    assert!(
        selector.contains("windows") && selector.contains("10.0.20348"),
        "{granted}"
    );

    // ConfigMaps withheld: one warning, the grant to add; the reference
    // rules apply, as without facts: Linux by default, which the Windows
    // taint already keeps off Windows nodes, so nothing is added.
    let withheld = answer("configmaps-withheld");
    assert_eq!(withheld["allowed"], true, "{withheld}");
    assert_eq!(warnings(&withheld), [CONFIGMAPS_WITHHELD], "{withheld}");
    assert!(CONFIGMAPS_WITHHELD.chars().count() <= 256);
    assert!(!withheld.to_string().contains("syncer"), "{withheld}");
    assert_eq!(withheld["patch"], Value::Null, "{withheld}");

    // The host capability withheld: its name and where to grant it.
    let capability = answer("capability-withheld");
    assert_eq!(capability["allowed"], true, "{capability}");
    assert_eq!(warnings(&capability), [CAPABILITY_WITHHELD], "{capability}");
    assert!(
        !capability.to_string().contains(SYNCER_BLAMED),
        "{capability}"
    );

    // lookupFailure: reject: a rejection with the same words.
    let rejected = answer("configmaps-withheld-reject");
    assert_eq!(rejected["allowed"], false, "{rejected}");
    let message = rejected["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("policy-server denies v1/ConfigMap")
            && message.ends_with("add v1/ConfigMap to the policy's contextAwareResources, or set lookupFailure: warn"),
        "{rejected}"
    );
    assert!(!message.contains("syncer"), "{rejected}");

    // Granted, but policy-server cannot reach the API server (nothing
    // listens): its own words, and where to look, still not the syncer.
    drop(server);
    let down = dir.path().join("kubeconfig-down");
    let nowhere = format!("http://127.0.0.1:{}", free_port().unwrap());
    write_kubeconfig(&down, &nowhere).unwrap();
    let granted_only = json!({"granted": {"module": format!("file://{}", wasm.display()),
        "settings": eks, "allowedToMutate": true,
        "contextAwareResources": all_resources, "hostCapabilities": ["*"]}});
    let work = dir.path().join("unreachable");
    std::fs::create_dir_all(&work).unwrap();
    let mut unreachable =
        PolicyServer::spawn_with_kubeconfig(&binary, &work, &granted_only, None, &down).unwrap();
    unreachable
        .wait_ready(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let failed = comparable(&unreachable.validate("granted", &review).unwrap());
    eprintln!("policy-server without its API server: {failed}");
    assert_eq!(failed["allowed"], true, "{failed}");
    let lines = warnings(&failed);
    assert_eq!(lines.len(), 1, "{failed}");
    let line = &lines[0];
    assert!(
        line.starts_with(
            "spec.template.spec.containers[0].image: the image facts cannot be read ("
        ) && line.contains(IMAGE)
            && line.ends_with("; check policy-server's access to ConfigMaps in os-placement"),
        "{line}"
    );
    assert!(
        line.chars().count() <= 256 && !line.contains('\n'),
        "{line}"
    );
    assert!(!line.contains("syncer"), "{line}");

    // Our host refuses in policy-server's words: the same answers.
    let bytes = std::fs::read(&wasm).unwrap();
    let cluster = || Cluster::from_objects(published_objects());
    let ours = [
        (
            "configmaps-withheld",
            ContextHost::new()
                .with_cluster(cluster().allowing(&[("node.k8s.io/v1", "RuntimeClass")])),
            &withheld,
        ),
        (
            "capability-withheld",
            ContextHost::new().with_cluster(cluster()).granting(&[
                "kubernetes/get_resource",
                "oci/v1/oci_manifest",
                "oci/v1/oci_manifest_config",
            ]),
            &capability,
        ),
    ];
    for (id, host, theirs) in ours {
        let host = Arc::new(host);
        let module = Arc::new(
            PolicyModule::from_bytes(&bytes)
                .unwrap()
                .with_host_calls(host.clone()),
        );
        let expected = LoadedPolicy::load(module, eks.clone())
            .unwrap()
            .review(&review)
            .unwrap();
        assert_eq!(theirs, &comparable(&expected), "{id}");
        // Refused once: the equality selectors are not tried.
        let lists = host
            .calls()
            .iter()
            .filter(|c| c.operation == "list_resources_by_namespace")
            .count();
        assert_eq!(lists, 1, "{id}: {:?}", host.calls());
    }
}
