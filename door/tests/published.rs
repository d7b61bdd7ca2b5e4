//! The node facts as the syncer and `os-placement facts render` publish them
//! (classes, with node names in the shards) give every case the answer the
//! full Node list gives: the same verdict, codes, field paths and patch, in
//! every inventory mode and with the taints read from the nodes. The full
//! list is what `kubectl get nodes,runtimeclasses -o yaml` prints; the
//! published form is what the core's builder writes for it, read back as
//! the policy reads it.

use std::path::{Path, PathBuf};

use os_placement_core::{Operation, Settings};
use os_placement_door::{objects, read_settings, read_stream, Answer, Found, HostFacts, Options};
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The published ConfigMaps for what `text` holds, as a `v1` `List`.
fn rendered(text: &str) -> String {
    let maps = HostFacts::read(text).unwrap().published("os-placement");
    json!({"apiVersion": "v1", "kind": "List", "items": maps}).to_string()
}

/// An EKS-like cluster: two zones, Linux amd64 and arm64 node groups,
/// Windows 2019 and 2022 tainted `os=windows:NoSchedule`, hostnames that
/// are the node names; and its two RuntimeClasses.
fn eks_like(count: usize) -> String {
    let nodes: Vec<Value> = (0..count)
        .map(|i| {
            let windows = i % 7 == 3;
            let build = if i % 2 == 0 { "10.0.17763" } else { "10.0.20348" };
            let arch = if !windows && i % 3 == 0 { "arm64" } else { "amd64" };
            let os = if windows { "windows" } else { "linux" };
            let name = format!("ip-10-0-{}-{}.ec2.internal", i / 200, i % 200);
            let zone = if i % 2 == 0 { "us-east-1a" } else { "us-east-1b" };
            let mut labels = json!({"kubernetes.io/os": os, "kubernetes.io/arch": arch,
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                "eks.amazonaws.com/nodegroup": format!("{os}-{arch}")});
            let mut spec = json!({});
            if windows {
                labels["node.kubernetes.io/windows-build"] = json!(build);
                spec = json!({"taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]});
            }
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                   "spec": spec, "status": {"nodeInfo": {"operatingSystem": os, "architecture": arch}}})
        })
        .collect();
    let classes = read(&repo_root().join("e2e/clusters/eks-mixed/runtimeclasses.yaml"));
    format!(
        "{}\n---\n{classes}",
        json!({"apiVersion": "v1", "kind": "List", "items": nodes})
    )
}

/// Every cluster fixture of `e2e/clusters`, and an EKS-like one of 300 nodes.
fn clusters() -> Vec<(String, String)> {
    let dir = repo_root().join("e2e/clusters");
    let mut found: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .map(|p| {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&p)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
                .collect();
            files.sort();
            let text: Vec<String> = files.iter().map(|f| read(f)).collect();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, text.join("\n---\n"))
        })
        .collect();
    found.sort();
    assert!(found.len() >= 3, "the cluster fixtures were not found");
    found.push(("eks-like-300".to_string(), eks_like(300)));
    found
}

/// The manifest and settings of every example case.
fn cases() -> Vec<(String, String, String)> {
    let text = read(&repo_root().join("examples/cases.yaml"));
    let mut cases = Vec::new();
    for document in read_stream(&text) {
        let root = document.unwrap().root.to_json();
        for case in root.as_array().into_iter().flatten() {
            let (Some(name), Some(manifest), Some(settings)) = (
                case["name"].as_str(),
                case["manifest"].as_str(),
                case["settings"].as_str(),
            ) else {
                continue;
            };
            cases.push((
                name.to_string(),
                read(&repo_root().join(manifest)),
                read(&repo_root().join(settings)),
            ));
        }
    }
    assert!(cases.len() > 40, "{} cases", cases.len());
    cases
}

/// The settings of a case with `extra` keys set.
fn with(settings: &str, extra: &Value) -> Settings {
    let mut value = read_settings_value(settings);
    for (key, v) in extra.as_object().unwrap() {
        value[key] = v.clone();
    }
    read_settings(&value.to_string()).unwrap()
}

fn read_settings_value(text: &str) -> Value {
    let document = read_stream(text).into_iter().next().unwrap().unwrap();
    match document.root.to_json() {
        Value::Null => json!({}),
        value => value,
    }
}

/// What must be equal: everything but the node names a message lists.
fn comparable(answer: &Answer) -> Value {
    let findings = |found: &[os_placement_door::Finding]| -> Vec<Value> {
        found
            .iter()
            .map(|f| {
                let f = serde_json::to_value(f).unwrap();
                json!({"code": f["code"], "path": f["path"],
                       "message": without_names(f["message"].as_str().unwrap_or(""))})
            })
            .collect()
    };
    json!({
        "verdict": serde_json::to_value(answer.verdict).unwrap(),
        "patch": answer.patch,
        "violations": findings(&answer.violations),
        "warnings": findings(&answer.warnings),
    })
}

/// A message with the list of node names after "(nodes " cut off: the
/// full list names nodes, the classes name one node of each class.
fn without_names(message: &str) -> String {
    match message.split_once(" (nodes ") {
        Some((before, _)) => before.to_string(),
        None => message.to_string(),
    }
}

fn answers(text: &str, settings: &Settings, facts: &HostFacts) -> Vec<Value> {
    let options = Options {
        settings,
        operation: Operation::Create,
        old_object: None,
        facts: Some(facts),
        origin: Default::default(),
    };
    read_stream(text)
        .into_iter()
        .flat_map(|document| {
            let document = document.unwrap();
            objects(&document)
                .into_iter()
                .filter_map(|found| match found {
                    Found::Object(subject) => Some(comparable(&os_placement_door::evaluate(
                        &options.call(&subject),
                    ))),
                    Found::NotAnObject(_) => None,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Settings added to each case's: every inventory mode and the taints read
/// from the nodes. Images are not looked up: the node facts are compared.
const VARIANTS: [&str; 6] = [
    r#"{"imageLookup": "off"}"#,
    r#"{"imageLookup": "off", "nodeInventory": "warn"}"#,
    r#"{"imageLookup": "off", "nodeInventory": "reject"}"#,
    r#"{"imageLookup": "off", "nodeInventory": "reject", "windowsTaint": "fromNodes"}"#,
    r#"{"imageLookup": "off", "nodeInventory": "warn", "pinArchitecture": true}"#,
    r#"{"imageLookup": "off", "linuxTaint": "fromNodes", "windowsTaint": "fromNodes"}"#,
];

#[test]
fn published_classes_answer_every_case_as_the_node_list_does() {
    let cases = cases();
    let mut compared = 0;
    let mut node_checked = 0;
    for (cluster, listing) in clusters() {
        let full = HostFacts::read(&listing).unwrap();
        let published = HostFacts::read(&rendered(&listing)).unwrap();
        for (name, manifest, settings) in &cases {
            for variant in VARIANTS {
                let settings = with(settings, &serde_json::from_str(variant).unwrap());
                let from_list = answers(manifest, &settings, &full);
                let from_classes = answers(manifest, &settings, &published);
                assert_eq!(
                    from_list, from_classes,
                    "{name} on {cluster} with {variant}: the node list and the published classes differ"
                );
                compared += from_list.len();
                node_checked += from_list
                    .iter()
                    .filter(|a| {
                        a.to_string().contains("NoNode") || a.to_string().contains("no-node")
                    })
                    .count();
            }
        }
    }
    assert!(compared > 1_000, "{compared} answers compared");
    // Negative: the comparison covers answers the node check decided.
    assert!(node_checked > 0, "no answer came from the node check");
}

/// DaemonSet pods select their node by name (`matchFields`), and pods may
/// select a hostname: each node named is judged as with the full list. A
/// name no node has is, with the published facts, possibly a node the
/// syncer has not published yet: such a pod is never rejected for it.
#[test]
fn pods_that_name_their_node_are_judged_as_with_the_node_list() {
    let settings = read_settings(r#"{"imageLookup": "off", "nodeInventory": "reject", "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}}"#).unwrap();
    for (cluster, listing) in clusters() {
        let full = HostFacts::read(&listing).unwrap();
        let published = HostFacts::read(&rendered(&listing)).unwrap();
        let names: Vec<String> = full
            .render_sources()
            .nodes
            .unwrap()
            .iter()
            .filter(|n| n.exists())
            .map(|n| n.name.clone())
            .take(40)
            .collect();
        let mut rejected = 0;
        for name in &names {
            for (image, by_field) in [
                ("nginx:1.27", true),
                ("mcr.microsoft.com/windows/servercore:ltsc2022", true),
                ("nginx:1.27", false),
            ] {
                let affinity = if by_field {
                    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}})
                } else {
                    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}]}}})
                };
                let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                    "spec": {"affinity": affinity, "containers": [{"name": "c", "image": image}]}})
                .to_string();
                let from_list = answers(&pod, &settings, &full);
                let from_classes = answers(&pod, &settings, &published);
                assert_eq!(
                    from_list, from_classes,
                    "{cluster}: {name} {image} by_field={by_field}"
                );
                rejected += usize::from(from_list[0]["verdict"] == "rejected");
            }
        }
        // Negative: some of those pods fit no node (a Linux pod bound to a
        // Windows node), and were found out.
        assert!(rejected > 0, "{cluster}: no pod was rejected");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-joined-a-second-ago"]}]}]}}},
                "containers": [{"name": "c", "image": "nginx:1.27"}]}})
        .to_string();
        assert_eq!(answers(&pod, &settings, &full)[0]["verdict"], "rejected");
        assert_ne!(
            answers(&pod, &settings, &published)[0]["verdict"],
            "rejected",
            "{cluster}"
        );
    }
}
