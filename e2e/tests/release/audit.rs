//! Background audit through the real policy-server's `/audit/<policy>`
//! endpoint, for every policy in `deploy/` that sets `backgroundAudit`.
//! Requests are shaped as Kubewarden's audit scanner builds them
//! (kubewarden-controller `internal/audit-scanner/scanner/admission_request.go`,
//! as of the 1.36 line: `CREATE`, `resource.resource` set to the Kind, no
//! `userInfo`), and read as its report reads the answer
//! (`internal/audit-scanner/report/report.go`, `computePolicyResult`:
//! `pass` whenever `allowed` is true, the patch ignored). policy-server runs
//! against the fake Kubernetes API, which serves the `eks-mixed` cluster and
//! the facts the syncer would publish for it. The table is printed and
//! written to `target/audit/report.md`.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use os_placement_door::{audit_request, HostFacts};
use os_placement_e2e::capabilities::Cluster;
use os_placement_e2e::faults::api::FakeApi;
use os_placement_e2e::http::post_json;
use os_placement_e2e::policy_server::PolicyServer;
use os_placement_e2e::{admission_request, read_yaml, repo_root};
use serde_json::{json, Value};

use super::support::{policy_server, write_annotated};

const IIS_2022: &str = "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022";
const LINUX_NODE: &str = "ip-10-0-1-11.ec2.internal";
const WINDOWS_2022_NODE: &str = "ip-10-0-3-31.ec2.internal";

/// The policies of `deploy/` that audit: (file stem, the policy object).
fn auditing_policies() -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("deploy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        // Manifests only: deploy/aws holds IAM policies.
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for object in os_placement_door::read_stream(&text) {
            let object = object.unwrap().root.to_json();
            if object["kind"] == "ClusterAdmissionPolicy"
                && object["spec"]["backgroundAudit"] == true
            {
                let stem = file.file_stem().unwrap().to_string_lossy().to_string();
                found.push((stem, object));
            }
        }
    }
    found
}

/// The `eks-mixed` cluster, the facts namespace and the facts published for it.
fn cluster_with_facts() -> Vec<Value> {
    let dir = repo_root().join("e2e/clusters/eks-mixed");
    let mut objects = Cluster::load(&dir).unwrap().objects().to_vec();
    let mut facts = HostFacts::default();
    for file in ["nodes.yaml", "runtimeclasses.yaml"] {
        facts
            .add_text(&std::fs::read_to_string(dir.join(file)).unwrap())
            .unwrap();
    }
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    objects.extend(facts.published("os-placement"));
    objects
}

/// The id of the policy that places objects for policy `id`: itself, or
/// for a policy in monitor mode (which patches nothing at admission) a
/// twin in protect mode.
fn placing(id: &str, policy: &Value) -> String {
    if policy["spec"]["mode"] == "monitor" {
        format!("{id}-protect")
    } else {
        id.to_string()
    }
}

/// One policy-server serving every auditing policy, by file stem, and a
/// protect twin of each monitor one.
fn serve(
    dir: &Path,
    binary: &Path,
    kubeconfig: &Path,
    policies: &[(String, Value)],
) -> PolicyServer {
    let module = write_annotated(dir);
    let twins = policies
        .iter()
        .filter(|(id, p)| placing(id, p) != *id)
        .map(|(id, p)| {
            let mut twin = p.clone();
            twin["spec"]["mode"] = json!("protect");
            (placing(id, p), twin)
        });
    let entries: serde_json::Map<String, Value> = policies
        .iter()
        .cloned()
        .chain(twins)
        .map(|(id, policy)| {
            let spec = &policy["spec"];
            (
                id.clone(),
                json!({
                    "module": format!("file://{}", module.display()),
                    "settings": spec["settings"],
                    "allowedToMutate": spec["mutating"],
                    "policyMode": spec["mode"],
                    "contextAwareResources": spec["contextAwareResources"],
                    // What the controller grants a ClusterAdmissionPolicy.
                    "hostCapabilities": ["*"],
                }),
            )
        })
        .collect();
    let mut server =
        PolicyServer::spawn_with_kubeconfig(binary, dir, &Value::Object(entries), None, kubeconfig)
            .unwrap();
    server
        .wait_ready(Duration::from_secs(180))
        .unwrap_or_else(|e| panic!("{e:#}"));
    server
}

fn workload(kind: &str, name: &str, spec: Value) -> Value {
    let template = json!({"metadata": {"labels": {"app": name}}, "spec": spec});
    let (api_version, body) = match kind {
        "CronJob" => (
            "batch/v1",
            json!({"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template}}}),
        ),
        _ => (
            "apps/v1",
            json!({"selector": {"matchLabels": {"app": name}}, "template": template}),
        ),
    };
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
            "creationTimestamp": null, "generation": 2,
            "managedFields": [{"manager": "helm", "operation": "Update"}]},
        "spec": body, "status": {"observedGeneration": 2}})
}

/// A Pod of ReplicaSet iis-5c9d running IIS on `node`, as the API serves it.
fn running_pod(node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "iis-5c9d-x2x7q", "namespace": "shop", "uid": "pod-1",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "iis-5c9d",
                "uid": "rs-1", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "iis", "image": IIS_2022}],
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]},
        "status": {"phase": "Running", "hostIP": "10.0.1.11"}})
}

/// `allowed` and the message of policy `id`'s answer at `endpoint`.
fn ask(server: &PolicyServer, endpoint: &str, id: &str, request: Value) -> Value {
    post_json(
        server.port(),
        &format!("/{endpoint}/{id}"),
        &json!({"request": request}),
    )
    .unwrap_or_else(|e| panic!("{endpoint}/{id}: {e:#}"))["response"]
        .clone()
}

/// The object as admission leaves it: the answer's patch applied.
fn admitted(server: &PolicyServer, id: &str, object: &Value) -> Value {
    let response = ask(
        server,
        "validate",
        id,
        admission_request(object, "CREATE", None, None),
    );
    assert_eq!(response["allowed"], true, "{id}: {response}");
    let mut placed = object.clone();
    if let Some(patch) = response["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut placed, &patch).unwrap();
    }
    assert_ne!(&placed, object, "{id}: admission should place it");
    placed
}

/// What a report result (OpenReports or PolicyReports) shows for one answer.
fn result(response: &Value) -> &'static str {
    if response["allowed"] == true {
        "pass"
    } else {
        "fail"
    }
}

#[test]
fn audits_fail_misplaced_objects_and_pass_placed_ones_for_every_auditing_policy() {
    let Some(binary) = policy_server() else {
        return;
    };
    let policies = auditing_policies();
    assert_eq!(policies.len(), 6, "deploy/ policies with backgroundAudit");
    let dir = tempfile::tempdir().unwrap();
    let api = FakeApi::start(cluster_with_facts()).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();
    let server = serve(dir.path(), &binary, &kubeconfig, &policies);

    let iis = json!({"containers": [{"name": "iis", "image": IIS_2022}]});
    let misplaced: Vec<Value> = ["Deployment", "DaemonSet", "CronJob"]
        .iter()
        .map(|kind| workload(kind, &format!("iis-{}", kind.to_lowercase()), iis.clone()))
        .collect();
    let mut rows = Vec::new();
    for (id, policy) in &policies {
        for object in &misplaced {
            let kind = object["kind"].as_str().unwrap();
            let failed = ask(&server, "audit", id, audit_request(object));
            rows.push(Row::of(
                id,
                format!("{kind}, ltsc2022, no placement"),
                "fail",
                &failed,
            ));
            let placed = admitted(&server, &placing(id, policy), object);
            let passed = ask(&server, "audit", id, audit_request(&placed));
            rows.push(Row::of(
                id,
                format!("{kind}, as admission placed it"),
                "pass",
                &passed,
            ));
        }
        let wrong = ask(
            &server,
            "audit",
            id,
            audit_request(&running_pod(LINUX_NODE)),
        );
        rows.push(Row::of(
            id,
            "Pod running IIS ltsc2022 on a Linux node".into(),
            "fail",
            &wrong,
        ));
        let right = ask(
            &server,
            "audit",
            id,
            audit_request(&running_pod(WINDOWS_2022_NODE)),
        );
        rows.push(Row::of(
            id,
            "Pod running it on a 2022 node, no selector".into(),
            "pass",
            &right,
        ));
        // The same Pod at admission is judged as before: bound, warned, admitted.
        let admission = ask(
            &server,
            "validate",
            id,
            admission_request(&running_pod(LINUX_NODE), "CREATE", None, None),
        );
        assert_eq!(admission["allowed"], true, "{id}: {admission}");
    }
    save_report(&rows);
    for row in &rows {
        assert!(
            !row.patched,
            "{} {}: an audit answer patches nothing",
            row.policy, row.object
        );
        assert_eq!(
            row.result, row.expected,
            "{} {}: {}",
            row.policy, row.object, row.message
        );
        if row.expected == "fail" {
            let wanted: &[&str] = if row.object.starts_with("Pod") {
                &[
                    LINUX_NODE,
                    "ReplicaSet iis-5c9d",
                    "node.kubernetes.io/windows-build: 10.0.20348",
                ]
            } else {
                &["add nodeSelector kubernetes.io/os", "10.0.20348"]
            };
            for text in wanted {
                assert!(
                    row.message.contains(text),
                    "{} {}: {text:?} in {}",
                    row.policy,
                    row.object,
                    row.message
                );
            }
        }
    }
}

/// One audit answer, as a report result would show it.
struct Row {
    policy: String,
    object: String,
    expected: &'static str,
    result: &'static str,
    message: String,
    patched: bool,
}

impl Row {
    fn of(policy: &str, object: String, expected: &'static str, response: &Value) -> Row {
        Row {
            policy: policy.to_string(),
            object,
            expected,
            result: result(response),
            message: response["status"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            patched: response.get("patch").is_some_and(|p| !p.is_null()),
        }
    }
}

fn save_report(rows: &[Row]) {
    let mut table =
        String::from("| policy | object | report | message (first line) |\n|---|---|---|---|\n");
    for row in rows {
        let first = row
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .replace('|', "\\|");
        table.push_str(&format!(
            "| {} | {} | {} | {first} |\n",
            row.policy, row.object, row.result
        ));
    }
    eprintln!("{table}");
    let dir = repo_root().join("target/audit");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.md"), table).unwrap();
}

#[test]
fn deploy_policies_carry_the_report_annotations() {
    let metadata = read_yaml(&repo_root().join("metadata.yml")).unwrap();
    let annotations = &metadata["annotations"];
    for key in [
        "io.kubewarden.policy.severity",
        "io.kubewarden.policy.category",
    ] {
        let value = annotations[key].as_str().unwrap_or_default();
        assert!(!value.is_empty(), "metadata.yml lacks {key}");
        for (id, policy) in auditing_policies() {
            assert_eq!(
                policy["metadata"]["annotations"][key], value,
                "deploy/{id}.yaml: {key} as in metadata.yml"
            );
        }
    }
}
