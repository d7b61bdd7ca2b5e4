//! The parts of the suite: policy-server and the CLI from outside the
//! repository, the annotated module, the cluster the fake API serves, the
//! syncer run, and policy-servers configured as `deploy/eks.yaml` says.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use os_placement_e2e::capabilities::Cluster;
use os_placement_e2e::external;
use os_placement_e2e::faults::registry::FaultRegistry;
use os_placement_e2e::policy_server::PolicyServer;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, read_yaml, repo_root, wasm_path};
use serde_json::{json, Value};
use xtask::annotate::{annotate_file, AnnotateFiles};

/// An image whose reference decides everything (Windows Server 2022): no lookup.
pub const PLAIN_IMAGE: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";

/// The namespace the facts are published in (the settings' default).
const FACTS_NAMESPACE: &str = "os-placement";

/// What the suite runs with.
pub struct Suite {
    pub dir: tempfile::TempDir,
    policy_server: PathBuf,
    cli: PathBuf,
    module: PathBuf,
    policy: Value,
}

/// A policy-server, ready.
pub struct Server(PolicyServer);

impl Server {
    /// Its admission port.
    pub fn port(&self) -> u16 {
        self.0.port()
    }
}

/// The os-placement CLI: `$OS_PLACEMENT_CLI`, else `make build`'s release build.
pub fn cli_binary() -> external::Found {
    let path = match std::env::var_os("OS_PLACEMENT_CLI") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => repo_root().join("target/release/os-placement"),
    };
    if external::executable(&path) {
        Ok(Some(path))
    } else {
        external::missing(
            &path.display().to_string(),
            "run `make build`, or set OS_PLACEMENT_CLI",
        )
    }
}

impl Suite {
    /// Everything in place, or `None` after a visible skip (an error under CI).
    pub fn prepare() -> Option<Suite> {
        let policy_server = external::kubewarden_tool("policy-server").unwrap()?;
        let cli = cli_binary().unwrap()?;
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("annotated-policy.wasm");
        let root = repo_root();
        let files = AnnotateFiles {
            wasm: &wasm_path(),
            metadata: &root.join("metadata.yml"),
            usage: Some(&root.join("README.md")),
            output: &module,
        };
        annotate_file(&files, "v1").expect("run `make build` first");
        let policy = read_yaml(&root.join("deploy/eks.yaml")).unwrap();
        Some(Suite {
            dir,
            policy_server,
            cli,
            module,
            policy,
        })
    }

    /// The fixture cluster's Nodes and RuntimeClasses, the facts namespace,
    /// and a Deployment per registry image and for [`PLAIN_IMAGE`].
    pub fn cluster_objects(&self, registries: &[FaultRegistry]) -> Vec<Value> {
        let cluster = Cluster::load(&repo_root().join("e2e/clusters/eks-mixed")).unwrap();
        let mut objects = cluster.objects().to_vec();
        objects.push(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FACTS_NAMESPACE}}),
        );
        for (i, registry) in registries.iter().enumerate() {
            objects.push(deployment(&format!("app-{i}"), &registry.image()));
        }
        objects.push(deployment("web", PLAIN_IMAGE));
        objects
    }

    /// `os-placement facts sync --once` with short deadlines; how long it took.
    pub fn sync(&self, kubeconfig: &Path, registries: &[FaultRegistry]) -> Duration {
        let started = Instant::now();
        let mut command = Command::new(&self.cli);
        command
            .args(["facts", "sync", "--once", "--namespace", FACTS_NAMESPACE])
            .args([
                "--registry-timeout",
                "2s",
                "--retries",
                "1",
                "--concurrency",
                "8",
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("DOCKER_CONFIG", self.dir.path().join("docker"));
        for registry in registries {
            command.args(["--insecure-registry", &registry.host()]);
        }
        let output = command.output().unwrap();
        let elapsed = started.elapsed();
        assert!(
            output.status.success(),
            "facts sync: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        elapsed
    }

    /// A policy-server running the module with `deploy/eks.yaml`'s settings
    /// and `imageFacts: mode`, its context-aware resources, and the host
    /// capabilities the controller grants a ClusterAdmissionPolicy (all).
    pub fn policy_server(
        &self,
        mode: &str,
        kubeconfig: &Path,
        registries: &[FaultRegistry],
    ) -> Server {
        let spec = &self.policy["spec"];
        let mut settings = spec["settings"].clone();
        settings["imageFacts"] = json!(mode);
        let policies = json!({"os-placement": {
            "module": format!("file://{}", self.module.display()),
            "settings": settings,
            "allowedToMutate": spec["mutating"],
            "contextAwareResources": spec["contextAwareResources"],
            "hostCapabilities": ["*"],
        }});
        let hosts: Vec<String> = registries.iter().map(FaultRegistry::host).collect();
        let dir = tempfile::tempdir_in(self.dir.path()).unwrap().keep();
        let mut server = PolicyServer::spawn_with_kubeconfig(
            &self.policy_server,
            &dir,
            &policies,
            Some(&json!({"insecure_sources": hosts})),
            kubeconfig,
        )
        .unwrap();
        server
            .wait_ready(Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("{e:#}"));
        Server(server)
    }

    /// The AdmissionReview of a CREATE of a Pod named `name` running `image`.
    pub fn review(&self, name: &str, image: &str) -> Value {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": image}]}});
        review_of(&admission_request(&pod, "CREATE", None, None))
    }

    /// Writes the table to `target/faults/report.md`.
    pub fn save_report(&self, table: &str, synced: Duration) {
        let dir = repo_root().join("target/faults");
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "{table}\nfacts sync --once against every registry (2 s deadline, 1 retry): {:.1} s\n",
            synced.as_secs_f64()
        );
        std::fs::write(dir.join("report.md"), text).unwrap();
    }
}

/// A Deployment in `default` running `image`.
pub fn deployment(name: &str, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}})
}
