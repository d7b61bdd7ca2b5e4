//! The playground gives the verdict the cluster gives, without facts: every
//! example case and every corpus manifest, with image lookups off in the
//! module (the playground without facts looks nothing up).

use os_placement_e2e::{admission_request, corpus_dir, load_cases, repo_root, PolicyHost};
use os_placement_playground::{run, Inputs, Outcome};
use serde_json::{json, Value};

use crate::support::{as_json, differences, module, read};

fn host() -> PolicyHost {
    module()
        .instantiate()
        .unwrap_or_else(|e| panic!("cannot instantiate the module: {e:#}"))
}

/// Compares one object; returns the differences.
fn compare(
    label: &str,
    host: &PolicyHost,
    inputs: &Inputs<'_>,
    sub_resource: Option<&str>,
) -> Vec<String> {
    let object = as_json(inputs.object);
    let old = (!inputs.old_object.is_empty()).then(|| as_json(inputs.old_object));
    let mut settings = if inputs.settings.is_empty() {
        json!({})
    } else {
        as_json(inputs.settings)
    };
    let request = admission_request(&object, inputs.operation, old.as_ref(), sub_resource);
    // The playground has no registry or cluster here: the module, with image
    // lookups off, asks the host for none.
    if let Some(map) = settings.as_object_mut() {
        map.insert("imageLookup".into(), "off".into());
    }
    let policy = host
        .validate(&request, &settings)
        .unwrap_or_else(|e| panic!("{label}: policy failed: {e:#}"));
    let documents = match run(inputs) {
        Outcome::Evaluated { documents, .. } => documents,
        Outcome::InvalidInput { errors } => {
            return vec![format!("{label}: playground input error {errors:?}")]
        }
    };
    let Some(doc) = documents.first() else {
        return vec![format!("{label}: no document")];
    };
    // A RuntimeClass, node facts or published facts lookup the test host
    // cannot answer warns in the module only.
    differences(
        label,
        doc,
        &policy,
        &object,
        &[
            "could not be read from the cluster",
            "the node facts could not be read",
            " facts cannot be read (",
        ],
    )
}

#[test]
fn examples_match_the_policy() {
    let root = repo_root();
    let host = host();
    let cases = load_cases(&root.join("examples/cases.yaml")).unwrap();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let mut diffs = Vec::new();
    for case in &cases {
        let object = read(&root.join(&case.manifest));
        let settings = case
            .settings
            .as_ref()
            .map(|p| read(&root.join(p)))
            .unwrap_or_default();
        let old = case
            .old_manifest
            .as_ref()
            .map(|p| read(&root.join(p)))
            .unwrap_or_default();
        let inputs = Inputs {
            object: &object,
            settings: &settings,
            operation: &case.operation,
            old_object: &old,
            ..Inputs::default()
        };
        diffs.extend(compare(
            &case.name,
            &host,
            &inputs,
            case.sub_resource.as_deref(),
        ));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn corpus_matches_the_policy() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "corpus not found at {} (set OS_PLACEMENT_CORPUS)",
            dir.display()
        );
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: corpus_matches_the_policy: no corpus at {}",
            dir.display()
        );
        return;
    }
    let host = host();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 50,
        "{} corpus manifests in {}",
        files.len(),
        dir.display()
    );
    let mut diffs = Vec::new();
    for file in &files {
        let object = read(file);
        let inputs = Inputs {
            object: &object,
            operation: "CREATE",
            ..Inputs::default()
        };
        diffs.extend(compare(&file.display().to_string(), &host, &inputs, None));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Without facts, nothing is looked up; the pools alone change no answer.
#[test]
fn pools_without_facts_look_nothing_up() {
    let object = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: registry.example.com/corp/app:1}]\n";
    let pools = "- {name: win, os: windows, build: \"10.0.20348\"}\n";
    let answer = |pools_are_nodes: bool| -> Value {
        serde_json::to_value(run(&Inputs {
            object,
            operation: "CREATE",
            pools,
            pools_are_nodes,
            ..Inputs::default()
        }))
        .unwrap()
    };
    let without = answer(false);
    assert_eq!(
        without["documents"][0]["warningLines"],
        json!([]),
        "{without}"
    );
    assert_eq!(without["pools"][0]["name"], "win");
    // The pools as the cluster's Nodes: the image lookup fails (no facts for
    // it) and the only node is Windows while the pod defaults to Linux.
    let with = answer(true);
    let warnings = with["documents"][0]["warningLines"].to_string();
    assert!(
        warnings.contains("registry.example.com/corp/app:1"),
        "{with}"
    );
    assert!(warnings.contains("no node"), "{with}");
    assert_eq!(with["documents"][0]["lookups"]["nodes"], true);
}
