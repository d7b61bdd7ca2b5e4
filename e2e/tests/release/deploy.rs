//! The ClusterAdmissionPolicy manifests in deploy/: they agree with
//! metadata.yml, and the policy module accepts their settings.

use os_placement_e2e::{read_yaml, repo_root};
use serde_json::Value;

use super::support::{annotated_module, metadata_yml};

fn image() -> String {
    let annotations = &metadata_yml()["annotations"];
    format!(
        "{}:v{}",
        annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        annotations["io.kubewarden.policy.version"]
            .as_str()
            .unwrap()
    )
}

const DEPLOY: [&str; 6] = ["eks", "gke", "aks", "runtimeclass", "monitor", "rke2"];

#[test]
fn deploy_manifests_match_metadata_and_their_settings_are_valid() {
    let metadata = metadata_yml();
    for name in DEPLOY {
        let path = repo_root().join(format!("deploy/{name}.yaml"));
        let policy = read_yaml(&path).unwrap();
        let spec = &policy["spec"];
        assert_eq!(policy["apiVersion"], "policies.kubewarden.io/v1", "{name}");
        assert_eq!(policy["kind"], "ClusterAdmissionPolicy", "{name}");
        assert_eq!(spec["rules"], metadata["rules"], "{name}: rules");
        assert_eq!(spec["mutating"], metadata["mutating"], "{name}: mutating");
        assert_eq!(
            spec["contextAwareResources"], metadata["contextAwareResources"],
            "{name}: contextAwareResources"
        );
        assert_eq!(
            spec["backgroundAudit"], metadata["backgroundAudit"],
            "{name}"
        );
        assert_eq!(
            spec["module"].as_str(),
            Some(format!("registry://{}", image()).as_str()),
            "{name}: module"
        );
        // Protect fails closed (a pod admitted unplaced may never start);
        // monitor only records, so it fails open.
        let failure_policy = if name == "monitor" { "Ignore" } else { "Fail" };
        assert_eq!(spec["failurePolicy"], failure_policy, "{name}");
        // Answers take milliseconds (docs/registry-faults.md); a stalled
        // policy server costs a request 5 s, not the API server's default 10.
        assert_eq!(spec["timeoutSeconds"], 5, "{name}");
        // Its own PolicyServer: its faults cannot stall other policies.
        assert_eq!(spec["policyServer"], "os-placement", "{name}");
        let excluded = &spec["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(excluded["operator"], "NotIn", "{name}");
        assert!(
            excluded["values"]
                .as_array()
                .unwrap()
                .contains(&Value::from("kube-system")),
            "{name}: kube-system not excluded"
        );
        let expected_mode = if name == "monitor" {
            "monitor"
        } else {
            "protect"
        };
        assert_eq!(spec["mode"], expected_mode, "{name}");
        // policy-server refuses to load a policy whose settings fail validate_settings.
        let answer = annotated_module()
            .instantiate()
            .unwrap()
            .validate_settings(&spec["settings"])
            .unwrap();
        assert!(answer.valid, "{name}: {answer:?}");
    }
}

#[test]
fn deploy_settings_are_the_example_settings() {
    // The manifests carry the documented example settings, so `make run` shows what they do.
    for (deploy, example) in [
        ("eks", "eks"),
        ("gke", "gke"),
        ("aks", "aks"),
        ("runtimeclass", "runtimeclass"),
        ("monitor", "eks"),
    ] {
        let policy = read_yaml(&repo_root().join(format!("deploy/{deploy}.yaml"))).unwrap();
        let settings =
            read_yaml(&repo_root().join(format!("examples/settings/{example}.yaml"))).unwrap();
        assert_eq!(policy["spec"]["settings"], settings, "{deploy}");
    }
}

/// The objects of a multi-document manifest in deploy/, by kind and name.
fn deploy_objects(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join("deploy").join(file)).unwrap();
    os_placement_e2e::capabilities::objects_of(&text).unwrap()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// Every (apiGroup, resource, verb) a Role or ClusterRole grants.
fn grants(role: &Value) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in rule["apiGroups"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                for verb in rule["verbs"].as_array().unwrap() {
                    out.insert(format!(
                        "{}/{}:{}",
                        group.as_str().unwrap(),
                        resource.as_str().unwrap(),
                        verb.as_str().unwrap()
                    ));
                }
            }
        }
    }
    out
}

fn set(items: &[&str]) -> std::collections::BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The PolicyServer the policies name reads what their contextAwareResources
/// list, the image facts only in their namespace, and writes nothing.
#[test]
fn the_policy_server_reads_what_the_policy_reads_and_nothing_more() {
    let objects = deploy_objects("policy-server.yaml");
    let server = find(&objects, "PolicyServer", "os-placement");
    let account = server["spec"]["serviceAccountName"].as_str().unwrap();
    find(&objects, "ServiceAccount", account);
    assert_eq!(
        grants(find(&objects, "ClusterRole", "os-placement-policy-server")),
        set(&[
            "node.k8s.io/runtimeclasses:get",
            "node.k8s.io/runtimeclasses:list",
            "node.k8s.io/runtimeclasses:watch"
        ])
    );
    let role = find(&objects, "Role", "os-placement-policy-server");
    assert_eq!(
        role["metadata"]["namespace"],
        os_placement_core::DEFAULT_FACTS_NAMESPACE
    );
    assert_eq!(
        grants(role),
        set(&["/configmaps:get", "/configmaps:list", "/configmaps:watch"])
    );
    for binding in ["ClusterRoleBinding", "RoleBinding"] {
        let subject = &find(&objects, binding, "os-placement-policy-server")["subjects"][0];
        assert_eq!(subject["name"], account, "{binding}");
    }
    // Every kind the policy reads is one the server may read.
    let metadata = metadata_yml();
    let kinds: Vec<&str> = metadata["contextAwareResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["RuntimeClass", "ConfigMap"]);
}

/// The syncer lists and watches workloads, Nodes, RuntimeClasses and
/// Karpenter's NodePools and node classes, writes ConfigMaps and its Lease
/// only in the facts namespace, and publishes where the policy reads by
/// default; two replicas, one kept through disruptions, probed and scraped
/// on the port named `metrics`.
#[test]
fn the_facts_syncer_watches_the_cluster_and_writes_only_its_config_maps() {
    let objects = deploy_objects("facts-sync.yaml");
    let namespace = os_placement_core::DEFAULT_FACTS_NAMESPACE;
    assert_eq!(
        grants(find(&objects, "ClusterRole", "os-placement-facts-sync")),
        set(&[
            "/pods:list",
            "/pods:watch",
            "/replicationcontrollers:list",
            "/replicationcontrollers:watch",
            "/nodes:list",
            "/nodes:watch",
            "apps/deployments:list",
            "apps/deployments:watch",
            "apps/replicasets:list",
            "apps/replicasets:watch",
            "apps/statefulsets:list",
            "apps/statefulsets:watch",
            "apps/daemonsets:list",
            "apps/daemonsets:watch",
            "batch/jobs:list",
            "batch/jobs:watch",
            "batch/cronjobs:list",
            "batch/cronjobs:watch",
            "node.k8s.io/runtimeclasses:list",
            "node.k8s.io/runtimeclasses:watch",
            "karpenter.sh/nodepools:list",
            "karpenter.sh/nodepools:watch",
            "karpenter.k8s.aws/ec2nodeclasses:list",
            "karpenter.k8s.aws/ec2nodeclasses:watch",
            "eks.amazonaws.com/nodeclasses:list",
            "eks.amazonaws.com/nodeclasses:watch"
        ])
    );
    let role = find(&objects, "Role", "os-placement-facts-sync");
    assert_eq!(role["metadata"]["namespace"], namespace);
    assert_eq!(
        grants(role),
        set(&[
            "/configmaps:get",
            "/configmaps:list",
            "/configmaps:create",
            "/configmaps:update",
            "/configmaps:delete",
            "coordination.k8s.io/leases:get",
            "coordination.k8s.io/leases:create",
            "coordination.k8s.io/leases:update"
        ])
    );
    the_facts_syncer_runs_two_replicas_probed_on_its_metrics_port(&objects);
    let cron = deploy_objects("facts-sync-cronjob.yaml");
    let deployment =
        &find(&objects, "Deployment", "os-placement-facts-sync")["spec"]["template"]["spec"];
    let job = &find(&cron, "CronJob", "os-placement-facts-sync")["spec"]["jobTemplate"]["spec"]
        ["template"]["spec"];
    for (what, pod, mode) in [
        ("Deployment", deployment, "--interval"),
        ("CronJob", job, "--once"),
    ] {
        assert_eq!(
            pod["serviceAccountName"], "os-placement-facts-sync",
            "{what}"
        );
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args[..4],
            ["facts", "sync", "--namespace", namespace],
            "{what}"
        );
        assert!(args.contains(&mode), "{what}: {args:?}");
    }
    // One run takes no Lease and serves nothing: no port to name.
    assert!(job["containers"][0]["ports"].is_null());
    assert!(job["containers"][0]["livenessProbe"].is_null());
}

fn the_facts_syncer_runs_two_replicas_probed_on_its_metrics_port(objects: &[Value]) {
    let deployment = find(objects, "Deployment", "os-placement-facts-sync");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let budget = find(objects, "PodDisruptionBudget", "os-placement-facts-sync");
    assert_eq!(budget["apiVersion"], "policy/v1");
    assert_eq!(budget["spec"]["minAvailable"], 1);
    assert_eq!(&budget["spec"]["selector"]["matchLabels"], labels);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let port = &container["ports"][0];
    assert_eq!(
        (port["name"].as_str(), port["containerPort"].as_u64()),
        (Some("metrics"), Some(9090))
    );
    // The syncer's default --metrics-address is 0.0.0.0:9090.
    let args = container["args"].as_array().unwrap();
    assert!(!args.iter().any(|a| a == "--metrics-address"), "{args:?}");
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &container[probe]["httpGet"];
        assert_eq!(
            (get["path"].as_str(), get["port"].as_str()),
            (Some(path), Some("metrics")),
            "{probe}"
        );
    }
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], "9090");
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
}

/// What an IAM policy allows: its actions, each with the resources it is
/// allowed on; an error for a statement that is not a plain `Allow` of
/// listed actions on listed resources (`NotAction`, `NotResource`, `Deny`).
fn allowed(policy: &Value) -> Result<std::collections::BTreeMap<String, Vec<String>>, String> {
    let strings = |value: &Value| -> Result<Vec<String>, String> {
        match value {
            Value::String(one) => Ok(vec![one.clone()]),
            Value::Array(list) => list
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or(format!("{v}")))
                .collect(),
            other => Err(format!("not a string or a list: {other}")),
        }
    };
    let mut allowed = std::collections::BTreeMap::<String, Vec<String>>::new();
    let statements = policy["Statement"].as_array().ok_or("no Statement list")?;
    for statement in statements {
        let keys: Vec<&String> = statement.as_object().ok_or("a statement")?.keys().collect();
        if keys
            .iter()
            .any(|k| !["Sid", "Effect", "Action", "Resource"].contains(&k.as_str()))
        {
            return Err(format!("unexpected keys {keys:?}"));
        }
        if statement["Effect"] != "Allow" {
            return Err(format!("Effect {}", statement["Effect"]));
        }
        let resources = strings(&statement["Resource"])?;
        for action in strings(&statement["Action"])? {
            allowed
                .entry(action)
                .or_default()
                .extend(resources.iter().cloned());
        }
    }
    Ok(allowed)
}

/// The least policy reading image platforms from ECR (AWS's "Private
/// repository policies" and "Amazon ECR managed policies"): the
/// authorization token, which has no resource, then BatchGetImage for
/// manifests and GetDownloadUrlForLayer for the config blob, on the
/// repositories only; nothing else.
fn least_ecr_read(policy: &Value) -> Result<(), String> {
    let allowed = allowed(policy)?;
    let actions: Vec<&str> = allowed.keys().map(String::as_str).collect();
    if actions
        != [
            "ecr:BatchGetImage",
            "ecr:GetAuthorizationToken",
            "ecr:GetDownloadUrlForLayer",
        ]
    {
        return Err(format!("actions {actions:?}"));
    }
    for (action, resources) in &allowed {
        let fits = |r: &String| match action.as_str() {
            "ecr:GetAuthorizationToken" => r == "*",
            _ => r.starts_with("arn:aws:ecr:") && r.contains(":repository/"),
        };
        if !resources.iter().all(fits) {
            return Err(format!("{action} on {resources:?}"));
        }
    }
    Ok(())
}

/// A change made to a policy.
type Edit = fn(&mut Value);

/// deploy/aws: the least IAM policy, and trust policies naming the
/// syncer's ServiceAccount as deploy/facts-sync.yaml creates it.
#[test]
fn the_aws_policies_grant_reading_images_and_trust_the_syncers_service_account() {
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(repo_root().join("deploy/aws").join(name)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let policy = read("ecr-read-policy.json");
    assert_eq!(least_ecr_read(&policy), Ok(()));
    // Wider, narrower or other policies are not the least one.
    let edits: [(&str, Edit); 6] = [
        ("an extra action", |p| {
            p["Statement"][1]["Action"] = serde_json::json!([
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
                "ecr:PutImage"
            ])
        }),
        ("a wildcard", |p| {
            p["Statement"][1]["Action"] = "ecr:*".into()
        }),
        ("a missing action", |p| {
            p["Statement"][1]["Action"] = "ecr:BatchGetImage".into()
        }),
        ("the repositories' actions on every resource", |p| {
            p["Statement"][1]["Resource"] = "*".into()
        }),
        ("a NotAction", |p| {
            let action = p["Statement"][1]["Action"].take();
            p["Statement"][1]["NotAction"] = action;
        }),
        ("a Deny", |p| p["Statement"][0]["Effect"] = "Deny".into()),
    ];
    for (what, edit) in edits {
        let mut changed = policy.clone();
        edit(&mut changed);
        assert!(least_ecr_read(&changed).is_err(), "{what}");
    }

    let sync = deploy_objects("facts-sync.yaml");
    let deployment = find(&sync, "Deployment", "os-placement-facts-sync");
    let account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap();
    let namespace = deployment["metadata"]["namespace"].as_str().unwrap();
    let irsa = read("irsa-trust-policy.json");
    let statement = &irsa["Statement"][0];
    assert_eq!(statement["Effect"], "Allow");
    assert_eq!(statement["Action"], "sts:AssumeRoleWithWebIdentity");
    let provider = statement["Principal"]["Federated"]
        .as_str()
        .unwrap()
        .split_once(":oidc-provider/")
        .unwrap()
        .1;
    let condition = &statement["Condition"]["StringEquals"];
    assert_eq!(
        condition[format!("{provider}:sub")],
        format!("system:serviceaccount:{namespace}:{account}")
    );
    assert_eq!(condition[format!("{provider}:aud")], "sts.amazonaws.com");
    let pod_identity = read("pod-identity-trust-policy.json");
    let statement = &pod_identity["Statement"][0];
    assert_eq!(statement["Effect"], "Allow");
    assert_eq!(statement["Principal"]["Service"], "pods.eks.amazonaws.com");
    assert_eq!(
        statement["Action"],
        serde_json::json!(["sts:AssumeRole", "sts:TagSession"])
    );

    // The ServiceAccount's cloud annotations and the pods' Azure label are
    // offered, commented: none is set by default.
    let service_account = find(&sync, "ServiceAccount", account);
    assert!(service_account["metadata"]["annotations"].is_null());
    let text = std::fs::read_to_string(repo_root().join("deploy/facts-sync.yaml")).unwrap();
    for offered in [
        "#   eks.amazonaws.com/role-arn: arn:aws:iam::",
        "aws eks create-pod-identity-association",
        "#   iam.gke.io/gcp-service-account: ",
        "#   azure.workload.identity/client-id: ",
        "# azure.workload.identity/use: \"true\"",
    ] {
        assert!(text.contains(offered), "{offered}");
    }
    // The default manifest reads no Secret: pull secrets need their own.
    let role = find(&sync, "ClusterRole", "os-placement-facts-sync");
    assert!(
        !grants(role).iter().any(|g| g.starts_with("/secrets")),
        "{:?}",
        grants(role)
    );
}

/// deploy/facts-sync-pull-secrets.yaml: get (never list or watch) on
/// Secrets and ServiceAccounts, bound to the syncer's ServiceAccount as
/// deploy/facts-sync.yaml creates it; the patch adding the flag is shown.
#[test]
fn the_pull_secrets_manifest_grants_only_get_on_secrets_and_service_accounts() {
    let objects = deploy_objects("facts-sync-pull-secrets.yaml");
    let name = "os-placement-facts-sync-pull-secrets";
    let role = find(&objects, "ClusterRole", name);
    assert_eq!(grants(role), set(&["/secrets:get", "/serviceaccounts:get"]));
    let binding = find(&objects, "ClusterRoleBinding", name);
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], name);
    let sync = deploy_objects("facts-sync.yaml");
    let deployment = find(&sync, "Deployment", "os-placement-facts-sync");
    let subject = &binding["subjects"][0];
    assert_eq!(subject["kind"], "ServiceAccount");
    assert_eq!(
        subject["name"],
        deployment["spec"]["template"]["spec"]["serviceAccountName"]
    );
    assert_eq!(subject["namespace"], deployment["metadata"]["namespace"]);
    assert_eq!(objects.len(), 2, "nothing else");
    // The flag is added by the patch the file shows.
    let text =
        std::fs::read_to_string(repo_root().join("deploy/facts-sync-pull-secrets.yaml")).unwrap();
    assert!(text.contains(r#""value": "--pull-secrets""#));
}
