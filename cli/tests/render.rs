//! `os-placement facts render`: `kubectl get nodes -o json` of a large
//! cluster and an image facts document in, the ConfigMaps the syncer would
//! publish out, as a YAML stream or a `v1` List; and `check --facts` gives
//! the same answers with them as with the Node list.

use std::path::{Path, PathBuf};

use os_placement_core::published::{self, Wanted};
use os_placement_door::read_stream;
use serde_json::{json, Value};

use crate::common::{code, run, stderr, stdout};

/// A folder of its own under the system's temporary folder.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("os-placement-render-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `kubectl get nodes -o json` of an EKS-like cluster of `count` nodes:
/// managed node groups' labels, a tenth Windows 2019 or 2022, tainted.
fn node_list(count: usize) -> Value {
    let items: Vec<Value> = (0..count)
        .map(|i| {
            let windows = i % 10 == 7;
            let arch = if !windows && i % 3 == 0 { "arm64" } else { "amd64" };
            let os = if windows { "windows" } else { "linux" };
            let build = if i % 4 == 3 { "10.0.20348" } else { "10.0.17763" };
            let name = format!("ip-10-{}-{}-{}.us-west-2.compute.internal", i / 65536, (i / 256) % 256, i % 256);
            let zone = ["us-west-2a", "us-west-2b", "us-west-2c"][i % 3];
            let mut labels = json!({"kubernetes.io/os": os, "kubernetes.io/arch": arch,
                "beta.kubernetes.io/os": os, "beta.kubernetes.io/arch": arch,
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": if windows { "m5.xlarge" } else { "m6i.large" },
                "eks.amazonaws.com/nodegroup": format!("{os}-{arch}"),
                "eks.amazonaws.com/capacityType": "ON_DEMAND"});
            let mut spec = json!({"providerID": format!("aws:///{zone}/i-{i:017x}")});
            if windows {
                labels["node.kubernetes.io/windows-build"] = json!(build);
                spec["taints"] = json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}]);
            }
            json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": format!("uid-{i}"), "labels": labels},
                "spec": spec,
                "status": {"nodeInfo": {"operatingSystem": os, "architecture": arch,
                    "kernelVersion": if windows { format!("{build}.2700") } else { "6.1.112".to_string() }}}})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// An image facts document of `count` images, the first a private Windows one.
fn images(count: usize) -> Value {
    let mut images = serde_json::Map::new();
    images.insert(
        "registry.corp.example/billing/api:4.2".into(),
        json!({"platforms": [{"os": "windows", "osVersion": "10.0.20348.2700", "architecture": "amd64"}]}),
    );
    for i in 1..count {
        images.insert(
            format!("123456789012.dkr.ecr.us-west-2.amazonaws.com/team-{}/service-{i}:v{}.{}", i % 97, i % 13, i % 7),
            json!({"platforms": [{"os": "linux", "architecture": "amd64"}, {"os": "linux", "architecture": "arm64"}]}),
        );
    }
    json!({"images": images})
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn ten_thousand_nodes_and_fifty_thousand_images_render_under_the_object_limit() {
    let dir = scratch("large");
    let nodes = write(&dir, "nodes.json", &node_list(10_000));
    let facts = write(&dir, "images.json", &images(50_000));
    let output = run(&["facts", "render", &nodes, &facts, "-o", "json"], None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let list: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        (list["apiVersion"].as_str(), list["kind"].as_str()),
        (Some("v1"), Some("List"))
    );
    let maps = list["items"].as_array().unwrap();
    assert_eq!(maps.len(), 1 + usize::from(published::SHARDS));
    for map in maps {
        assert_eq!(map["metadata"]["namespace"], "os-placement");
        let bytes: usize = map["data"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_str().unwrap().len())
            .sum();
        // The API server refuses objects over 1 MiB.
        assert!(
            bytes < 1_000_000,
            "{}: {bytes} bytes",
            map["metadata"]["name"]
        );
    }
    let cluster: Value = serde_json::from_str(maps[0]["data"]["index"].as_str().unwrap()).unwrap();
    assert_eq!(cluster["nodes"], 10_000);
    let classes = cluster["classes"].as_array().unwrap();
    let counted: u64 = classes.iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 10_000);
    // Classes, not nodes: the varied hostnames are left out of them.
    assert!(classes.len() < 40, "{} classes", classes.len());
    // Every image reads back as the policy reads it.
    let maps_of: Vec<published::PublishedMap<'_>> = maps
        .iter()
        .map(|m| published::PublishedMap {
            name: m["metadata"]["name"].as_str().unwrap(),
            index: m["data"]["index"].as_str(),
        })
        .collect();
    let wanted: Vec<String> = images(50_000)["images"]
        .as_object()
        .unwrap()
        .keys()
        .step_by(997)
        .cloned()
        .collect();
    let found = published::read(
        maps_of,
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert_eq!(found.images.len(), wanted.len());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn yaml_and_json_hold_the_same_config_maps_and_a_bad_file_is_named() {
    let dir = scratch("formats");
    let nodes = write(&dir, "nodes.json", &node_list(40));
    let classes = "../e2e/clusters/eks-mixed/runtimeclasses.yaml";
    let json_out = run(&["facts", "render", &nodes, classes, "-o", "json"], None);
    let yaml_out = run(
        &["facts", "render", &nodes, classes, "--namespace", "facts"],
        None,
    );
    assert_eq!(
        (code(&json_out), code(&yaml_out)),
        (0, 0),
        "{}",
        stderr(&yaml_out)
    );
    let from_json: Vec<Value> = serde_json::from_str::<Value>(&stdout(&json_out)).unwrap()["items"]
        .as_array()
        .unwrap()
        .clone();
    let from_yaml: Vec<Value> = read_stream(&stdout(&yaml_out))
        .into_iter()
        .map(|d| d.unwrap().root.to_json())
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(from_json.len(), from_yaml.len());
    for (j, y) in from_json.iter().zip(&from_yaml) {
        assert_eq!(j["data"], y["data"]);
        assert_eq!(y["metadata"]["namespace"], "facts");
    }
    let cluster: Value =
        serde_json::from_str(from_json[0]["data"]["index"].as_str().unwrap()).unwrap();
    assert!(
        cluster["runtimeClasses"]["windows-2022"].is_object(),
        "{cluster}"
    );
    // Negative: what is not facts is refused, naming the file and line.
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n").unwrap();
    let output = run(&["facts", "render", bad.to_str().unwrap()], None);
    assert_eq!(code(&output), 2);
    assert!(stdout(&output).is_empty());
    assert!(
        stderr(&output).contains(&format!("{}:1:1: document is a Pod", bad.display())),
        "{}",
        stderr(&output)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `check --facts` answers alike with the Node list and with what
/// `facts render` wrote for it, in reject mode where the nodes decide.
#[test]
fn check_answers_alike_with_the_node_list_and_the_rendered_facts() {
    let dir = scratch("check");
    let nodes = write(&dir, "nodes.json", &node_list(300));
    let rendered = run(&["facts", "render", &nodes, "-o", "json"], None);
    assert_eq!(code(&rendered), 0, "{}", stderr(&rendered));
    let published_path = dir.join("published.json");
    std::fs::write(&published_path, stdout(&rendered)).unwrap();
    let settings = dir.join("settings.yaml");
    std::fs::write(
        &settings,
        "nodeInventory: reject\nimageLookup: off\nwindowsTaint: {key: os, value: windows, effect: NoSchedule}\n",
    )
    .unwrap();
    let manifests = "../examples/manifests";
    let check = |facts: &str| {
        let output = run(
            &[
                "check",
                manifests,
                "-o",
                "json",
                "--settings",
                settings.to_str().unwrap(),
                "--facts",
                facts,
            ],
            None,
        );
        let report: Value = serde_json::from_str(&stdout(&output))
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
        (code(&output), report["results"].clone())
    };
    let (list_code, from_list) = check(&nodes);
    let (published_code, from_published) = check(published_path.to_str().unwrap());
    assert_eq!(list_code, published_code);
    let verdicts = |results: &Value| -> Vec<(String, String, Value)> {
        results
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].to_string(),
                    r["verdict"].to_string(),
                    r["patch"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(verdicts(&from_list), verdicts(&from_published));
    // Negative: the node check decided some of them (Windows 2025 images,
    // say, run on none of these nodes).
    assert!(
        from_list.to_string().contains("no-node"),
        "no answer came from the node check"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `kubectl get nodes,nodepools,ec2nodeclasses -o yaml` as `--facts` and
/// through `facts render`: a Windows Deployment on a cluster with Linux
/// nodes only is admitted for the windows2022 NodePool, a Windows 2025 one
/// rejected naming the NodePool whose AMIs are not found, alike both ways.
#[test]
fn nodepools_in_the_facts_count_as_nodes_both_ways() {
    let dir = scratch("nodepools");
    let cluster = "../e2e/clusters/eks-karpenter/cluster.yaml";
    let rendered = run(&["facts", "render", cluster], None);
    assert_eq!(code(&rendered), 0, "{}", stderr(&rendered));
    assert!(
        stdout(&rendered).contains("NodePool windows2022"),
        "{}",
        stdout(&rendered)
    );
    let published_path = dir.join("published.yaml");
    std::fs::write(&published_path, stdout(&rendered)).unwrap();
    let check = |manifest: &str, facts: &str| {
        let output = run(
            &[
                "check",
                manifest,
                "-o",
                "json",
                "--settings",
                "../examples/settings/eks-karpenter.yaml",
                "--facts",
                facts,
            ],
            None,
        );
        let report: Value = serde_json::from_str(&stdout(&output))
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
        (code(&output), report["results"][0].clone())
    };
    let published = published_path.to_str().unwrap();
    for facts in [cluster, published] {
        let (admitted, result) = check(
            "../examples/manifests/karpenter-iis-2022-deployment.yaml",
            facts,
        );
        assert_eq!(admitted, 0, "{facts}: {result}");
        assert!(!result.to_string().contains("no-node"), "{facts}: {result}");
        let (rejected, result) = check(
            "../examples/manifests/karpenter-servercore-2025-deployment.yaml",
            facts,
        );
        assert_eq!(rejected, 1, "{facts}: {result}");
        let text = result.to_string();
        assert!(
            text.contains("NodePool windows2025") && text.contains("AMIsReady is False"),
            "{facts}: {text}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
