//! A new workload placed by facts from its first Pod: the fake Kubernetes
//! API, a real `docker-registry` holding a private Windows-only image whose
//! tag says nothing (`corp/reports:2.0`, Windows 10.0.20348), the syncer
//! binary running as it runs in the cluster, and the real policy-server
//! with `deploy/eks.yaml`'s settings. The Deployment is applied; its
//! ReplicaSet's Pods are sent as the controller sends them, retried as it
//! retries a refused create, until one is admitted: it must carry the
//! Windows build pin, and no Pod may be admitted without it. A plain
//! `nginx:1.27` Pod gets no warning while the syncer reports. The times
//! from apply to published facts and to the first admitted Pod are printed.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use os_placement_e2e::capabilities::Cluster;
use os_placement_e2e::faults::api::FakeApi;
use os_placement_e2e::http::post_json;
use os_placement_e2e::images::push_standard_images;
use os_placement_e2e::registry::LocalRegistry;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, repo_root};
use serde_json::{json, Value};

use super::setup::{cli_binary, deployment, Suite};
use super::syncer::wait_for;

/// The syncer, killed when the test ends.
struct Syncer(Child);

impl Drop for Syncer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_syncer(kubeconfig: &Path, registry: &str, dir: &Path) -> Syncer {
    let cli = cli_binary().unwrap().expect("the os-placement CLI");
    let child = Command::new(cli)
        .args(["facts", "sync", "--namespace", "os-placement"])
        .args([
            "--insecure-registry",
            registry,
            "--allow-registry",
            registry,
        ])
        .args(["--heartbeat", "2s", "--metrics-address", "127.0.0.1:0"])
        .env("KUBECONFIG", kubeconfig)
        .env("DOCKER_CONFIG", dir.join("docker"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Syncer(child)
}

/// The cluster document's heartbeat, once the syncer wrote one.
fn heartbeat(api: &FakeApi) -> Option<Value> {
    let cluster = api
        .objects("ConfigMap")
        .into_iter()
        .find(|m| m["metadata"]["name"] == "os-placement-facts-cluster")?;
    let index: Value = serde_json::from_str(cluster["data"]["index"].as_str()?).ok()?;
    index.get("syncer").cloned()
}

/// Whether a shard keeps `image` readable: the syncer published it.
fn published(api: &FakeApi, image: &str) -> bool {
    api.objects("ConfigMap").iter().any(|m| {
        m["data"]["images"]
            .as_str()
            .is_some_and(|images| images.contains(image))
    })
}

/// A Pod of ReplicaSet `owner` running `image`, as the controller creates it.
fn replica(owner: &str, image: &str, n: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("{owner}-"), "name": format!("{owner}-{n}"), "namespace": "default",
            "labels": {"app": "reports"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                "uid": "rs-1", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "c", "image": image}]}})
}

/// policy-server's answer: allowed, message, the patched nodeSelector and warnings.
fn answer(port: u16, pod: &Value) -> (bool, String, Value, Vec<String>) {
    let review = review_of(&admission_request(pod, "CREATE", None, None));
    let response = post_json(port, "/validate/os-placement", &review).unwrap()["response"].clone();
    let mut patched = pod.clone();
    if let Some(patch) = response["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
        json_patch::patch(&mut patched, &patch).unwrap();
    }
    let warnings = response["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (
        response["allowed"] == true,
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        patched["spec"]["nodeSelector"].clone(),
        warnings,
    )
}

#[test]
fn a_new_workloads_first_pods_are_placed_by_the_facts_the_running_syncer_publishes() {
    let Some(suite) = Suite::prepare() else {
        return;
    };
    let Some(registry) = LocalRegistry::start().unwrap() else {
        return;
    };
    let image = push_standard_images(&registry.host())
        .unwrap()
        .windows_single
        .reference;
    let cluster = Cluster::load(&repo_root().join("e2e/clusters/eks-mixed")).unwrap();
    let mut objects = cluster.objects().to_vec();
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    let api = FakeApi::start(objects).unwrap();
    let kubeconfig = suite.dir.path().join("kubeconfig");
    api.kubeconfig(&kubeconfig).unwrap();
    let _syncer = start_syncer(&kubeconfig, &registry.host(), suite.dir.path());
    assert!(
        wait_for(Duration::from_secs(60), || heartbeat(&api).is_some()).is_some(),
        "the syncer published no heartbeat"
    );
    let server = suite.policy_server("cluster", &kubeconfig, &[]);

    // While the syncer reports, an image it has not seen gets no warning.
    let nginx = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
    let (allowed, message, _, warnings) = answer(server.port(), &nginx);
    assert!(allowed, "{message}");
    assert!(
        warnings.is_empty(),
        "nginx:1.27 while the syncer reports: {warnings:?}"
    );

    // The Deployment is applied; its ReplicaSet creates Pods at once.
    let applied = Instant::now();
    api.put(deployment("reports", &image));
    let (published_after, (first_pod, refused, admitted)) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| wait_for(Duration::from_secs(60), || published(&api, &image)));
        let mut refused = 0;
        let admitted = loop {
            let (allowed, message, selector, _) =
                answer(server.port(), &replica("reports-5c9d", &image, refused));
            if allowed {
                break selector;
            }
            assert!(
                message.contains("not in the image facts yet")
                    && message.contains("ReplicaSet reports-5c9d"),
                "{message}"
            );
            refused += 1;
            assert!(
                applied.elapsed() < Duration::from_secs(60),
                "still refused after 60 s: {message}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let first_pod = applied.elapsed();
        (watcher.join().unwrap(), (first_pod, refused, admitted))
    });
    let published_after = published_after.expect("the syncer published the image");
    assert_eq!(admitted["kubernetes.io/os"], "windows", "{admitted}");
    assert_eq!(
        admitted["node.kubernetes.io/windows-build"], "10.0.20348",
        "{admitted}"
    );
    // The watcher polls every 50 ms: it may see the publication late.
    assert!(
        first_pod + Duration::from_millis(100) >= published_after,
        "a Pod was admitted at {first_pod:?}, before its facts were published"
    );
    eprintln!(
        "first pods: facts published {:.2} s after apply; first Pod admitted at {:.2} s ({refused} creates refused as facts-pending before)",
        published_after.as_secs_f64(),
        first_pod.as_secs_f64()
    );
}
