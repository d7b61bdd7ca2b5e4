//! The rules the door applies are metadata.yml's `rules` (which the
//! ClusterAdmissionPolicy copies): the same kinds, operations and
//! subresources, every kind from the core.

use std::collections::BTreeSet;
use std::path::Path;

use os_placement_core::{Operation, SUPPORTED_KINDS};
use os_placement_door::request::{group_version, resource_of};
use os_placement_door::rules::{select, selected_kinds};
use os_placement_door::{admission_request, read_one};
use serde_json::{json, Value};

/// (group, resource, subresource, operation)
type Rule = (String, String, String, String);

fn metadata_rules() -> BTreeSet<Rule> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../metadata.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let metadata = read_one(&text).unwrap().unwrap().to_json();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    let mut rules = BTreeSet::new();
    for rule in metadata["rules"].as_array().unwrap() {
        assert_eq!(strings(&rule["apiVersions"]), ["v1"], "{rule}");
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                let (resource, sub) = resource.split_once('/').unwrap_or((&resource, ""));
                for operation in strings(&rule["operations"]) {
                    rules.insert((
                        group.clone(),
                        resource.to_owned(),
                        sub.to_owned(),
                        operation,
                    ));
                }
            }
        }
    }
    rules
}

fn door_rules() -> BTreeSet<Rule> {
    let mut rules = BTreeSet::new();
    for kind in selected_kinds() {
        let name = format!("{kind:?}");
        let group = kind.api_group();
        let api_version = if group.is_empty() {
            "v1".to_owned()
        } else {
            format!("{group}/v1")
        };
        let object = json!({"apiVersion": api_version, "kind": name, "metadata": {"name": "x"}});
        for operation in [
            Operation::Create,
            Operation::Update,
            Operation::Delete,
            Operation::Connect,
        ] {
            for sub in [
                None,
                Some("ephemeralcontainers"),
                Some("status"),
                Some("scale"),
            ] {
                let request = admission_request(&object, operation, None, sub);
                if select(&request).is_ok() {
                    let (group, _) = group_version(&api_version);
                    rules.insert((
                        group.to_owned(),
                        resource_of(&name),
                        sub.unwrap_or("").to_owned(),
                        operation.to_string(),
                    ));
                }
            }
        }
    }
    rules
}

#[test]
fn the_door_selects_exactly_what_metadata_yml_rules_select() {
    let metadata = metadata_rules();
    assert!(metadata.len() >= 16, "{metadata:?}");
    assert_eq!(door_rules(), metadata);
}

#[test]
fn the_selected_kinds_are_every_kind_of_the_core() {
    let names: Vec<String> = selected_kinds().iter().map(|k| format!("{k:?}")).collect();
    assert_eq!(names.join(", "), SUPPORTED_KINDS);
    let resources: BTreeSet<String> = metadata_rules().into_iter().map(|(_, r, _, _)| r).collect();
    let kinds: BTreeSet<String> = selected_kinds()
        .iter()
        .map(|k| resource_of(&format!("{k:?}")))
        .collect();
    assert_eq!(resources, kinds);
}
