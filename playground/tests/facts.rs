//! With the same facts, the page answers as the policy does in a cluster.
//! Each case of `playground/examples/cases.yaml` goes through the
//! playground adapter (with the facts text the page builds) and through the
//! built policy `.wasm` in wasmtime, whose host calls are answered as
//! policy-server answers them (`os_placement_e2e::capabilities`): the
//! images from a real registry (Debian docker-registry on 127.0.0.1) that
//! holds them with the platforms the case lists, the RuntimeClasses and
//! Nodes from a cluster holding the case's objects and the pools as Nodes.
//! The lookups the page says the policy makes are the calls it made; and
//! without the facts the page's answer differs, as the case says.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use os_placement_core::{capacity, ImageSource, DEFAULT_FACTS_NAMESPACE};
use os_placement_e2e::capabilities::{objects_of, Cluster, ContextHost, Registries};
use os_placement_e2e::images::{push_image, Format, ImagePlatform, TestImage};
use os_placement_e2e::published;
use os_placement_e2e::registry::LocalRegistry;
use os_placement_e2e::{admission_request, repo_root, Evaluation, PolicyModule};
use os_placement_playground::{node_objects, read_pools, run, DocumentResult, Inputs, Outcome};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::support::{as_json, differences, module, read};

/// A case with facts (see the head of `playground/examples/cases.yaml`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FactsCase {
    name: String,
    manifest: PathBuf,
    settings: PathBuf,
    preset: String,
    #[serde(default)]
    images: BTreeMap<String, ImageFacts>,
    #[serde(default)]
    cluster: Option<PathBuf>,
    #[serde(default = "yes")]
    pools_are_nodes: bool,
    expect: Expectation,
    without_facts: Expectation,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct ImageFacts {
    platforms: Vec<PlatformFacts>,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlatformFacts {
    os: String,
    architecture: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    os_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expectation {
    accepted: bool,
    #[serde(default)]
    patched: Option<bool>,
    #[serde(default)]
    message_contains: Vec<String>,
    #[serde(default)]
    warnings_contain: Vec<String>,
    #[serde(default)]
    patch_contains: Vec<String>,
    /// The pools where the admitted object's pods are scheduled and run.
    #[serde(default)]
    lands_on: Option<Vec<String>>,
}

fn cases() -> Vec<FactsCase> {
    let text = read(&repo_root().join("playground/examples/cases.yaml"));
    let cases: Vec<FactsCase> = serde_json::from_value(as_json(&text)).unwrap();
    // The test loops over them: an empty list would check nothing.
    assert!(cases.len() >= 5, "{} cases with facts", cases.len());
    cases
}

/// The node pools of a preset, as the page's pools editor holds them: its
/// pools, or its files (Nodes and NodePools) as they are.
fn preset_pools(id: &str) -> String {
    let presets = as_json(&read(&repo_root().join("playground/web/presets.yaml")));
    let preset = presets["presets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no preset {id}"));
    match preset["poolsFiles"].as_array() {
        Some(files) => files
            .iter()
            .map(|f| read(&repo_root().join(f.as_str().unwrap())))
            .collect::<Vec<_>>()
            .join("---\n"),
        None => json!({ "pools": preset["pools"] }).to_string(),
    }
}

/// The facts text as the page builds it (web/facts.js `factsText`): the
/// cluster's objects as written, then the images as one more document.
fn page_facts(cluster: &str, images: &BTreeMap<String, ImageFacts>) -> String {
    let mut parts = Vec::new();
    if !cluster.trim().is_empty() {
        parts.push(format!("{}\n", cluster.trim_end_matches('\n')));
    }
    if !images.is_empty() {
        parts.push(format!("{}\n", json!({ "images": images })));
    }
    parts.join("---\n")
}

/// The registries the case's images name (`registry.example.com`, `docker.io`).
fn registries_named(images: &BTreeMap<String, ImageFacts>) -> Vec<String> {
    let mut named: Vec<String> = images
        .keys()
        .filter_map(|reference| {
            reference
                .split_once('/')
                .map(|(registry, _)| registry.to_owned())
        })
        .collect();
    named.sort();
    named.dedup();
    named
}

fn push_images(registry: &str, images: &BTreeMap<String, ImageFacts>) {
    for (reference, facts) in images {
        let name = reference
            .strip_prefix(&format!("{registry}/"))
            .unwrap_or_else(|| panic!("{reference} is not in {registry}"));
        let image = TestImage {
            name: name.to_owned(),
            platforms: facts
                .platforms
                .iter()
                .map(|p| ImagePlatform {
                    os: p.os.clone(),
                    os_version: p.os_version.clone(),
                    architecture: p.architecture.clone(),
                })
                .collect(),
            single: false,
            format: Format::Oci,
        };
        push_image(registry, &image).unwrap_or_else(|e| panic!("{reference}: {e:#}"));
    }
}

fn first_document(label: &str, inputs: &Inputs<'_>) -> DocumentResult {
    match run(inputs) {
        Outcome::Evaluated { mut documents, .. } if !documents.is_empty() => documents.remove(0),
        other => panic!("{label}: {other:?}"),
    }
}

/// What the case expects, against the page's answer.
fn unmet(label: &str, expect: &Expectation, doc: &DocumentResult) -> Vec<String> {
    let mut unmet = Vec::new();
    let patch = doc.patch.to_string();
    if doc.accepted != expect.accepted {
        unmet.push(format!("{label}: accepted {}", doc.accepted));
    }
    let patched = doc.patch.as_array().is_some_and(|p| !p.is_empty());
    if expect.patched.is_some_and(|p| p != patched) {
        unmet.push(format!("{label}: patched {patched}: {patch}"));
    }
    let message = doc.message.clone().unwrap_or_default();
    let warnings = doc.warning_lines.join("\n");
    let lacks = |wanted: &[String], within: &str, what: &str| -> Vec<String> {
        wanted
            .iter()
            .filter(|s| !within.contains(s.as_str()))
            .map(|s| format!("{label}: {what} lacks {s:?}: {within}"))
            .collect()
    };
    unmet.extend(lacks(&expect.message_contains, &message, "message"));
    unmet.extend(lacks(&expect.warnings_contain, &warnings, "warnings"));
    unmet.extend(lacks(&expect.patch_contains, &patch, "patch"));
    if let Some(wanted) = &expect.lands_on {
        let lands = lands_on(doc);
        if &lands != wanted {
            unmet.push(format!("{label}: lands on {lands:?}, not {wanted:?}"));
        }
    }
    unmet
}

/// The pools where the admitted object's pods are scheduled and run, as
/// the page's landing picture shows them.
fn lands_on(doc: &DocumentResult) -> Vec<String> {
    let after = doc.landing.as_ref().and_then(|l| l.after.as_ref());
    let pools = after.and_then(|a| a["pools"].as_array()).cloned();
    pools
        .unwrap_or_default()
        .iter()
        .filter(|p| p["schedulable"] == true && p["runs"] == "yes")
        .filter_map(|p| p["pool"].as_str().map(str::to_owned))
        .collect()
}

/// The lookups the page reports, against the calls the module made. The
/// node facts, RuntimeClasses and (`imageFacts: cluster`) images are read
/// from the published ConfigMaps of a namespace (one list); a RuntimeClass
/// they lack (`published_classes` holds those the cluster has) by name; with
/// `imageFacts: registry`, one OCI call per image.
fn lookups_differ(
    label: &str,
    doc: &DocumentResult,
    host: &ContextHost,
    published_classes: &[String],
) -> Option<String> {
    let mut made = Lookups::default();
    for call in host.calls() {
        let payload: Value = serde_json::from_str(&call.payload).unwrap_or(Value::Null);
        let text = |key: &str| payload[key].as_str().unwrap_or_default().to_owned();
        match (call.namespace.as_str(), call.operation.as_str()) {
            ("oci", _) => made
                .registry_images
                .push(payload.as_str().unwrap_or_default().to_owned()),
            ("kubernetes", "get_resource") => made.runtime_classes.push(text("name")),
            ("kubernetes", "list_resources_by_namespace") if text("kind") == "ConfigMap" => {
                made.published_in = Some(text("namespace"));
            }
            _ => {}
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    made.registry_images
        .retain(|image| seen.insert(image.clone()));
    let said = doc.lookups.as_ref().map(|needs| {
        let (registry_images, published_images) = match &needs.image_source {
            ImageSource::Registry => (needs.images.clone(), false),
            ImageSource::Cluster { .. } => (Vec::new(), !needs.images.is_empty()),
        };
        let published = published_images || needs.nodes || !needs.runtime_classes.is_empty();
        Lookups {
            registry_images,
            published_in: published.then(|| needs.facts_namespace.clone()),
            runtime_classes: needs
                .runtime_classes
                .iter()
                .filter(|name| !published_classes.contains(name))
                .cloned()
                .collect(),
        }
    });
    (said.as_ref() != Some(&made))
        .then(|| format!("{label}: the page says the policy looks up {said:?}; it asked {made:?}"))
}

/// What an evaluation looks up in the cluster and the registries.
#[derive(Debug, Default, PartialEq)]
struct Lookups {
    registry_images: Vec<String>,
    /// The namespace whose published facts ConfigMaps are listed.
    published_in: Option<String>,
    /// RuntimeClasses read by name.
    runtime_classes: Vec<String>,
}

/// One case's texts, with the test's registry in place of the ones it names.
struct Texts {
    object: String,
    settings: String,
    cluster: String,
    pools: String,
    facts: String,
}

/// The case's texts, its images pushed to the registry at `host_name`.
fn prepare(case: &FactsCase, host_name: &str) -> Texts {
    let root = repo_root();
    let named = registries_named(&case.images);
    let here = |text: &str| {
        named.iter().fold(text.to_owned(), |text, registry| {
            text.replace(&format!("{registry}/"), &format!("{host_name}/"))
        })
    };
    let images: BTreeMap<String, ImageFacts> = case
        .images
        .iter()
        .map(|(reference, facts)| (here(reference), facts.clone()))
        .collect();
    push_images(host_name, &images);
    let cluster = case
        .cluster
        .as_ref()
        .map(|p| read(&root.join(p)))
        .unwrap_or_default();
    Texts {
        object: here(&read(&root.join(&case.manifest))),
        settings: read(&root.join(&case.settings)),
        pools: preset_pools(&case.preset),
        facts: page_facts(&cluster, &images),
        cluster,
    }
}

/// The policy module's answer in a cluster holding the case's objects (and
/// the pools as Nodes, and the ConfigMaps the facts syncer would publish
/// for them and the registry's images) and a registry holding its
/// images; the host, with the calls the module made.
fn policy_answer(
    module: &PolicyModule,
    case: &FactsCase,
    texts: &Texts,
    registry: &LocalRegistry,
) -> (Evaluation, Arc<ContextHost>) {
    let registries = || Registries::new(&[registry.host()]).unwrap();
    let mut objects = objects_of(&texts.cluster).unwrap();
    if case.pools_are_nodes {
        let pools = read_pools(&texts.pools, &mut Vec::new()).unwrap();
        let nodes = node_objects(&pools);
        objects.extend(nodes["items"].as_array().unwrap().iter().cloned());
        // NodePools among the pools are the cluster's too: the syncer
        // publishes what they launch.
        let written = objects_of(&texts.pools).unwrap_or_default();
        objects.extend(written.into_iter().filter(capacity::is_capacity_object));
    }
    let images = published::catalog(registry.port()).unwrap();
    let resolver = ContextHost::new().with_registries(registries());
    let images = published::image_facts(&resolver, &images);
    let maps = published::config_maps(&objects, &images, DEFAULT_FACTS_NAMESPACE);
    objects.extend(maps);
    let context = Arc::new(
        ContextHost::new()
            .with_registries(registries())
            .with_cluster(Cluster::from_objects(objects)),
    );
    let host = module.instantiate_with(context.clone()).unwrap();
    let request = admission_request(&as_json(&texts.object), "CREATE", None, None);
    let policy = host
        .validate(&request, &as_json(&texts.settings))
        .unwrap_or_else(|e| panic!("{}: policy failed: {e:#}", case.name));
    (policy, context)
}

/// Everything wrong with one case.
fn case_problems(module: &PolicyModule, case: &FactsCase, registry: &LocalRegistry) -> Vec<String> {
    let label = case.name.as_str();
    let texts = prepare(case, &registry.host());
    let inputs = Inputs {
        object: &texts.object,
        settings: &texts.settings,
        operation: "CREATE",
        pools: &texts.pools,
        facts: &texts.facts,
        pools_are_nodes: case.pools_are_nodes,
        ..Inputs::default()
    };
    let doc = first_document(label, &inputs);
    let (policy, context) = policy_answer(module, case, &texts, registry);
    let mut problems = differences(label, &doc, &policy, &as_json(&texts.object), &[]);
    let published_classes: Vec<String> = objects_of(&texts.cluster)
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "RuntimeClass")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    problems.extend(lookups_differ(label, &doc, &context, &published_classes));
    problems.extend(unmet(label, &case.expect, &doc));
    // Without the facts: what the case says, and not the same answer.
    let without = first_document(
        label,
        &Inputs {
            facts: "",
            pools_are_nodes: false,
            ..inputs
        },
    );
    let unfacted = format!("{label} without facts");
    problems.extend(unmet(&unfacted, &case.without_facts, &without));
    if (&without.patch, &without.warning_lines) == (&doc.patch, &doc.warning_lines) {
        problems.push(format!("{label}: the facts change nothing"));
    }
    problems
}

#[test]
fn facts_examples_match_the_policy() {
    let cases = cases();
    let Some(registry) = LocalRegistry::start().unwrap_or_else(|e| panic!("{e:#}")) else {
        return;
    };
    let module = module();
    let problems: Vec<String> = cases
        .iter()
        .flat_map(|case| case_problems(&module, case, &registry))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
