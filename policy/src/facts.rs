//! Context-aware facts: what the policy asks Kubewarden's host for, and when.
//!
//! Contract with the host (waPC `host_call(binding, namespace, operation, payload)`,
//! binding always `"kubewarden"`). The core decides what is needed
//! (`os_placement_core::facts::needs`); nothing is asked for DELETE/CONNECT,
//! kinds without a pod template, or when the needs are empty.
//!
//! | namespace / operation | when | payload | answer read |
//! |---|---|---|---|
//! | `oci` / `v1/oci_manifest` | per distinct image reference of the pod (containers, init, ephemeral), `imageLookup: undecided` (default): only references the name rules leave undecided, and only while the pod's OS or (with `pinWindowsBuild`) its Windows build is still open; `always`: every image; `off`: never | the reference as a JSON string, e.g. `"registry.corp/app/billing:4.2"` | an image index (`manifests[].platform.{os, os.version, architecture}`; OCI or Docker manifest list) or an image manifest (has `config`, no `manifests`) |
//! | `oci` / `v1/oci_manifest_config` | only after `v1/oci_manifest` answered an image manifest | the same JSON string | `{"manifest", "digest", "config"}`: `config.os`, `config["os.version"]`, `config.architecture` |
//! | `kubernetes` / `get_resource` | once per `spec.runtimeClassName` not declared in settings `runtimeClasses` | `{"api_version":"node.k8s.io/v1","kind":"RuntimeClass","name":N,"namespace":null,"disable_cache":false,"field_masks":null}` | the RuntimeClass: `handler`, `scheduling.nodeSelector`, `scheduling.tolerations`. An error whose text contains `not found` (any case) or `NotFound` means the class does not exist |
//! | `kubernetes` / `list_resources_all` | at most once per request, when `nodeInventory` is `warn`/`reject` or `windowsTaint: fromNodes` | `{"api_version":"v1","kind":"Node","label_selector":null,"field_selector":null,"field_masks":["metadata.name","metadata.labels","spec.taints","status.nodeInfo.operatingSystem","status.nodeInfo.architecture","status.nodeInfo.kernelVersion"]}` | a List `{"items":[Node...]}`: OS from `kubernetes.io/os` label else `nodeInfo.operatingSystem`; build from `node.kubernetes.io/windows-build` label else the first three parts of `nodeInfo.kernelVersion` |
//!
//! A host call that fails, or an answer that does not parse, never traps: it
//! becomes a lookup failure in the facts, and the core falls back to the
//! rules of the references and settings with a warning naming the image (or
//! class, or Nodes) and the error (`lookupFailure: reject` makes an image
//! lookup failure a rejection).
