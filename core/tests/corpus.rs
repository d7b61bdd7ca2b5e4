//! Every manifest of the shared corpus comes out placed on the OS its
//! source documents, or rejected with a message naming path and fix.

use std::path::PathBuf;

use crate::audit::audit;
use crate::common::*;
use os_placement_core::Facts;
use os_placement_core::Kind;
use os_placement_core::Settings;
use serde_json::{json, Value};

fn corpus_dir() -> PathBuf {
    std::env::var_os("OS_PLACEMENT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
}

/// Whether the corpus is there: under CI its absence fails the test; on a
/// user's machine the test says it is skipped and why.
fn corpus_present() -> bool {
    let dir = corpus_dir();
    if dir.join("SOURCES.md").is_file() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "corpus not found at {} (set OS_PLACEMENT_CORPUS)",
        dir.display()
    );
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: corpus not found at {} (set OS_PLACEMENT_CORPUS)",
        dir.display()
    );
    false
}

/// (file, documented OS) from SOURCES.md.
fn documented() -> Vec<(String, String)> {
    let sources =
        std::fs::read_to_string(corpus_dir().join("SOURCES.md")).expect("corpus SOURCES.md");
    sources
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let file = cells.get(1)?;
            let os = cells.get(6)?;
            (file.ends_with(".yaml") && (*os == "linux" || *os == "windows"))
                .then(|| (file.to_string(), os.to_string()))
        })
        .collect()
}

/// The pod spec of `object`, where the core says its kind keeps it.
fn pod_spec(object: &Value) -> &Value {
    let kind = object["kind"]
        .as_str()
        .and_then(Kind::parse)
        .unwrap_or(Kind::Pod);
    kind.pod_spec_fields()
        .iter()
        .fold(object, |v, field| &v[*field])
}

fn selects(spec: &Value, os: &str) -> bool {
    spec["nodeSelector"]["kubernetes.io/os"] == os
}

fn affinity_selects_only(spec: &Value, os: &str) -> bool {
    let terms = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    terms.as_array().is_some_and(|terms| {
        !terms.is_empty()
            && terms.iter().all(|t| {
                t["matchExpressions"].as_array().is_some_and(|es| {
                    es.iter().any(|e| {
                        e["key"] == "kubernetes.io/os"
                            && e["operator"] == "In"
                            && e["values"] == json!([os])
                    })
                })
            })
    })
}

/// The Windows taint is configured, keeps pods off (NoSchedule, NoExecute)
/// and none of the pod's tolerations tolerates it. Written out from
/// k8s.io/api/core/v1/toleration.go `ToleratesTaint` rather than calling the
/// core's `tolerates`, which would vouch for itself.
fn kept_off_by_taint(spec: &Value, settings: &Settings) -> bool {
    let Some(taint) = settings.windows_taint() else {
        return false;
    };
    if taint.effect != "NoSchedule" && taint.effect != "NoExecute" {
        return false;
    }
    let tolerates = |t: &Value| {
        let field = |name: &str| t[name].as_str().unwrap_or("");
        (field("effect").is_empty() || field("effect") == taint.effect)
            && (field("key").is_empty() || field("key") == taint.key)
            && match field("operator") {
                "" | "Equal" => field("value") == taint.value,
                "Exists" => true,
                _ => false,
            }
    };
    !spec["tolerations"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(tolerates))
}

/// `expected`: every file the settings must reject, with the code and the
/// path of each violation; every other file must be placed.
fn check_corpus(settings: &Settings, label: &str, expected: &[(&str, &str, &str)]) {
    if !corpus_present() {
        return;
    }
    let files = documented();
    assert_eq!(files.len(), 54, "SOURCES.md rows");
    let mut rejected = Vec::new();
    for (file, os) in files {
        let text = std::fs::read_to_string(corpus_dir().join(&file)).unwrap();
        let object = yaml(&text);
        let d = create(&object, settings);
        // The audit of the object as it is fails where admission would
        // change or refuse it; of the object as admitted, it passes.
        let audited = audit(&object, settings, &Facts::default());
        assert_eq!(
            audited.accepted,
            d.accepted && d.patch.is_empty(),
            "[{label}] {file}: audit {:?}",
            audited.message()
        );
        if d.accepted {
            let placed = audit(&result_object(&object, &d), settings, &Facts::default());
            assert!(
                placed.accepted,
                "[{label}] {file}: placed object fails the audit: {:?}",
                placed.message()
            );
        }
        if !d.accepted {
            let msg = message(&d);
            assert!(!msg.is_empty(), "{file}: empty rejection");
            for line in msg.lines() {
                assert!(
                    line.contains(": ") && line.contains("; "),
                    "{file}: bad line {line}"
                );
            }
            for v in &d.violations {
                rejected.push((file.clone(), v.code.as_str().to_string(), v.path.clone()));
            }
            continue;
        }
        let out = result_object(&object, &d);
        let spec = pod_spec(&out);
        let placed = match os.as_str() {
            "windows" => selects(spec, "windows"),
            _ => {
                selects(spec, "linux")
                    || affinity_selects_only(spec, "linux")
                    || kept_off_by_taint(spec, settings)
            }
        };
        assert!(
            placed,
            "[{label}] {file} ({os}) not placed: {}",
            serde_json::to_string(spec).unwrap()
        );
        assert_idempotent(&object, &d, settings);
    }
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(f, c, p)| (f.to_string(), c.to_string(), p.to_string()))
        .collect();
    assert_eq!(rejected, expected, "[{label}] rejections");
}

#[test]
fn corpus_is_placed_with_default_settings() {
    check_corpus(&Settings::default(), "default", &[]);
}

#[test]
fn corpus_is_placed_on_eks() {
    check_corpus(&eks(), "eks", &[]);
}

#[test]
fn corpus_is_placed_on_gke_with_pod_os() {
    check_corpus(
        &settings(
            json!({"windowsTaint": {"key": "node.kubernetes.io/os", "value": "windows", "effect": "NoSchedule"}, "setPodOS": true}),
        ),
        "gke",
        // With setPodOS the pods get spec.os.name: windows, and the API
        // server then refuses Linux-only fields (k8s.io/kubernetes
        // pkg/apis/core/validation validateWindows): these two carry one.
        &[
            (
                "15-smbcsi-daemonset-csi-smb-node-win.yaml",
                "forbidden-field",
                "spec.template.spec.securityContext.seccompProfile",
            ),
            (
                "21-mssdn-daemonset-enable-win-flags.yaml",
                "forbidden-field",
                "spec.template.spec.containers[0].securityContext.privileged",
            ),
        ],
    );
}
