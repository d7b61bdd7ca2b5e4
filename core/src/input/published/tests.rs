//! The published facts written by `render` and read back by `read`, as the
//! syncer writes them and the policy reads them.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::input::facts::{ImageFacts, NodeFacts, Platform, RuntimeClassFacts};
use crate::input::node::{LabelValue, Node};
use crate::vocab::labels::HOSTNAME_LABEL;
use crate::vocab::ordered::{SortedMap, StringMap};

fn windows(version: &str) -> ImageFacts {
    ImageFacts::Platforms(vec![Platform {
        os: "windows".into(),
        os_version: Some(version.into()),
        architecture: Some("amd64".into()),
    }])
}

fn linux() -> ImageFacts {
    ImageFacts::Platforms(vec![
        Platform {
            os: "linux".into(),
            os_version: None,
            architecture: Some("amd64".into()),
        },
        Platform {
            os: "linux".into(),
            os_version: None,
            architecture: Some("arm64".into()),
        },
    ])
}

fn node(name: &str, os: &str, hostname: &str) -> Node {
    let mut labels = StringMap::new();
    labels.insert("kubernetes.io/os".into(), os.into());
    labels.insert(HOSTNAME_LABEL.into(), hostname.into());
    Node {
        name: name.into(),
        os: Some(os.into()),
        labels,
        ..Node::default()
    }
}

fn maps_of(values: &[Value]) -> Vec<PublishedMap<'_>> {
    values
        .iter()
        .map(|cm| PublishedMap {
            name: cm["metadata"]["name"].as_str().unwrap(),
            index: cm["data"][INDEX_KEY].as_str(),
        })
        .collect()
}

fn images() -> SortedMap<String, ImageFacts> {
    SortedMap::from([
        ("corp/win:1".to_string(), windows("10.0.20348.1")),
        (
            "corp/down:1".to_string(),
            ImageFacts::LookupFailed("timeout".into()),
        ),
        ("corp/app:2".to_string(), linux()),
    ])
}

#[test]
fn images_are_read_back_as_they_were_written_and_others_are_unpublished() {
    let images = images();
    let maps = config_maps(
        &Sources {
            images: &images,
            ..Sources::default()
        },
        "os-placement",
    );
    let cluster = &maps[0];
    assert_eq!(cluster["metadata"]["name"], "os-placement-facts-cluster");
    assert_eq!(cluster["metadata"]["namespace"], "os-placement");
    assert_eq!(cluster["metadata"]["labels"][FACTS_LABEL], "cluster");
    for shard in &maps[1..] {
        let label = shard["metadata"]["labels"][FACTS_LABEL].as_str().unwrap();
        assert!(label.starts_with("shard-"), "{label}");
        // Readable beside the index: the facts document form.
        let readable: Value =
            serde_json::from_str(shard["data"][IMAGES_KEY].as_str().unwrap()).unwrap();
        assert!(readable["images"].is_object());
    }
    let wanted = ["corp/win:1", "corp/down:1", "corp/app:2", "corp/new:1"].map(String::from);
    let found = read(
        maps_of(&maps),
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let facts = found.image_facts(&wanted);
    for (image, expected) in images.iter() {
        assert_eq!(facts.get(image), Some(expected), "{image}");
    }
    assert_eq!(facts.get("corp/new:1"), Some(&ImageFacts::Unpublished));
    // Without node facts published, the node check has none.
    assert!(matches!(
        found.node_facts(&[], "none published"),
        NodeFacts::LookupFailed(e) if e == "none published"
    ));
}

#[test]
fn a_request_reads_only_the_cluster_and_its_shard() {
    let many: SortedMap<String, ImageFacts> = (0..5_000)
        .map(|i| (format!("registry.example/team-{i}/app:1.{i}"), linux()))
        .collect();
    let maps = config_maps(
        &Sources {
            images: &many,
            ..Sources::default()
        },
        "facts",
    );
    // Every shard holds some of them; together, all.
    assert_eq!(maps.len(), 1 + usize::from(SHARDS));
    let wanted = ["registry.example/team-42/app:1.42".to_string()];
    let shard = shard_label_value(shard_of(&wanted[0]));
    let answer: Vec<Value> = maps
        .iter()
        .filter(|cm| {
            let label = cm["metadata"]["labels"][FACTS_LABEL].as_str().unwrap();
            label == "cluster" || label == shard
        })
        .cloned()
        .collect();
    assert_eq!(answer.len(), 2);
    let bytes: usize = answer
        .iter()
        .map(|cm| cm["data"][INDEX_KEY].as_str().unwrap().len())
        .sum();
    // 5,000 images: the answer's index is well under a few kilobytes.
    assert!(bytes < 2_000, "{bytes} bytes");
    let found = read(
        maps_of(&answer),
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert_eq!(found.image_facts(&wanted).get(&wanted[0]), Some(&linux()));
    // Negative: an image of another shard is not in this answer.
    let other = (0..5_000)
        .map(|i| format!("registry.example/team-{i}/app:1.{i}"))
        .find(|image| shard_label_value(shard_of(image)) != shard)
        .unwrap();
    let found = read(
        maps_of(&answer),
        &Wanted {
            images: std::slice::from_ref(&other),
            ..Wanted::default()
        },
    );
    assert_eq!(
        found.image_facts(std::slice::from_ref(&other)).get(&other),
        Some(&ImageFacts::Unpublished)
    );
}

#[test]
fn a_shard_too_big_for_one_config_map_is_split_into_parts() {
    // References that all land in one shard, parts of 8 KB.
    let images: SortedMap<String, ImageFacts> = (0..8_000)
        .map(|i| format!("registry.example/team/app:{i}"))
        .filter(|image| shard_of(image) == 3)
        .map(|image| (image, linux()))
        .collect();
    assert!(images.len() > 20);
    let part_bytes = 8 * 1024;
    let maps = render::config_maps_within(
        &Sources {
            images: &images,
            ..Sources::default()
        },
        "facts",
        part_bytes,
    );
    assert!(maps.len() > 2, "{} ConfigMaps", maps.len());
    for cm in &maps {
        let bytes: usize = cm["data"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_str().unwrap().len())
            .sum();
        assert!(bytes <= part_bytes, "{}: {bytes}", cm["metadata"]["name"]);
    }
    assert_eq!(maps[2]["metadata"]["name"], "os-placement-facts-shard-3-1");
    let wanted: Vec<String> = images.keys().cloned().collect();
    let found = read(
        maps_of(&maps),
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert_eq!(found.images.len(), images.len());
}

#[test]
fn an_image_with_too_many_platforms_is_published_as_a_failed_lookup() {
    let platforms = (0..40_000)
        .map(|i| Platform {
            os: "linux".into(),
            os_version: Some(format!("{i}")),
            architecture: Some("amd64".into()),
        })
        .collect();
    let huge = SortedMap::from([("corp/huge:1".to_string(), ImageFacts::Platforms(platforms))]);
    let maps = config_maps(
        &Sources {
            images: &huge,
            ..Sources::default()
        },
        "facts",
    );
    let wanted = ["corp/huge:1".to_string()];
    let found = read(
        maps_of(&maps),
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert!(
        matches!(found.images.get("corp/huge:1"), Some(ImageFacts::LookupFailed(e)) if e.contains("too many platforms")),
        "{found:?}"
    );
}

#[test]
fn nodes_are_classes_and_the_nodes_a_pod_names_are_looked_up() {
    let nodes = vec![
        node("l-1", "linux", "l-1"),
        node("l-2", "linux", "l-2"),
        node("w-1", "windows", "w-1"),
    ];
    let runtime = SortedMap::new();
    let maps = config_maps(
        &Sources {
            nodes: Some(&nodes),
            runtime_classes: Some(&runtime),
            images: &SortedMap::new(),
            resolved_at: None,
            syncer: None,
            stale: &[],
        },
        "facts",
    );
    let names = ["w-1".to_string(), "gone".to_string()];
    let found = read(
        maps_of(&maps),
        &Wanted {
            names: &names,
            labels: true,
            ..Wanted::default()
        },
    );
    let NodeFacts::Listed(listed) = found.node_facts(&names, "-") else {
        panic!("{found:?}")
    };
    // The Linux class (2), the Windows class less w-1 (none left), and w-1.
    let summary: Vec<(String, u32, Option<bool>)> = listed
        .iter()
        .map(|n| (n.name.clone(), n.count, n.unnamed.as_ref().map(|_| true)))
        .collect();
    assert_eq!(
        summary,
        [
            ("l-1".to_string(), 2, Some(true)),
            ("w-1".to_string(), 1, None)
        ]
    );
    let w1 = &listed[1];
    assert_eq!(
        w1.label_value(HOSTNAME_LABEL),
        LabelValue::Known(Some("w-1".into()))
    );
    // The Linux nodes are none of the names found, and may be any other,
    // "gone" included: a node the syncer has not published yet.
    let linux = &listed[0];
    let known = ["w-1".to_string()];
    assert_eq!(linux.name_value(), LabelValue::NoneOf(&known));
    assert_eq!(
        linux.label_value(HOSTNAME_LABEL),
        LabelValue::NoneOf(&known)
    );
    // Published RuntimeClasses: none, so a name is asked of the cluster.
    assert_eq!(found.runtime_class("windows"), None);
    // Without the full check, the classes' labels are not read: unknown.
    let found = read(maps_of(&maps), &Wanted::default());
    let NodeFacts::Listed(listed) = found.node_facts(&[], "-") else {
        panic!("{found:?}")
    };
    assert_eq!(
        listed[0].label_value("kubernetes.io/os"),
        LabelValue::Unknown
    );
    assert!(listed[0].is_linux() && listed[1].is_windows());
}

#[test]
fn published_runtime_classes_are_found_by_name() {
    let class: crate::input::facts::ClusterRuntimeClass = serde_json::from_value(
        json!({"handler": "runhcs-wcow-process", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}}}),
    )
    .unwrap();
    let runtime = SortedMap::from([("windows-2022".to_string(), class.clone())]);
    let maps = config_maps(
        &Sources {
            runtime_classes: Some(&runtime),
            images: &SortedMap::new(),
            ..Sources::default()
        },
        "facts",
    );
    assert_eq!(maps.len(), 1);
    let wanted = ["windows-2022".to_string(), "other".to_string()];
    let found = read(
        maps_of(&maps),
        &Wanted {
            runtime_classes: &wanted,
            ..Wanted::default()
        },
    );
    assert_eq!(
        found.runtime_class("windows-2022"),
        Some(RuntimeClassFacts::Found(class))
    );
    assert_eq!(found.runtime_class("other"), None);
    // Negative: a class the request does not name is not read.
    let found = read(maps_of(&maps), &Wanted::default());
    assert_eq!(found.runtime_class("windows-2022"), None);
}

#[test]
fn a_document_of_another_version_or_shard_count_is_a_problem_naming_it() {
    for index in [
        r#"{"version": 2, "kind": "cluster", "shards": 128}"#,
        r#"{"version": 1, "kind": "cluster", "shards": 64}"#,
        r#"{"version": 1, "kind": "shard", "shards": 128, "shard": 1, "images": 5}"#,
        r#"{"version": 1, "kind": "shard", "shards": 128}"#,
        r#"{"version": 1, "kind": "other", "shards": 128}"#,
        "not json",
    ] {
        let map = PublishedMap {
            name: "os-placement-facts-shard-1",
            index: Some(index),
        };
        let wanted = ["corp/a:1".to_string()];
        let found = read(
            [map],
            &Wanted {
                images: &wanted,
                ..Wanted::default()
            },
        );
        assert_eq!(found.problems.len(), 1, "{index}");
        assert!(found.problems[0].contains("os-placement-facts-shard-1"));
        assert!(matches!(
            found.image_facts(&wanted).get("corp/a:1"),
            Some(ImageFacts::LookupFailed(_))
        ));
    }
    // Negative: a readable document of this version is no problem.
    let maps = config_maps(
        &Sources {
            images: &images(),
            ..Sources::default()
        },
        "facts",
    );
    assert!(read(maps_of(&maps), &Wanted::default()).problems.is_empty());
}

#[test]
fn resolution_times_are_kept_beside_the_images_of_their_shard() {
    let images = images();
    let times = BTreeMap::from([
        ("corp/win:1".to_string(), 1_700_000_000),
        ("gone:1".to_string(), 1),
    ]);
    let maps = config_maps(
        &Sources {
            images: &images,
            resolved_at: Some(&times),
            ..Sources::default()
        },
        "facts",
    );
    let shard = shard_label_value(shard_of("corp/win:1"));
    let cm = maps
        .iter()
        .find(|cm| cm["metadata"]["labels"][FACTS_LABEL] == shard.as_str())
        .unwrap();
    let kept: BTreeMap<String, u64> =
        serde_json::from_str(cm["data"][RESOLVED_AT_KEY].as_str().unwrap()).unwrap();
    assert_eq!(
        kept,
        BTreeMap::from([("corp/win:1".to_string(), 1_700_000_000)])
    );
}

/// The policy's host answers: ConfigMap lists as policy-server serializes
/// them (escaped indexes, other fields), the cluster ConfigMap read once.
#[test]
fn list_answers_are_read_down_to_names_and_indexes() {
    let images = images();
    let maps = config_maps(
        &Sources {
            images: &images,
            ..Sources::default()
        },
        "facts",
    );
    let shard = shard_label_value(shard_of("corp/win:1"));
    let answer = |label: &str| {
        let items: Vec<&Value> = maps
            .iter()
            .filter(|cm| {
                let l = cm["metadata"]["labels"][FACTS_LABEL].as_str().unwrap();
                l == "cluster" || l == label
            })
            .collect();
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "7"}, "items": items}))
        .unwrap()
    };
    let wanted = ["corp/win:1".to_string()];
    let found = read_answers(
        &[answer(&shard), answer("shard-none")],
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    )
    .unwrap();
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.images.get("corp/win:1"), images.get("corp/win:1"));
    // Negative: an answer that is no list is an error naming it.
    let e = read_answers(&[b"{\"kind\": \"Status\"}".to_vec()], &Wanted::default()).unwrap_err();
    assert!(e.contains("missing field `items`"), "{e}");
}

#[test]
fn selectors_name_the_cluster_and_one_shard() {
    assert_eq!(selector(None), "os-placement.kubewarden.io/facts=cluster");
    assert_eq!(
        selector(Some(17)),
        "os-placement.kubewarden.io/facts in (cluster,shard-17)"
    );
    assert_eq!(shard_config_map_name(17, 0), "os-placement-facts-shard-17");
    assert_eq!(
        shard_config_map_name(17, 2),
        "os-placement-facts-shard-17-2"
    );
}

/// Launchable capacity is published beside the classes, not counted as
/// nodes, and read back as it was (its blocked reason too), with or
/// without labels kept.
#[test]
fn capacity_is_published_apart_and_read_back() {
    let pools = [
        json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "win"},
            "spec": {"template": {"metadata": {"labels": {"team": "shop"}}, "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "w"},
                "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]}}}}),
        json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "w"},
            "spec": {"amiFamily": "Windows2022"}}),
        json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gone"},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"}}}}}),
    ];
    let mut nodes = vec![node("n-1", "linux", "n-1")];
    let capacity = crate::input::capacity::from_objects(&pools);
    nodes.extend(capacity.iter().cloned());
    let maps = config_maps(
        &Sources {
            nodes: Some(&nodes),
            ..Sources::default()
        },
        "facts",
    );
    let document: Value =
        serde_json::from_str(maps[0]["data"][INDEX_KEY].as_str().unwrap()).unwrap();
    assert_eq!(document["nodes"], 1, "capacity is not a node: {document}");
    assert_eq!(document["classes"].as_array().unwrap().len(), 1);
    assert_eq!(document["capacity"][0]["source"], "NodePool win");
    assert_eq!(
        document["capacity"][1]["blocked"],
        "its EC2NodeClass x does not exist"
    );
    for labels in [true, false] {
        let found = read(
            maps_of(&maps),
            &Wanted {
                labels,
                ..Wanted::default()
            },
        );
        let NodeFacts::Listed(read_back) = found.node_facts(&[], "none") else {
            panic!("node facts are published");
        };
        let launchable: Vec<&Node> = read_back.iter().filter(|n| !n.exists()).collect();
        assert_eq!(launchable.len(), 2, "{read_back:?}");
        assert_eq!(
            launchable[0].build().map(|b| b.to_string()).as_deref(),
            Some("10.0.20348")
        );
        assert_eq!(launchable[0].describe(), "NodePool win (none yet)");
        assert_eq!(
            launchable[1].blocked.as_deref(),
            Some("its EC2NodeClass x does not exist")
        );
        if labels {
            assert_eq!(launchable[0].labels, capacity[0].labels);
            assert_eq!(launchable[0].taints, capacity[0].taints);
            assert_eq!(launchable[0].varying, capacity[0].varying);
            assert_eq!(launchable[0].name_value(), LabelValue::Fresh);
        }
    }
    // Negative: without NodePools the document has no capacity.
    let maps = config_maps(
        &Sources {
            nodes: Some(&nodes[..1]),
            ..Sources::default()
        },
        "facts",
    );
    assert!(!maps[0]["data"][INDEX_KEY]
        .as_str()
        .unwrap()
        .contains("capacity"));
}

/// Kinds the syncer could not read for too long are named in the cluster
/// document, and only there; readers of format 1 read the rest as before.
#[test]
fn stale_kinds_are_named_in_the_cluster_document_and_readers_go_on() {
    let images = images();
    let stale = [crate::input::published::Stale {
        kind: "Node".to_string(),
        since: 1_795_766_100,
    }];
    let maps = config_maps(
        &Sources {
            images: &images,
            stale: &stale,
            ..Sources::default()
        },
        "os-placement",
    );
    let index: Value = serde_json::from_str(maps[0]["data"]["index"].as_str().unwrap()).unwrap();
    assert_eq!(
        index["stale"],
        serde_json::json!([{"kind": "Node", "since": 1_795_766_100}])
    );
    for shard in &maps[1..] {
        assert!(!shard["data"]["index"].as_str().unwrap().contains("stale"));
    }
    let wanted = ["corp/win:1".to_string()];
    let found = read(
        maps_of(&maps),
        &Wanted {
            images: &wanted,
            ..Wanted::default()
        },
    );
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(
        found.image_facts(&wanted).get("corp/win:1"),
        images.get("corp/win:1")
    );
    // Negative: none stale, no key at all.
    let plain = config_maps(
        &Sources {
            images: &images,
            ..Sources::default()
        },
        "os-placement",
    );
    assert!(!plain[0]["data"]["index"]
        .as_str()
        .unwrap()
        .contains("stale"));
}
