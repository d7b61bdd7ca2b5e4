//! What an image the published facts do not hold yet does, by what the
//! facts syncer's heartbeat says: nothing while it reports (a controller's
//! Pod whose placement depends on the image waits for it), one warning
//! naming the syncer when it is stale, absent or nothing is published.
//! Controllers retry a refused create with backoff: kubernetes
//! `pkg/controller/replicaset/replica_set.go` (`manageReplicas` returns the
//! error, the item is requeued rate-limited), likewise the Job, DaemonSet
//! and StatefulSet controllers.

use crate::audit::audit_request;
use crate::common::*;
use os_placement_core::{
    Admission, Code, Decision, Facts, ImageFacts, Platform, Settings, SyncerState,
};
use serde_json::{json, Value};

const NGINX: &str = "nginx:1.27";

fn facts(images: &[(&str, ImageFacts)], syncer: Option<SyncerState>) -> Facts {
    Facts {
        images: images
            .iter()
            .map(|(i, f)| (i.to_string(), f.clone()))
            .collect(),
        syncer,
        ..Facts::default()
    }
}

fn alive() -> Option<SyncerState> {
    Some(SyncerState::Alive { age: 4 })
}

/// A Pod of `owner` (apiVersion, kind) running `images`.
fn owned_pod(owner: Option<(&str, &str)>, images: &[&str]) -> Value {
    let mut pod = pod_with_images(images);
    pod["metadata"]["namespace"] = json!("shop");
    if let Some((api_version, kind)) = owner {
        pod["metadata"]["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind,
            "name": "web-7d4b9", "uid": "1", "controller": true}]);
    }
    pod
}

fn cluster() -> Settings {
    settings(json!({"imageFacts": "cluster"}))
}

fn lookup_warnings(d: &Decision) -> Vec<String> {
    d.warnings
        .iter()
        .filter(|w| w.code == Code::LookupFailed)
        .map(|w| w.to_string())
        .collect()
}

fn windows_2022() -> ImageFacts {
    ImageFacts::Platforms(vec![Platform {
        os: "windows".into(),
        os_version: Some("10.0.20348.2700".into()),
        architecture: Some("amd64".into()),
    }])
}

#[test]
fn an_image_not_published_yet_gets_no_warning_while_the_syncer_reports() {
    let pod = owned_pod(None, &[NGINX]);
    let d = with_facts(
        &pod,
        &cluster(),
        &facts(&[(NGINX, ImageFacts::Unpublished)], alive()),
    );
    assert!(d.accepted, "{:?}", d.message());
    assert!(lookup_warnings(&d).is_empty(), "{:?}", d.warnings);
}

#[test]
fn without_a_reporting_syncer_one_warning_names_it_not_one_per_image() {
    let images = [NGINX, PRIVATE, "quay.io/prometheus/node-exporter:v1.8.2"];
    let pod = owned_pod(None, &images);
    let unpublished: Vec<(&str, ImageFacts)> = images
        .iter()
        .map(|i| (*i, ImageFacts::Unpublished))
        .collect();
    let cases = [
        (
            Some(SyncerState::Stale { age: 600 }),
            "last reported 10 min ago",
            "os-placement-facts-sync",
        ),
        (
            Some(SyncerState::Rendered),
            "which no syncer keeps",
            "os-placement facts render",
        ),
        (
            Some(SyncerState::Unpublished),
            "no facts syncer publishes",
            "deploy/facts-sync.yaml",
        ),
        (None, "no facts syncer publishes", "imageFacts: registry"),
    ];
    for (syncer, says, fix) in cases {
        let d = with_facts(&pod, &cluster(), &facts(&unpublished, syncer));
        assert!(d.accepted, "{syncer:?}: {:?}", d.message());
        let warnings = lookup_warnings(&d);
        assert_eq!(warnings.len(), 1, "{syncer:?}: {warnings:?}");
        let w = &warnings[0];
        assert!(w.starts_with("spec.containers[0].image: "), "{w}");
        assert!(w.contains(says) && w.contains(fix), "{syncer:?}: {w}");
        assert!(w.contains("nginx:1.27 (and 2 more)"), "{w}");
        assert!(w.chars().count() < 256, "{w}");
    }
}

#[test]
fn a_controllers_pod_waits_for_an_image_that_decides_its_placement() {
    let settings = cluster();
    for (api_version, kind) in [
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("v1", "ReplicationController"),
    ] {
        let pod = owned_pod(Some((api_version, kind)), &[PRIVATE]);
        let d = with_facts(
            &pod,
            &settings,
            &facts(&[(PRIVATE, ImageFacts::Unpublished)], alive()),
        );
        assert_eq!(codes(&d), ["facts-pending"], "{kind}");
        let v = &d.violations[0];
        assert_eq!(v.path, "spec.containers[0].image");
        assert!(v.message.contains(PRIVATE), "{}", v.message);
        assert!(
            v.message
                .contains(&format!("{kind} web-7d4b9 creates the pod again")),
            "{}",
            v.message
        );
        assert!(v.message.contains("last report 4 s ago"), "{}", v.message);
        // Once published, the same Pod is placed by the image's platforms.
        let d = with_facts(
            &pod,
            &settings,
            &facts(&[(PRIVATE, windows_2022())], alive()),
        );
        assert!(d.accepted, "{:?}", d.message());
        let placed = result_object(&pod, &d);
        assert_eq!(
            placed["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
            "10.0.20348"
        );
    }
}

#[test]
fn a_pod_never_waits_when_the_syncer_does_not_report_or_cannot_learn_the_image() {
    let settings = cluster();
    let pending = [(PRIVATE, ImageFacts::Unpublished)];
    let rs = Some(("apps/v1", "ReplicaSet"));
    let admitted = |pod: &Value, settings: &Settings, facts: &Facts| {
        let d = with_facts(pod, settings, facts);
        assert!(d.accepted, "{pod}: {:?}", d.message());
    };
    // A syncer that stopped, facts rendered, or none published.
    for syncer in [
        Some(SyncerState::Stale { age: 90 }),
        Some(SyncerState::Rendered),
        None,
    ] {
        admitted(
            &owned_pod(rs, &[PRIVATE]),
            &settings,
            &facts(&pending, syncer),
        );
    }
    // A Pod no controller owns, or one whose controller the syncer does not watch.
    admitted(
        &owned_pod(None, &[PRIVATE]),
        &settings,
        &facts(&pending, alive()),
    );
    let rollout = owned_pod(Some(("argoproj.io/v1alpha1", "Rollout")), &[PRIVATE]);
    admitted(&rollout, &settings, &facts(&pending, alive()));
    let mut not_controller = owned_pod(rs, &[PRIVATE]);
    not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    admitted(&not_controller, &settings, &facts(&pending, alive()));
    // The setting turned off.
    let off = settings_with(json!({"imageFacts": "cluster", "waitForImageFacts": false}));
    admitted(&owned_pod(rs, &[PRIVATE]), &off, &facts(&pending, alive()));
    // An image that decides nothing: the Pod's own fields fix its OS.
    let mut linux = owned_pod(rs, &[PRIVATE]);
    linux["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let always = settings_with(json!({"imageFacts": "cluster", "imageLookup": "always"}));
    admitted(&linux, &always, &facts(&pending, alive()));
    // A workload template is admitted: its Pods are judged when created.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"selector": {}, "template": {"spec": spec_with_images(&[PRIVATE])}}});
    admitted(&deployment, &settings, &facts(&pending, alive()));
}

#[test]
fn an_audit_never_waits() {
    let pod = owned_pod(Some(("apps/v1", "ReplicaSet")), &[PRIVATE]);
    let request = audit_request(&pod);
    let d = Admission::new(&request, &cluster())
        .decide(&facts(&[(PRIVATE, ImageFacts::Unpublished)], alive()));
    assert!(!codes(&d).contains(&"facts-pending"), "{:?}", d.message());
}

#[test]
fn registry_warnings_name_the_image_with_its_registry() {
    let image = "registry.corp.example/sidecar/daprd:1.16.9";
    let incomplete = ImageFacts::Platforms(vec![Platform {
        os: "unknown".into(),
        os_version: None,
        architecture: Some("unknown".into()),
    }]);
    let d = with_facts(
        &owned_pod(None, &[image]),
        &cluster(),
        &facts(&[(image, incomplete)], alive()),
    );
    let gap = d
        .warnings
        .iter()
        .find(|w| w.code == Code::RegistryIncomplete)
        .unwrap_or_else(|| panic!("{:?}", d.warnings));
    assert!(gap.message.contains(image), "{}", gap.message);
}

fn settings_with(v: Value) -> Settings {
    settings(v)
}
