//! Published facts the host could not give (`Facts::unreadable`): the pod
//! falls back to the rules of its references, and one warning for the
//! request says the facts could not be read, why, and the fix. The facts
//! syncer is blamed only for a failure it published (a `lookupFailed`
//! record). policy-server refuses a `kubernetes` host call for a resource
//! the policy's `contextAwareResources` does not list, and any call the
//! policy is not granted (policy-evaluator `runtimes/callback.rs`,
//! `host_callback`: "Policy has not been granted access to ...").

use crate::common::*;
use os_placement_core::{Code, Decision, Facts, ImageFacts, NodeFacts, Settings, Unreadable};
use serde_json::{json, Value};

/// What policy-server's refusal leaves the policy: no image facts, and the
/// node facts failed as the policy module words it.
fn refused(why: Unreadable) -> Facts {
    Facts {
        nodes: Some(NodeFacts::LookupFailed(
            "the node facts of namespace os-placement cannot be read: Host error: Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported.".into(),
        )),
        unreadable: Some(why),
        ..Facts::default()
    }
}

fn deployment(images: &[&str]) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
        "spec": {"selector": {}, "template": {"metadata": {}, "spec": spec_with_images(images)}}})
}

/// The `lookup-failed` warnings as the API server shows them.
fn lookup_lines(d: &Decision) -> Vec<String> {
    d.warnings
        .iter()
        .filter(|w| w.code == Code::LookupFailed)
        .map(|w| w.to_string())
        .collect()
}

/// The one `lookup-failed` warning of an admitted object, within the API
/// server's 256 characters and not cut.
fn the_warning(d: &Decision) -> String {
    assert!(d.accepted, "{}", message(d));
    let lines = lookup_lines(d);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = lines[0].clone();
    assert!(
        line.chars().count() <= 256,
        "{} chars: {line}",
        line.chars().count()
    );
    assert_eq!(
        d.warning_lines(),
        d.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>()
    );
    line
}

#[test]
fn a_refused_configmap_list_names_the_grant_not_the_syncer() {
    let object = deployment(&[PRIVATE]);
    let d = with_facts(&object, &eks(), &refused(Unreadable::ConfigMapsNotGranted));
    let line = the_warning(&d);
    assert_eq!(
        line,
        "spec.template.spec.containers[0].image: the image facts cannot be read (policy-server denies v1/ConfigMap), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; add v1/ConfigMap to the policy's contextAwareResources"
    );
    assert!(!line.contains("syncer"), "{line}");
    // The reference rules apply, as without facts.
    assert_eq!(d.patch, create(&object, &eks()).patch);
    // Negative: a failure the syncer published still names the syncer.
    let published = image_facts(PRIVATE, ImageFacts::LookupFailed("timeout".into()));
    let line = the_warning(&with_facts(&object, &eks(), &published));
    assert!(
        line.contains(
            "the syncer's lookup of registry.corp.example/billing/api:4.2 failed (timeout)"
        ) && line.ends_with("check that the syncer may reach the registry"),
        "{line}"
    );
    assert!(!line.contains("contextAwareResources"), "{line}");
}

#[test]
fn a_refused_host_capability_names_it() {
    let object = pod_with_images(&[PRIVATE]);
    let d = with_facts(&object, &eks(), &refused(Unreadable::CapabilityNotGranted));
    let line = the_warning(&d);
    assert_eq!(
        line,
        "spec.containers[0].image: the image facts cannot be read (policy-server denies kubernetes/list_resources_by_namespace), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; add it to the policy's hostCapabilities"
    );
}

/// policy-server took the call and failed it (no API server, a reflector
/// that cannot list): its words, then where to look, never the syncer.
#[test]
fn a_failed_host_call_quotes_the_host_and_names_policy_server() {
    let object = pod_with_images(&[PRIVATE]);
    let failed = Unreadable::Failed("kube::Client was not initialized properly".into());
    let line = the_warning(&with_facts(&object, &eks(), &refused(failed)));
    assert_eq!(
        line,
        "spec.containers[0].image: the image facts cannot be read (kube::Client was not initialized properly), so the OS of registry.corp.example/billing/api:4.2 is read from the reference; check policy-server's access to ConfigMaps in os-placement"
    );
    // Words over several lines become one: a warning is an HTTP header.
    let lines = Unreadable::Failed("list failed\n\nCaused by:\n    refused".into());
    let line = the_warning(&with_facts(&object, &eks(), &refused(lines)));
    assert!(line.contains("(list failed Caused by: refused)"), "{line}");
    // A long error, a long path and long references, the node facts lost
    // too: the host's words and then the image give way, the fix stays whole.
    let long = "error trying to connect: tcp connect error: Connection refused (os error 111) while listing ConfigMaps in namespace os-placement-system with the selector os-placement.kubewarden.io/facts in (cluster,shard-12)";
    let image = "registry.corp.example:5000/platform/teams/billing/internal/api-gateway-service:4.2.17-build.20240611";
    let other = "registry.corp.example:5000/platform/teams/billing/internal/ledger:1";
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "initContainers": [{"name": "i", "image": image}, {"name": "j", "image": other}],
            "containers": [{"name": "c", "image": WIN2022}]}}}}}});
    let settings =
        eks_with(json!({"imageFactsNamespace": "os-placement-system", "nodeInventory": "warn"}));
    let d = with_facts(&cron, &settings, &refused(Unreadable::Failed(long.into())));
    let line = the_warning(&d);
    assert!(
        line.starts_with("spec.jobTemplate.spec.template.spec.initContainers[0].image: the image and node facts cannot be read (error t"),
        "{line}"
    );
    assert!(line.contains("so the OS of registry.c"), "{line}");
    assert!(
        line.contains("(and 1 more) is read from the reference"),
        "{line}"
    );
    assert!(
        line.ends_with("; check policy-server's access to ConfigMaps in os-placement-system"),
        "{line}"
    );
}

#[test]
fn one_warning_for_the_request_not_one_per_image() {
    let images = [
        PRIVATE,
        "quay.io/corp/ledger:7",
        "registry.corp.example/billing/api:4.2",
        "ghcr.io/corp/tools:1.0",
    ];
    let object = deployment(&images);
    let d = with_facts(&object, &eks(), &refused(Unreadable::ConfigMapsNotGranted));
    let line = the_warning(&d);
    assert!(
        line.contains("the OS of registry.corp.example/billing/api:4.2 (and 2 more) is read from the reference"),
        "{line}"
    );
    // Negative: images whose reference decides are not named.
    let decided = deployment(&[WIN2022, LINUX_IMAGE]);
    let d = with_facts(&decided, &eks(), &refused(Unreadable::ConfigMapsNotGranted));
    assert!(lookup_lines(&d).is_empty(), "{:?}", d.warnings);
}

/// The node facts come with the image facts: one warning says both, and
/// the node warning that names the syncer is not added.
#[test]
fn the_node_check_lost_to_the_same_failure_is_said_in_the_same_warning() {
    let warn = eks_with(json!({"nodeInventory": "warn"}));
    let line = the_warning(&with_facts(
        &pod_with_images(&[PRIVATE]),
        &warn,
        &refused(Unreadable::ConfigMapsNotGranted),
    ));
    assert!(line.contains(": the image and node facts cannot be read (policy-server denies v1/ConfigMap), so the OS of registry.corp.example/billing/api:4.2"), "{line}");
    // Only the nodes: no image to name.
    let linux = pod_with_images(&[LINUX_IMAGE]);
    let line = the_warning(&with_facts(
        &linux,
        &warn,
        &refused(Unreadable::ConfigMapsNotGranted),
    ));
    assert_eq!(
        line,
        "spec: the node facts cannot be read (policy-server denies v1/ConfigMap), so no node check was made and no fromNodes taint read; add v1/ConfigMap to the policy's contextAwareResources"
    );
    // Negative: under nodeInventory auto the node facts are not mentioned.
    let d = with_facts(&linux, &eks(), &refused(Unreadable::ConfigMapsNotGranted));
    assert!(lookup_lines(&d).is_empty(), "{:?}", d.warnings);
    // Negative: node facts not published (no host failure) name the syncer.
    let unpublished = Facts {
        nodes: Some(NodeFacts::LookupFailed(
            "no node facts are published in namespace os-placement yet".into(),
        )),
        ..Facts::default()
    };
    let line = the_warning(&with_facts(&linux, &warn, &unpublished));
    assert!(line.contains("run the facts syncer"), "{line}");
}

/// `lookupFailure: reject` rejects an image whose facts the host could not
/// give, as it rejects a failed lookup; the nodes alone never reject.
#[test]
fn lookup_failure_reject_rejects_images_lost_to_the_host() {
    let strict: Settings = eks_with(json!({"lookupFailure": "reject", "nodeInventory": "warn"}));
    let d = with_facts(
        &pod_with_images(&[PRIVATE]),
        &strict,
        &refused(Unreadable::ConfigMapsNotGranted),
    );
    assert_rejected_with(&d, "lookup-failed");
    let text = message(&d);
    assert!(
        text.contains("policy-server denies v1/ConfigMap")
            && text.ends_with("add v1/ConfigMap to the policy's contextAwareResources, or set lookupFailure: warn"),
        "{text}"
    );
    assert!(lookup_lines(&d).is_empty(), "{:?}", d.warnings);
    // Negative: a pod that needed only the nodes is admitted, with the warning.
    let d = with_facts(
        &pod_with_images(&[LINUX_IMAGE]),
        &strict,
        &refused(Unreadable::ConfigMapsNotGranted),
    );
    assert!(the_warning(&d).contains("the node facts cannot be read"));
}

/// With `imageFacts: registry` the images are not read from the published
/// facts: only what was lost is said.
#[test]
fn registry_image_facts_are_not_said_lost() {
    let registry = eks_with(json!({"imageFacts": "registry"}));
    let facts = Facts {
        images: [(
            PRIVATE.to_string(),
            ImageFacts::LookupFailed("connection refused".into()),
        )]
        .into(),
        ..refused(Unreadable::ConfigMapsNotGranted)
    };
    let line = the_warning(&with_facts(&pod_with_images(&[PRIVATE]), &registry, &facts));
    assert!(line.contains("the registry lookup of"), "{line}");
}
