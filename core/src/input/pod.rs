//! A narrow typed view of a pod spec: only the fields the rules read.
//! The object itself is never re-serialised; mutations go to its JSON.

use crate::vocab::ordered::StringMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration, WindowsSecurityContextOptions};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::FieldPath;
use crate::vocab::text::json_type_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The three container lists of a pod spec.
pub enum ContainerList {
    /// `containers`
    Containers,
    /// `initContainers`
    InitContainers,
    /// `ephemeralContainers`
    EphemeralContainers,
}

impl ContainerList {
    /// Every list, in the order the rules read them.
    pub const ALL: [ContainerList; 3] = [
        ContainerList::Containers,
        ContainerList::InitContainers,
        ContainerList::EphemeralContainers,
    ];

    /// The list's field name in the pod spec.
    pub fn field(self) -> &'static str {
        match self {
            ContainerList::Containers => "containers",
            ContainerList::InitContainers => "initContainers",
            ContainerList::EphemeralContainers => "ephemeralContainers",
        }
    }
}

#[derive(Debug, Clone)]
/// One container, as far as placement reads it.
pub struct ContainerView<'a> {
    /// The list it belongs to.
    pub list: ContainerList,
    /// Its path, e.g. `spec.containers[0]`.
    pub path: FieldPath,
    /// `name`.
    pub name: Option<&'a str>,
    /// `image`.
    pub image: Option<&'a str>,
    /// `securityContext`, as written.
    pub security_context: Option<&'a Map<String, Value>>,
    /// `securityContext.windowsOptions`.
    pub windows_options: Option<WindowsSecurityContextOptions>,
}

#[derive(Debug, Clone)]
/// A narrow typed view of a pod spec: the fields placement reads, borrowed from the object.
pub struct PodView<'a> {
    /// Path of the pod spec in the object, e.g. `spec.template.spec`.
    pub path: FieldPath,
    /// The pod spec as written, for fields the view does not type.
    pub raw: &'a Map<String, Value>,
    /// `os.name`.
    pub os_name: Option<&'a str>,
    /// `nodeSelector`.
    pub node_selector: StringMap,
    /// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_affinity: Option<NodeSelector>,
    /// `tolerations`.
    pub tolerations: Vec<Toleration>,
    /// `runtimeClassName`.
    pub runtime_class_name: Option<&'a str>,
    /// `spec.nodeName`: the pod is bound and bypasses the scheduler.
    pub node_name: Option<&'a str>,
    /// `hostNetwork`.
    pub host_network: Option<bool>,
    /// `securityContext`, as written.
    pub security_context: Option<&'a Map<String, Value>>,
    /// `securityContext.windowsOptions`.
    pub windows_options: Option<WindowsSecurityContextOptions>,
    /// Containers, init containers and ephemeral containers, in that order.
    pub containers: Vec<ContainerView<'a>>,
}

impl<'a> PodView<'a> {
    /// Reads the view; every malformed field is reported with its path.
    pub fn read(spec: &'a Value, path: FieldPath) -> Result<PodView<'a>, Vec<Diagnostic>> {
        let mut problems = Vec::new();
        let Value::Object(raw) = spec else {
            return Err(vec![malformed(&path, "a pod spec object", spec)]);
        };
        let mut reader = FieldReader {
            raw,
            path: &path,
            problems: &mut problems,
        };
        let os_name = reader
            .object("os")
            .and_then(|os| field_str(os, &path.field("os"), "name", reader.problems));
        let node_selector = reader.string_map("nodeSelector");
        let required_affinity = reader.required_affinity();
        let tolerations = reader.typed_list::<Toleration>("tolerations");
        let runtime_class_name = reader.str("runtimeClassName");
        let node_name = reader.str("nodeName").filter(|n| !n.is_empty());
        let host_network = reader.bool("hostNetwork");
        let security_context = reader.object("securityContext");
        let windows_options = security_context.and_then(|sc| {
            typed(
                sc,
                &path.field("securityContext"),
                "windowsOptions",
                reader.problems,
            )
        });
        let mut containers = Vec::new();
        for list in ContainerList::ALL {
            containers.extend(reader.containers(list));
        }
        if problems.is_empty() {
            Ok(PodView {
                path,
                raw,
                os_name,
                node_selector,
                required_affinity,
                tolerations,
                runtime_class_name,
                node_name,
                host_network,
                security_context,
                windows_options,
                containers,
            })
        } else {
            Err(problems)
        }
    }

    /// The path of a field of the pod spec.
    pub fn field(&self, name: &str) -> FieldPath {
        self.path.field(name)
    }

    /// The pod's HostProcess value where set, else any container's.
    pub fn is_host_process(&self) -> bool {
        host_process(&self.windows_options) == Some(true)
            || self
                .containers
                .iter()
                .any(|c| host_process(&c.windows_options) == Some(true))
    }
}

pub fn host_process(options: &Option<WindowsSecurityContextOptions>) -> Option<bool> {
    options.as_ref().and_then(|o| o.host_process)
}

struct FieldReader<'a, 'p> {
    raw: &'a Map<String, Value>,
    path: &'p FieldPath,
    problems: &'p mut Vec<Diagnostic>,
}

impl<'a> FieldReader<'a, '_> {
    /// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    fn required_affinity(&mut self) -> Option<NodeSelector> {
        let affinity_path = self.path.field("affinity");
        let node_affinity = nested_object(
            self.object("affinity")?,
            &affinity_path,
            "nodeAffinity",
            self.problems,
        )?;
        typed::<NodeSelector>(
            node_affinity,
            &affinity_path.field("nodeAffinity"),
            "requiredDuringSchedulingIgnoredDuringExecution",
            self.problems,
        )
    }

    fn object(&mut self, name: &str) -> Option<&'a Map<String, Value>> {
        nested_object(self.raw, self.path, name, self.problems)
    }

    fn str(&mut self, name: &str) -> Option<&'a str> {
        field_str(self.raw, self.path, name, self.problems)
    }

    fn bool(&mut self, name: &str) -> Option<bool> {
        match self.raw.get(name)? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            other => {
                self.problems
                    .push(malformed(&self.path.field(name), "true or false", other));
                None
            }
        }
    }

    fn string_map(&mut self, name: &str) -> StringMap {
        let mut map = StringMap::new();
        let Some(entries) = self.object(name) else {
            return map;
        };
        for (key, value) in entries {
            match value {
                Value::String(s) => {
                    map.insert(key.clone(), s.clone());
                }
                other => self.problems.push(malformed(
                    &self.path.field(name).key(key),
                    "a string",
                    other,
                )),
            }
        }
        map
    }

    fn list(&mut self, name: &str) -> &'a [Value] {
        match self.raw.get(name) {
            None | Some(Value::Null) => &[],
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.problems
                    .push(malformed(&self.path.field(name), "a list", other));
                &[]
            }
        }
    }

    fn typed_list<T: DeserializeOwned>(&mut self, name: &str) -> Vec<T> {
        let items = self.list(name);
        let path = self.path;
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match T::deserialize(item) {
                Ok(t) => Some(t),
                Err(e) => {
                    self.problems.push(Diagnostic::new(
                        Code::MalformedObject,
                        path.field(name).index(i).display(),
                        format!("cannot be read: {e}"),
                        "fix the manifest so it matches the Kubernetes API",
                    ));
                    None
                }
            })
            .collect()
    }

    fn containers(&mut self, list: ContainerList) -> Vec<ContainerView<'a>> {
        let items = self.list(list.field());
        if items.is_empty() {
            return Vec::new();
        }
        let list_path = self.path.field(list.field());
        let mut views = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = list_path.index(i);
            let Value::Object(c) = item else {
                self.problems
                    .push(malformed(&path, "a container object", item));
                continue;
            };
            let name = field_str(c, &path, "name", self.problems);
            let image = field_str(c, &path, "image", self.problems);
            let security_context = nested_object(c, &path, "securityContext", self.problems);
            let windows_options = security_context.and_then(|sc| {
                typed(
                    sc,
                    &path.field("securityContext"),
                    "windowsOptions",
                    self.problems,
                )
            });
            views.push(ContainerView {
                list,
                path,
                name,
                image,
                security_context,
                windows_options,
            });
        }
        views
    }
}

fn nested_object<'a>(
    parent: &'a Map<String, Value>,
    path: &FieldPath,
    name: &str,
    problems: &mut Vec<Diagnostic>,
) -> Option<&'a Map<String, Value>> {
    match parent.get(name)? {
        Value::Null => None,
        Value::Object(map) => Some(map),
        other => {
            problems.push(malformed(&path.field(name), "an object", other));
            None
        }
    }
}

fn field_str<'a>(
    parent: &'a Map<String, Value>,
    path: &FieldPath,
    name: &str,
    problems: &mut Vec<Diagnostic>,
) -> Option<&'a str> {
    match parent.get(name)? {
        Value::Null => None,
        Value::String(s) => Some(s),
        other => {
            problems.push(malformed(&path.field(name), "a string", other));
            None
        }
    }
}

fn typed<T: DeserializeOwned>(
    parent: &Map<String, Value>,
    path: &FieldPath,
    name: &str,
    problems: &mut Vec<Diagnostic>,
) -> Option<T> {
    let value = parent.get(name).filter(|v| !v.is_null())?;
    match T::deserialize(value) {
        Ok(t) => Some(t),
        Err(e) => {
            problems.push(Diagnostic::new(
                Code::MalformedObject,
                path.field(name).display(),
                format!("cannot be read: {e}"),
                "fix the manifest so it matches the Kubernetes API",
            ));
            None
        }
    }
}

pub fn malformed(path: &FieldPath, expected: &str, got: &Value) -> Diagnostic {
    let got = json_type_name(got);
    Diagnostic::new(
        Code::MalformedObject,
        path.display(),
        format!("expected {expected}, got {got}"),
        "fix the manifest so it matches the Kubernetes API",
    )
}
