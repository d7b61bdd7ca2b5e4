//! The `os-placement` binary end to end: formats, exit codes, stdin,
//! streams, `fix`, and the shared corpus.

use std::path::Path;

use crate::common::{self, assert_snapshot, code, corpus, run, stderr, stdout};
use serde_json::Value;

const EKS: &[&str] = &["--preset", "eks"];

fn check(paths: &[&str], extra: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    let mut args = vec!["check"];
    args.extend_from_slice(paths);
    args.extend_from_slice(extra);
    run(&args, stdin)
}

fn json_report(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

fn verdicts(report: &Value) -> Vec<(String, String)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = format!(
                "{}/{}",
                r["kind"].as_str().unwrap_or("-"),
                r["name"].as_str().unwrap_or("-")
            );
            (name, r["verdict"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn human_output_snapshot() {
    let output = check(
        &["tests/fixtures"],
        &["--preset", "eks", "--color", "never"],
        None,
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert_snapshot("check-fixtures.txt", &stdout(&output));
}

#[test]
fn json_output_snapshot() {
    let output = check(
        &["tests/fixtures"],
        &["--preset", "eks", "--output", "json"],
        None,
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let report = json_report(&output);
    assert_eq!(report["schemaVersion"], 1);
    assert_eq!(report["summary"]["errors"], 2);
    assert_snapshot("check-fixtures.json", &stdout(&output));
}

#[test]
fn junit_output_snapshot() {
    let output = check(
        &["tests/fixtures"],
        &["--preset", "eks", "-o", "junit"],
        None,
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let xml = stdout(&output);
    assert!(xml.starts_with("<?xml"));
    assert_eq!(xml.matches("<testsuite ").count(), 3, "one suite per file");
    assert_snapshot("check-fixtures.xml", &xml);
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let plain = check(&["tests/fixtures/list.yaml"], EKS, None);
    assert!(!stdout(&plain).contains('\x1b'));
    let coloured = check(
        &["tests/fixtures/list.yaml"],
        &["--preset", "eks", "--color", "always"],
        None,
    );
    assert!(
        stdout(&coloured).contains("\x1b[1;31mrejected\x1b[0m"),
        "{}",
        stdout(&coloured)
    );
}

#[test]
fn exit_codes() {
    // Accepted, one with a patch, unsupported kinds skipped: 0. With the
    // EKS taint declared, a Linux pod that does not tolerate it is placed.
    let helm = check(&["tests/fixtures/helm-stream.yaml"], EKS, None);
    assert_eq!(code(&helm), 0, "{}", stdout(&helm));
    assert!(stdout(&helm).ends_with(
        "1 file, 3 objects: 2 accepted, 1 patched, 0 rejected; 2 skipped (ConfigMap: 1, Service: 1); 0 errors\n"
    ), "{}", stdout(&helm));
    // A rejection: 1.
    let list = check(&["tests/fixtures/list.yaml"], EKS, None);
    assert_eq!(code(&list), 1, "{}", stdout(&list));
    // Broken YAML and a document that is not an object: 2, the rest still checked.
    let broken = check(&["tests/fixtures/broken.yaml"], EKS, None);
    assert_eq!(code(&broken), 2);
    let text = stdout(&broken);
    assert!(
        text.contains("tests/fixtures/broken.yaml:1  Pod/fine  accepted"),
        "{text}"
    );
    assert!(
        text.contains("tests/fixtures/broken.yaml:17:1: error: not valid YAML: while parsing a flow sequence, expected ',' or ']'"),
        "file:line:column of the YAML error: {text}"
    );
    assert!(text.contains("tests/fixtures/broken.yaml:18: error: document is not a Kubernetes object: apiVersion is missing"), "{text}");
    // A file that does not exist: 2, named.
    let missing = check(&["tests/fixtures/nope.yaml"], &[], None);
    assert_eq!(code(&missing), 2);
    assert!(
        stdout(&missing).contains("cannot read tests/fixtures/nope.yaml"),
        "{}",
        stdout(&missing)
    );
    // DELETE is never refused, as in the cluster.
    let delete = check(
        &["tests/fixtures/list.yaml"],
        &["--preset", "eks", "--operation", "delete"],
        None,
    );
    assert_eq!(code(&delete), 0, "{}", stdout(&delete));
    // Usage errors: 2.
    assert_eq!(code(&run(&["check"], None)), 2);
    assert_eq!(code(&run(&["check", "x.yaml", "--output", "xml"], None)), 2);
    assert_eq!(code(&run(&["frobnicate"], None)), 2);
}

#[test]
fn invalid_settings_are_reported_once_each_with_their_path() {
    let dir =
        std::env::temp_dir().join(format!("os-placement-cli-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let settings = dir.join("settings.yaml");
    std::fs::write(
        &settings,
        "windowsTaint:\n  key: os\n  effect: Sometimes\nmutat: true\n",
    )
    .unwrap();
    let output = check(
        &["tests/fixtures/list.yaml"],
        &["--settings", settings.to_str().unwrap()],
        None,
    );
    assert_eq!(code(&output), 2);
    assert!(
        stdout(&output).is_empty(),
        "nothing is checked with bad settings"
    );
    let errors = stderr(&output);
    assert!(errors.contains("windowsTaint.effect"), "{errors}");
    assert!(errors.contains("mutat"), "{errors}");
    assert_eq!(errors.matches("windowsTaint.effect").count(), 1, "{errors}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stdin_gives_the_same_verdicts_as_the_file() {
    let text = std::fs::read("tests/fixtures/helm-stream.yaml").unwrap();
    let from_stdin = check(&["-"], &["--preset", "eks", "-o", "json"], Some(&text));
    let from_file = check(
        &["tests/fixtures/helm-stream.yaml"],
        &["--preset", "eks", "-o", "json"],
        None,
    );
    assert_eq!(code(&from_stdin), 0);
    let (a, b) = (json_report(&from_stdin), json_report(&from_file));
    assert_eq!(verdicts(&a), verdicts(&b));
    assert_eq!(a["results"][0]["file"], "<stdin>");
    assert_eq!(
        a["results"][2]["line"], 20,
        "line of the Deployment after its # Source comment"
    );
}

#[test]
fn helm_stream_verdicts_and_lines() {
    let report = json_report(&check(
        &["tests/fixtures/helm-stream.yaml"],
        &["--preset", "eks", "-o", "json"],
        None,
    ));
    let results = report["results"].as_array().unwrap();
    let summary: Vec<(u64, &str, &str)> = results
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["kind"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (3, "Service", "skipped"),
            (12, "ConfigMap", "skipped"),
            (20, "Deployment", "accepted"),
            (43, "Deployment", "patched"),
            (65, "Pod", "accepted"),
        ]
    );
    // The Windows Deployment gets the OS selector, build pin and EKS toleration.
    let patch = results[3]["patch"].to_string();
    assert!(
        patch.contains("kubernetes.io/os")
            && patch.contains("10.0.20348")
            && patch.contains("NoSchedule"),
        "{patch}"
    );
}

#[test]
fn list_items_are_checked_one_by_one() {
    let report = json_report(&check(
        &["tests/fixtures/list.yaml"],
        &["--preset", "eks", "-o", "json"],
        None,
    ));
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0]["item"].as_u64(), results[0]["verdict"].as_str()),
        (Some(0), Some("rejected"))
    );
    assert_eq!(results[0]["violations"][0]["code"], "os-conflict");
    let lines: Vec<&Value> = results.iter().map(|r| &r["line"]).collect();
    assert_eq!(lines, [5, 18], "each item at its own line");
    assert_eq!(
        (results[1]["item"].as_u64(), results[1]["verdict"].as_str()),
        (Some(1), Some("accepted"))
    );
}

fn fix(paths: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    let mut args = vec!["fix", "--preset", "eks"];
    args.extend_from_slice(paths);
    run(&args, stdin)
}

#[test]
fn fix_inserts_entries_and_leaves_everything_else_byte_for_byte() {
    let original = std::fs::read_to_string("tests/fixtures/helm-stream.yaml").unwrap();
    let output = fix(&["tests/fixtures/helm-stream.yaml"], None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let fixed = stdout(&output);
    // Only lines were added: the original lines, comments included, are all there in order.
    let mut fixed_lines = fixed.lines();
    for line in original.lines() {
        assert!(
            fixed_lines.any(|l| l == line),
            "line {line:?} lost or moved:\n{fixed}"
        );
    }
    // Documents that needed nothing are copied exactly.
    let untouched = &original[..original
        .find("# Source: shop/templates/legacy.yaml")
        .unwrap()];
    assert!(fixed.starts_with(untouched));
    let placed = &original[original
        .find("---\n# Source: shop/templates/disabled.yaml")
        .unwrap()..];
    assert!(fixed.ends_with(placed));
    assert!(
        fixed.contains(concat!(
        "      # The legacy storefront only runs on Windows Server 2022.\n",
        "      containers:\n",
        "        - name: legacy\n",
        "          image: mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022\n",
        "      nodeSelector:\n",
        "        kubernetes.io/os: windows\n",
        "        node.kubernetes.io/windows-build: 10.0.20348\n",
        "      tolerations:\n",
        "        - effect: NoSchedule\n",
        "          key: os\n",
        "          operator: Equal\n",
        "          value: windows\n",
        "---\n",
    )),
        "{fixed}"
    );
    assert!(stderr(&output).contains("1 patched"), "{}", stderr(&output));
}

#[test]
fn fix_is_idempotent_and_its_output_passes_check() {
    let once = stdout(&fix(
        &[
            "tests/fixtures/helm-stream.yaml",
            "tests/fixtures/list.yaml",
        ],
        None,
    ));
    let twice = fix(&["-"], Some(once.as_bytes()));
    assert_eq!(code(&twice), 1, "the rejected List item stays rejected");
    assert_eq!(stdout(&twice), once);
    let checked = check(
        &["-"],
        &["--preset", "eks", "-o", "json"],
        Some(once.as_bytes()),
    );
    let report = json_report(&checked);
    assert_eq!(report["summary"]["patched"], 0, "{report}");
    assert_eq!(report["summary"]["rejected"], 1);
    assert_eq!(report["summary"]["objects"], 5);
}

#[test]
fn fix_in_place_rewrites_only_changed_files() {
    let dir = std::env::temp_dir().join(format!("os-placement-cli-fix-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    let helm = dir.join("nested/app.yaml");
    let placed = dir.join("placed.yml");
    std::fs::copy("tests/fixtures/helm-stream.yaml", &helm).unwrap();
    std::fs::write(&placed, "# placed\nkind: Pod\napiVersion: v1\nspec: {nodeSelector: {kubernetes.io/os: linux}, containers: [{name: a, image: busybox}]}\n").unwrap();
    let before = std::fs::read(&placed).unwrap();
    let expected = stdout(&fix(&["tests/fixtures/helm-stream.yaml"], None));
    let output = fix(&["--in-place", dir.to_str().unwrap()], None);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stdout(&output).is_empty());
    assert_eq!(std::fs::read_to_string(&helm).unwrap(), expected);
    assert_eq!(std::fs::read(&placed).unwrap(), before);
    assert_eq!(
        code(&fix(&["--in-place", "-"], Some(b""))),
        2,
        "stdin cannot be rewritten"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fix_rewrites_json_documents_as_json_keeping_key_order() {
    let pod = r#"{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}"#;
    let output = run(&["fix", "-"], Some(pod.as_bytes()));
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let fixed = stdout(&output);
    let value: Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(value["spec"]["nodeSelector"]["kubernetes.io/os"], "linux");
    assert!(
        fixed.find("\"kind\"") < fixed.find("\"apiVersion\""),
        "{fixed}"
    );
    assert!(
        stderr(&output).contains("1 document(s) re-serialised"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn explain_names_the_fields_behind_the_decision() {
    let output = run(
        &["explain", "--preset", "eks", "tests/fixtures/list.yaml"],
        None,
    );
    assert_eq!(code(&output), 0);
    let text = stdout(&output);
    assert!(text.contains("spec.containers[0].image = \"mcr.microsoft.com/windows/servercore:ltsc2022\"  ->  Windows build 10.0.20348"), "{text}");
    assert!(
        text.contains(
            "spec.containers[1].image = \"alpine:3.20\"  ->  Linux  [image, container log-shipper]"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "spec.template.spec.nodeSelector[kubernetes.io/os] = \"linux\"  ->  Linux  [nodeSelector]"
        ),
        "{text}"
    );
    let malformed =
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec: {template: 3}\n";
    let output = run(&["explain", "-"], Some(malformed));
    assert!(
        stdout(&output).contains("  not resolved: spec.template: "),
        "{}",
        stdout(&output)
    );
    let json = run(&["explain", "-o", "json", "tests/fixtures/list.yaml"], None);
    let value: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(value[0]["signals"][0]["source"], "nodeSelector");
    assert_eq!(value[0]["signals"][0]["os"], "windows");
}

fn corpus_report(dir: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["check", dir.to_str().unwrap(), "-o", "json"];
    args.extend_from_slice(extra);
    let output = run(&args, None);
    (code(&output), json_report(&output))
}

#[test]
fn corpus_is_checked_without_input_errors() {
    let Some(dir) = corpus() else { return };
    for settings in [&[][..], EKS, &["--preset", "gke"], &["--preset", "aks"]] {
        let (exit, report) = corpus_report(&dir, settings);
        let summary = &report["summary"];
        assert_eq!(summary["files"], 54, "{settings:?}");
        assert_eq!(summary["objects"], 54, "{settings:?}");
        assert_eq!(summary["errors"], 0, "{settings:?}: {report}");
        let rejected = summary["rejected"].as_u64().unwrap();
        assert_eq!(exit, if rejected > 0 { 1 } else { 0 }, "{settings:?}");
    }
}

#[test]
fn corpus_fix_is_idempotent_and_passes_check() {
    let Some(dir) = corpus() else { return };
    let (_, before) = corpus_report(&dir, EKS);
    let once = fix(&[dir.to_str().unwrap()], None);
    let once = stdout(&once);
    let twice = fix(&["-"], Some(once.as_bytes()));
    assert_eq!(stdout(&twice), once, "fix twice = fix once");
    let checked = json_report(&check(
        &["-"],
        &["--preset", "eks", "-o", "json"],
        Some(once.as_bytes()),
    ));
    assert_eq!(checked["summary"]["objects"], 54);
    assert_eq!(checked["summary"]["patched"], 0, "{checked}");
    assert_eq!(
        checked["summary"]["rejected"],
        before["summary"]["rejected"]
    );
}

#[test]
fn anchors_that_multiply_the_document_are_an_input_error_and_the_rest_is_checked() {
    let mut bomb = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        let aliases = vec![format!("*{previous}"); 9].join(", ");
        bomb.push_str(&format!("  {name}: &{name} [{aliases}]\n"));
    }
    bomb.push_str("---\napiVersion: v1\nkind: Pod\nmetadata: {name: after}\nspec: {containers: [{name: c, image: busybox}]}\n");
    let output = check(&["-"], &["-o", "json"], Some(bomb.as_bytes()));
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let report = json_report(&output);
    let reason = report["results"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("billion laughs"), "{reason}");
    assert_eq!(report["results"][1]["name"], "after");
    assert_eq!(
        report["results"][1]["verdict"], "patched",
        "defaults place it on Linux"
    );
}

#[test]
fn facts_answer_the_lookups_and_a_bad_facts_file_is_named() {
    let inputs = "../door/tests/inputs";
    let with = |facts: &str| {
        check(
            &[&format!("{inputs}/with-facts.yaml")],
            &[
                "-o",
                "json",
                "--settings",
                &format!("{inputs}/settings-inventory.yaml"),
                "--facts",
                facts,
            ],
            None,
        )
    };
    let output = with(&format!("{inputs}/facts.yaml"));
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let verdicts = verdicts(&json_report(&output));
    assert!(
        verdicts.contains(&("Pod/names-a-missing-class".into(), "rejected".into())),
        "{verdicts:?}"
    );
    assert!(
        verdicts.contains(&("Deployment/billing".into(), "patched".into())),
        "{verdicts:?}"
    );
    // Without facts nothing is looked up: the class is taken on trust.
    let without = check(
        &[&format!("{inputs}/with-facts.yaml")],
        &[
            "-o",
            "json",
            "--settings",
            &format!("{inputs}/settings-inventory.yaml"),
        ],
        None,
    );
    assert_eq!(code(&without), 0, "{}", stdout(&without));
    let dir = std::env::temp_dir().join(format!("os-placement-cli-facts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("facts.yaml");
    std::fs::write(&bad, "imagez: {}\n").unwrap();
    let output = with(bad.to_str().unwrap());
    assert_eq!(code(&output), 2);
    assert!(
        stdout(&output).is_empty(),
        "nothing is checked with bad facts"
    );
    assert!(
        stderr(&output).contains(&format!(
            "invalid facts: {}:1:9: unknown key \"imagez\"",
            bad.display()
        )),
        "{}",
        stderr(&output)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `check --audit`: objects as `kubectl get -o yaml` prints them, judged as
/// Kubewarden's background audit judges them.
#[test]
fn audit_fails_what_admission_would_change_and_pods_on_the_wrong_node() {
    let live = r#"apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: iis, namespace: shop, uid: u1, generation: 2, creationTimestamp: null}
  spec:
    selector: {matchLabels: {app: iis}}
    template:
      metadata: {labels: {app: iis}}
      spec:
        containers: [{name: iis, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]
  status: {replicas: 1, unavailableReplicas: 1}
- apiVersion: v1
  kind: Pod
  metadata:
    name: iis-5c9d-x2x7q
    namespace: shop
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: iis-5c9d, uid: r1, controller: true}]
  spec:
    nodeName: ip-10-0-1-11.ec2.internal
    containers: [{name: iis, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]
    tolerations: [{key: os, operator: Equal, value: windows, effect: NoSchedule}]
  status: {phase: Pending}
"#;
    let facts = common::repo_root().join("e2e/clusters/eks-mixed/nodes.yaml");
    let facts = facts.to_str().unwrap();
    let audited = check(
        &["-"],
        &[
            "--preset", "eks", "--audit", "--facts", facts, "--output", "json",
        ],
        Some(live.as_bytes()),
    );
    assert_eq!(code(&audited), 1, "{}", stderr(&audited));
    let report = json_report(&audited);
    assert_eq!(
        verdicts(&report),
        [
            ("Deployment/iis".to_owned(), "rejected".to_owned()),
            ("Pod/iis-5c9d-x2x7q".to_owned(), "rejected".to_owned())
        ],
        "{report}"
    );
    let text = stdout(&audited);
    assert!(
        text.contains("ip-10-0-1-11.ec2.internal") && text.contains("ReplicaSet iis-5c9d"),
        "{text}"
    );
    assert!(
        text.contains("wrong-node") && text.contains("missing-os-selector"),
        "{text}"
    );
    // Admission of the same objects: the Deployment is patched, the Pod admitted.
    let admitted = check(
        &["-"],
        &["--preset", "eks", "--facts", facts, "--output", "json"],
        Some(live.as_bytes()),
    );
    let verdicts = verdicts(&json_report(&admitted));
    assert!(
        verdicts.iter().all(|(_, v)| v != "rejected"),
        "{verdicts:?}"
    );
    // Nothing to fix in an audit.
    let fix = run(&["fix", "-", "--audit"], Some(live.as_bytes()));
    assert_eq!(code(&fix), 2, "{}", stderr(&fix));
    assert!(stderr(&fix).contains("check --audit"), "{}", stderr(&fix));
}
