//! The doors test: the inputs of `door/tests/inputs/doors.yaml` (typed
//! lists, AdmissionReviews, a list of workloads, ConfigMaps and Services,
//! anchors and merge keys, streams, custom resources, JSON, CronJobs,
//! updates with their old object, facts) through the three doors: the
//! policy module in wasmtime as policy-server runs it, the CLI's
//! `check -o json`, and the playground's `evaluate`. Every object gets the
//! same verdict, the same codes and the same resulting object from each.
//!
//! Objects the policy's rules do not select are never sent to the module,
//! as the API server would not send them; the CLI and the playground must
//! answer them skipped, with the same reason. A case without facts gives
//! the module `imageLookup: off` (a door without a host looks nothing up);
//! a case with facts gives it a host that answers from the same facts file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use os_placement_core::Operation;
use os_placement_door::rules::select;
use os_placement_door::{
    objects, read_one, read_settings, read_stream, request_for, Found, Options,
};
use os_placement_e2e::host::HostCalls;
use os_placement_e2e::selector;
use os_placement_e2e::HostCallError;
use os_placement_e2e::PolicyModule;
use serde_json::{json, Value};

use crate::common::{code, repo_root, run_in, stdout};
use crate::wasm_parity::{apply, lines, module, same_or_truncated};

/// One case of doors.yaml, paths resolved.
struct Case {
    input: PathBuf,
    settings: PathBuf,
    facts: Option<PathBuf>,
    operation: Operation,
    label: String,
}

/// What one door said about one object.
#[derive(Debug, Clone, PartialEq)]
struct Said {
    kind: String,
    name: Option<String>,
    /// accepted, patched, rejected or skipped.
    verdict: String,
    /// Violation and warning codes; the module sends none.
    codes: Option<(Vec<String>, Vec<String>)>,
    /// As the API server shows them: `path: message; fix`.
    violations: Vec<String>,
    warnings: Vec<String>,
    /// The object as admitted; `None` when rejected or skipped.
    result: Option<Value>,
    skip_reason: Option<String>,
}

fn inputs_dir() -> PathBuf {
    repo_root().join("door/tests/inputs")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases() -> Vec<Case> {
    let list = read_one(&read(&inputs_dir().join("doors.yaml")))
        .unwrap()
        .unwrap()
        .to_json();
    list.as_array()
        .unwrap()
        .iter()
        .map(|case| {
            let operation = case["operation"].as_str().unwrap_or("CREATE");
            Case {
                input: inputs_dir().join(case["input"].as_str().unwrap()),
                settings: repo_root().join(case["settings"].as_str().unwrap()),
                facts: case["facts"].as_str().map(|f| inputs_dir().join(f)),
                operation: Operation::parse(operation).unwrap(),
                label: format!(
                    "{} ({}, {operation}{})",
                    case["input"].as_str().unwrap(),
                    case["settings"].as_str().unwrap(),
                    case["facts"]
                        .as_str()
                        .map(|f| format!(", facts {f}"))
                        .unwrap_or_default()
                ),
            }
        })
        .collect()
}

/// The objects of the input, as the door finds them (the doors must
/// answer about these, in this order).
fn subjects(case: &Case) -> Vec<os_placement_door::Subject> {
    read_stream(&read(&case.input))
        .into_iter()
        .flat_map(|d| objects(&d.unwrap()))
        .map(|found| match found {
            Found::Object(subject) => *subject,
            Found::NotAnObject(problem) => panic!("{problem:?}"),
        })
        .collect()
}

fn identity(object: &Value) -> (String, Option<String>) {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let name = text("/metadata/name")
        .map(str::to_owned)
        .or_else(|| text("/metadata/generateName").map(|g| format!("{g}*")));
    (text("/kind").unwrap_or_default().to_owned(), name)
}

fn codes(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

/// The policy module: each selected object's request, on a fresh instance.
fn policy_says(case: &Case, module: &PolicyModule) -> Vec<Said> {
    let mut settings = read_one(&read(&case.settings)).unwrap().unwrap().to_json();
    let host: Arc<dyn HostCalls> = match &case.facts {
        Some(facts) => Arc::new(FactsHost::read(&read(facts))),
        None => {
            settings["imageLookup"] = json!("off");
            Arc::new(os_placement_e2e::host::NoCapabilities)
        }
    };
    let door_settings = read_settings(&read(&case.settings)).unwrap();
    subjects(case)
        .iter()
        .map(|subject| {
            let call = Options {
                settings: &door_settings,
                operation: case.operation,
                old_object: None,
                facts: None,
                origin: Default::default(),
            }
            .call(subject);
            let request = request_for(&call);
            let (kind, name) = identity(&subject.object);
            let skipped = Said {
                kind,
                name,
                verdict: "skipped".into(),
                codes: None,
                violations: Vec::new(),
                warnings: Vec::new(),
                result: None,
                skip_reason: None,
            };
            if let Err(reason) = select(&request) {
                return Said {
                    skip_reason: Some(reason.to_string()),
                    ..skipped
                };
            }
            let instance = module.instantiate_with(host.clone()).unwrap();
            let evaluation = instance
                .validate(&request, &settings)
                .unwrap_or_else(|e| panic!("{}: {e:#}", case.label));
            let response = &evaluation.response;
            let verdict = match (response.accepted, evaluation.patched()) {
                (false, _) => "rejected",
                (true, true) => "patched",
                (true, false) => "accepted",
            };
            Said {
                verdict: verdict.into(),
                violations: response.message().lines().map(str::to_owned).collect(),
                warnings: response.warnings().to_vec(),
                result: response
                    .accepted
                    .then(|| evaluation.resulting_object(&request["object"]).clone()),
                ..skipped
            }
        })
        .collect()
}

/// The CLI: `os-placement check -o json`.
fn cli_says(case: &Case, objects: &[Value]) -> Vec<Said> {
    let mut args = vec![
        "check".to_owned(),
        "-o".into(),
        "json".into(),
        "--settings".into(),
        case.settings.display().to_string(),
        "--operation".into(),
        case.operation.to_string(),
    ];
    if let Some(facts) = &case.facts {
        args.extend(["--facts".into(), facts.display().to_string()]);
    }
    args.push(case.input.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = run_in(&repo_root(), &args, None);
    assert!(
        matches!(code(&output), 0 | 1),
        "{}: {}",
        case.label,
        stdout(&output)
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), objects.len(), "{}: {report}", case.label);
    results
        .iter()
        .zip(objects)
        .map(|(r, object)| {
            let verdict = r["verdict"].as_str().unwrap().to_owned();
            let admitted = verdict == "accepted" || verdict == "patched";
            Said {
                kind: r["kind"].as_str().unwrap().to_owned(),
                name: r["name"].as_str().map(str::to_owned),
                codes: Some((codes(&r["violations"]), codes(&r["warnings"]))),
                violations: lines(&r["violations"]),
                warnings: lines(&r["warnings"]),
                result: admitted.then(|| apply(object, r["patch"].as_array().unwrap())),
                skip_reason: (verdict == "skipped")
                    .then(|| r["reason"].as_str().unwrap().to_owned()),
                verdict,
            }
        })
        .collect()
}

/// The playground's `evaluate`, as the page calls it.
fn playground_says(case: &Case, objects: &[Value]) -> Vec<Said> {
    let facts = case.facts.as_ref().map(|f| read(f));
    let text = os_placement_playground::evaluate(
        &read(&case.input),
        &read(&case.settings),
        case.operation.as_str(),
        "",
        "",
        facts,
    );
    let outcome: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(outcome["status"], "evaluated", "{}: {outcome}", case.label);
    let documents = outcome["documents"].as_array().unwrap();
    assert_eq!(documents.len(), objects.len(), "{}: {outcome}", case.label);
    documents
        .iter()
        .zip(objects)
        .map(|(d, object)| {
            let patched = !d["patch"].as_array().unwrap().is_empty();
            let verdict = match (d["verdict"].as_str().unwrap(), patched) {
                ("accepted", true) => "patched",
                (other, _) => other,
            };
            let admitted = verdict == "accepted" || verdict == "patched";
            Said {
                kind: d["kind"].as_str().unwrap().to_owned(),
                name: Some(d["name"].as_str().unwrap().to_owned()).filter(|n| !n.is_empty()),
                verdict: verdict.to_owned(),
                codes: Some((codes(&d["violations"]), codes(&d["warnings"]))),
                violations: lines(&d["violations"]),
                warnings: lines(&d["warnings"]),
                result: admitted.then(|| match &d["mutatedObject"] {
                    Value::Null => object.clone(),
                    mutated => mutated.clone(),
                }),
                skip_reason: d["skipReason"].as_str().map(str::to_owned),
            }
        })
        .collect()
}

/// A warning as the module words it and as a door without a host words it
/// are the same finding: the same line, or the line cut at 256 characters,
/// or (a failed lookup) the same line around the error text each host gave.
fn same_warning(door: &str, module: &str) -> bool {
    if same_or_truncated(door, module) {
        return true;
    }
    let parts = |line: &str| {
        let (before, rest) = line.split_once(" (")?;
        let (_, after) = rest.split_once("), ")?;
        Some((before.to_owned(), after.to_owned()))
    };
    match (parts(door), parts(module)) {
        (Some((door_before, door_after)), Some((module_before, module_after))) => {
            door_before == module_before
                && (door_after == module_after
                    || module_after
                        .strip_suffix('…')
                        .is_some_and(|kept| door_after.starts_with(kept)))
        }
        _ => false,
    }
}

#[test]
fn every_door_gives_the_same_answer() {
    let Some(module) = module() else { return };
    let mut compared = 0;
    for case in cases() {
        let objects: Vec<Value> = subjects(&case).into_iter().map(|s| s.object).collect();
        let policy = policy_says(&case, &module);
        let cli = cli_says(&case, &objects);
        let playground = playground_says(&case, &objects);
        assert_eq!(policy.len(), objects.len(), "{}", case.label);
        for ((module_said, cli_said), page_said) in policy.iter().zip(&cli).zip(&playground) {
            let label = format!("{}: {} {:?}", case.label, cli_said.kind, cli_said.name);
            assert_eq!(
                cli_said, page_said,
                "{label}: the CLI and the playground differ"
            );
            assert_eq!(
                (&module_said.kind, &module_said.name, &module_said.verdict),
                (&cli_said.kind, &cli_said.name, &cli_said.verdict),
                "{label}: the module and the CLI differ"
            );
            assert_eq!(module_said.violations, cli_said.violations, "{label}");
            assert_eq!(
                module_said.warnings.len(),
                cli_said.warnings.len(),
                "{label}: {:?} vs {:?}",
                module_said.warnings,
                cli_said.warnings
            );
            for (door, module_line) in cli_said.warnings.iter().zip(&module_said.warnings) {
                assert!(
                    same_warning(door, module_line),
                    "{label}: {door:?} vs {module_line:?}"
                );
            }
            assert_eq!(module_said.skip_reason, cli_said.skip_reason, "{label}");
            if cli_said.verdict == "skipped" {
                assert!(
                    cli_said.skip_reason.is_some(),
                    "{label}: skipped without a reason"
                );
            } else {
                assert_eq!(
                    module_said.result, cli_said.result,
                    "{label}: resulting object"
                );
            }
            compared += 1;
        }
    }
    assert!(compared >= 35, "{compared} objects compared");
}

/// A host that answers the policy's calls from a facts file, as a
/// policy-server would from that cluster and registry: images (the index
/// as the registry serves it, or the policy's platforms form) from the
/// registry (`imageFacts: registry`); the Nodes, RuntimeClasses and images
/// published as the facts syncer publishes them (`os-placement facts
/// render`), served by label selector; RuntimeClasses (kubectl output) by name.
struct FactsHost {
    images: BTreeMap<String, Result<Value, String>>,
    runtime_classes: Vec<Value>,
    /// The published ConfigMaps.
    config_maps: Vec<Value>,
    /// The file holds no image facts: as the door says, their lookup fails.
    no_images: bool,
}

impl FactsHost {
    fn read(text: &str) -> FactsHost {
        let mut host = FactsHost {
            images: BTreeMap::new(),
            runtime_classes: Vec::new(),
            config_maps: Vec::new(),
            no_images: false,
        };
        for document in read_stream(text) {
            let document = document.unwrap();
            let root = document.root.to_json();
            if root.get("kind").is_some() {
                for found in objects(&document) {
                    let Found::Object(subject) = found else {
                        panic!("{found:?}")
                    };
                    match subject.object["kind"].as_str() {
                        Some("RuntimeClass") => host.runtime_classes.push(subject.object),
                        Some("Node" | "ConfigMap") => {}
                        other => panic!("the test host serves no {other:?}"),
                    }
                }
                continue;
            }
            for (image, answer) in root["images"].as_object().into_iter().flatten() {
                host.images.insert(image.clone(), registry_answer(answer));
            }
        }
        host.config_maps = published_config_maps(text);
        host.no_images = os_placement_door::read_facts(text)
            .unwrap()
            .render_sources()
            .images
            .is_empty();
        host
    }
}

/// The ConfigMaps the facts syncer would publish for a facts file, had it
/// found its Nodes and RuntimeClasses and resolved its images to what the
/// file says: what `os-placement facts render` writes for it.
fn published_config_maps(text: &str) -> Vec<Value> {
    os_placement_door::read_facts(text)
        .unwrap()
        .published(os_placement_core::DEFAULT_FACTS_NAMESPACE)
}

/// What the registry serves for an image of the facts file.
fn registry_answer(facts: &Value) -> Result<Value, String> {
    if facts.get("manifests").is_some() {
        return Ok(facts.clone());
    }
    if let Some(error) = facts["lookupFailed"].as_str() {
        return Err(error.to_owned());
    }
    let manifests: Vec<Value> = facts["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut platform = json!({"os": p["os"], "architecture": p["architecture"]});
            if let Some(version) = p["osVersion"].as_str() {
                platform["os.version"] = json!(version);
            }
            json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:0", "size": 1, "platform": platform})
        })
        .collect();
    Ok(
        json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}),
    )
}

impl HostCalls for FactsHost {
    fn call(
        &self,
        _binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, HostCallError> {
        self.answer(namespace, operation, payload)
            .map_err(HostCallError)
    }
}

impl FactsHost {
    /// The answer the cluster of the facts file would give.
    fn answer(&self, namespace: &str, operation: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        let payload: Value = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        let answer = match (namespace, operation) {
            ("oci", "v1/oci_manifest") => {
                let image = payload.as_str().unwrap_or_default();
                self.images
                    .get(image)
                    .cloned()
                    .unwrap_or_else(|| Err(format!("{image}: not in the registry")))?
            }
            ("kubernetes", "get_resource") => {
                let name = payload["name"].as_str().unwrap_or_default();
                let found = self
                    .runtime_classes
                    .iter()
                    .find(|rc| rc["metadata"]["name"] == name);
                match found {
                    Some(rc) => rc.clone(),
                    None if self.runtime_classes.is_empty() => {
                        return Err("the cluster's RuntimeClasses are not readable".into())
                    }
                    // policy-server's words for a 404.
                    None => {
                        return Err(format!(
                            "Cannot find node.k8s.io/v1/RuntimeClass named '{name}' inside of namespace 'None'"
                        ))
                    }
                }
            }
            ("kubernetes", "list_resources_by_namespace") => {
                assert_eq!(payload["kind"], "ConfigMap");
                let selector = selector::parse(payload["label_selector"].as_str())
                    .map_err(|e| e.to_string())?;
                let mut items: Vec<Value> = self
                    .config_maps
                    .iter()
                    .filter(|cm| selector::labels_match(&selector, cm))
                    .cloned()
                    .collect();
                // A shard asked of a file without images cannot be read.
                let shard = payload["label_selector"]
                    .as_str()
                    .unwrap_or("")
                    .contains("shard-");
                if self.no_images && shard {
                    items.push(json!({"metadata": {"name": "os-placement-facts-shard"},
                        "data": {"index": "the facts file has no platforms"}}));
                }
                json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": items})
            }
            _ => {
                return Err(format!(
                    "{namespace}/{operation}: not answered by this cluster"
                ))
            }
        };
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}
