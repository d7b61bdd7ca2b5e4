//! One node as the scheduler filters it: a Node of the cluster, or a pool
//! of identical nodes drawn in the playground. Plain data: the filters
//! live in `scheduling`.

use crate::vocab::ordered::StringMap;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::{
    ARCH_LABEL, BETA_OS_LABEL, HOSTNAME_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL,
};
use crate::vocab::taint::{Taint, TAINT_EFFECTS};

/// A node, reduced to what placement depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// `metadata.name`; in the playground, the pool's name.
    pub name: String,
    /// `linux` or `windows` (label `kubernetes.io/os`, else `nodeInfo.operatingSystem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `10.0.N` (label `node.kubernetes.io/windows-build`, else `nodeInfo.kernelVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "build")]
    pub windows_build: Option<String>,
    /// `kubernetes.io/arch` or `nodeInfo.architecture`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: StringMap,
    /// `spec.taints`.
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// How many nodes this entry stands for: one listed node, or a class of
    /// nodes alike in all of the above (the published node facts).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u32,
    /// Label keys whose values differ between the nodes of a class, so
    /// this entry does not know them: a requirement on them may hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub varying: Vec<String>,
    /// For the nodes of a class that were not looked up by name: the names
    /// and hostnames the request looked up, none of which they carry. Their
    /// own names are unknown, so `name` is only a class's example node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unnamed: Option<Vec<String>>,
    /// Nodes that do not exist yet but can be launched on demand: the
    /// NodePool or node template that would launch them (`count` is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launchable: Option<String>,
    /// Why that NodePool launches nothing now (not Ready, its AMIs not
    /// ready, ...): the entry runs no pod and is kept for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

fn one() -> u32 {
    1
}

fn is_one(count: &u32) -> bool {
    *count == 1
}

impl Default for Node {
    fn default() -> Node {
        Node {
            name: String::new(),
            os: None,
            windows_build: None,
            architecture: None,
            labels: StringMap::new(),
            taints: Vec::new(),
            count: 1,
            varying: Vec::new(),
            unnamed: None,
            launchable: None,
            blocked: None,
        }
    }
}

/// In `varying`: every label the entry does not list is unknown (a class
/// read without its labels, for a check that reads none). An entry ending
/// in `*` stands for every key it begins (`karpenter.k8s.aws/*`).
pub const ALL_LABELS: &str = "*";

/// What an entry knows of a label, or of the node's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelValue<'a> {
    /// The value, or that the label is absent.
    Known(Option<Cow<'a, str>>),
    /// It differs between the nodes of the class: any value may be there.
    Unknown,
    /// A name or hostname of nodes not looked up: none of these values,
    /// which the request looked up; any other may be there.
    NoneOf(&'a [String]),
    /// The name or hostname of a node still to be launched: one no request
    /// can name yet, so it is none of any value a pod names.
    Fresh,
}

impl Node {
    /// Whether this is a Windows node.
    pub fn is_windows(&self) -> bool {
        self.os
            .as_deref()
            .or(self.labels.get(OS_LABEL).map(String::as_str))
            == Some("windows")
    }

    /// Whether this is a Linux node (no OS known counts as Linux, the default).
    pub fn is_linux(&self) -> bool {
        !self.is_windows()
    }

    /// The node's Windows build, from the label or `windowsBuild`.
    pub fn build(&self) -> Option<WindowsBuild> {
        self.labels
            .get(WINDOWS_BUILD_LABEL)
            .or(self.windows_build.as_ref())
            .and_then(|b| WindowsBuild::parse_version(b))
    }

    /// A label's value; the labels the kubelet sets on every node
    /// (`kubernetes.io/os`, `beta.kubernetes.io/os`, `kubernetes.io/arch`,
    /// `node.kubernetes.io/windows-build`) are read from the node's fields
    /// when the label list lacks them.
    pub fn label(&self, key: &str) -> Option<Cow<'_, str>> {
        if let Some(value) = self.labels.get(key) {
            return Some(Cow::Borrowed(value));
        }
        match key {
            OS_LABEL | BETA_OS_LABEL => self.os.as_deref().map(Cow::Borrowed),
            WINDOWS_BUILD_LABEL => self.build().map(|b| Cow::Owned(b.to_string())),
            ARCH_LABEL => self.architecture.as_deref().map(Cow::Borrowed),
            _ => None,
        }
    }

    /// What this entry knows of label `key`: its value, unknown when it
    /// varies within a class, or none of the looked-up values for the
    /// hostname of nodes not looked up.
    pub fn label_value(&self, key: &str) -> LabelValue<'_> {
        if let Some(value) = self.labels.get(key) {
            return LabelValue::Known(Some(Cow::Borrowed(value)));
        }
        if key == HOSTNAME_LABEL && self.launchable.is_some() {
            return LabelValue::Fresh;
        }
        let varies = |pattern: &String| match pattern.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => pattern == key,
        };
        if self.varying.iter().any(varies) {
            return LabelValue::Unknown;
        }
        match self.unnamed.as_deref() {
            Some(looked_up) if key == HOSTNAME_LABEL => LabelValue::NoneOf(looked_up),
            _ => LabelValue::Known(self.label(key)),
        }
    }

    /// What this entry knows of its nodes' `metadata.name`.
    pub fn name_value(&self) -> LabelValue<'_> {
        if self.launchable.is_some() {
            return LabelValue::Fresh;
        }
        match self.unnamed.as_deref() {
            Some(looked_up) => LabelValue::NoneOf(looked_up),
            None => LabelValue::Known(Some(Cow::Borrowed(&self.name))),
        }
    }

    /// The node's name, a class's example node and how many are like it,
    /// or what can launch such nodes.
    pub fn describe(&self) -> String {
        if let Some(source) = &self.launchable {
            return format!("{source} (none yet)");
        }
        match self.count {
            0 | 1 if self.unnamed.is_none() => self.name.clone(),
            count => format!("{} ({count} like it)", self.name),
        }
    }

    /// Whether the entry stands for nodes that exist (not ones that can be
    /// launched, nor a NodePool that launches nothing).
    pub fn exists(&self) -> bool {
        self.launchable.is_none()
    }

    /// Whether nodes like this exist or can be launched now.
    pub fn usable(&self) -> bool {
        self.blocked.is_none()
    }

    /// Whether the node's OS and build run containers that need `placement`.
    pub fn runs(&self, placement: &Placement) -> bool {
        if !self.usable() {
            return false;
        }
        if !self.is_windows() {
            return placement.linux;
        }
        match (&placement.windows, self.build()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(builds), Some(build)) => builds.allows(build),
        }
    }

    /// A pool of the playground: its labels also carry what the kubelet sets
    /// on every node (`kubernetes.io/os`, the deprecated but still set
    /// `beta.kubernetes.io/os`, and on Windows `node.kubernetes.io/windows-build`).
    pub fn pool(
        name: impl Into<String>,
        os: Os,
        build: Option<WindowsBuild>,
        mut labels: StringMap,
        taints: Vec<Taint>,
    ) -> Node {
        let build = build.filter(|_| os == Os::Windows);
        for key in [OS_LABEL, BETA_OS_LABEL] {
            labels.insert_absent(key, || os.label().to_string());
        }
        if let Some(build) = build {
            labels.insert_absent(WINDOWS_BUILD_LABEL, || build.to_string());
        }
        Node {
            name: name.into(),
            os: Some(os.label().to_string()),
            windows_build: build.map(|b| b.to_string()),
            labels,
            taints,
            ..Node::default()
        }
    }
}

/// Reads node pools from JSON: a list of `{name, os, build, labels, taints}`.
/// Every problem is reported with its path, e.g. `[1].build`.
pub fn pools_from_value(value: &Value) -> Result<Vec<Node>, Vec<Diagnostic>> {
    let Some(items) = value.as_array() else {
        return Err(vec![invalid("", "expected a list of node pools")]);
    };
    let mut pools = Vec::new();
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match pool_from_value(item, &format!("[{i}]")) {
            Ok(pool) => pools.push(pool),
            Err(mut found) => problems.append(&mut found),
        }
    }
    if problems.is_empty() {
        Ok(pools)
    } else {
        Err(problems)
    }
}

fn pool_from_value(item: &Value, at: &str) -> Result<Node, Vec<Diagnostic>> {
    let mut problems = Vec::new();
    let text = |key: &str| item.get(key).and_then(Value::as_str);
    let name = text("name").unwrap_or_default();
    if name.is_empty() {
        problems.push(invalid(&format!("{at}.name"), "a pool needs a name"));
    }
    let os = text("os").and_then(Os::from_label);
    if os.is_none() {
        problems.push(invalid(&format!("{at}.os"), "set it to linux or windows"));
    }
    let build = match text("build") {
        None => None,
        Some(b) => match WindowsBuild::parse_label(b) {
            Ok(build) => Some(build),
            Err(e) => {
                problems.push(invalid(&format!("{at}.build"), e.to_string()));
                None
            }
        },
    };
    let labels = string_map(item.get("labels"), &format!("{at}.labels"), &mut problems);
    let taints = taints(item.get("taints"), &format!("{at}.taints"), &mut problems);
    match os {
        Some(os) if problems.is_empty() => Ok(Node::pool(name, os, build, labels, taints)),
        _ => Err(problems),
    }
}

fn string_map(value: Option<&Value>, at: &str, problems: &mut Vec<Diagnostic>) -> StringMap {
    let mut map = StringMap::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (k, v) in entries {
                match v.as_str() {
                    Some(v) => {
                        map.insert(k.clone(), v.to_string());
                    }
                    None => {
                        problems.push(invalid(&format!("{at}[{k}]"), "label values are strings"))
                    }
                }
            }
        }
        Some(_) => problems.push(invalid(at, "expected a map of labels")),
    }
    map
}

fn taints(value: Option<&Value>, at: &str, problems: &mut Vec<Diagnostic>) -> Vec<Taint> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            problems.push(invalid(at, "expected a list of taints"));
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for (i, t) in items.iter().enumerate() {
        let text = |key: &str| t.get(key).and_then(Value::as_str).unwrap_or_default();
        let effect = text("effect");
        if text("key").is_empty() || !TAINT_EFFECTS.contains(&effect) {
            problems.push(invalid(
                &format!("{at}[{i}]"),
                "a taint needs a key and an effect NoSchedule, PreferNoSchedule or NoExecute",
            ));
            continue;
        }
        found.push(Taint {
            key: text("key").to_string(),
            value: text("value").to_string(),
            effect: effect.to_string(),
        });
    }
    found
}

fn invalid(path: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidValue,
        path,
        message,
        "see the node pool format",
    )
}
/// The string entries of an API object's map (labels, a node selector);
/// entries that are not strings are left out.
pub(crate) fn object_labels(value: Option<&Value>) -> StringMap {
    let mut map = StringMap::new();
    for (key, value) in value.and_then(Value::as_object).into_iter().flatten() {
        if let Some(text) = value.as_str() {
            map.insert(key.clone(), text.to_string());
        }
    }
    map
}

/// The taints of an API object (a Node's `spec.taints`, a NodePool
/// template's); a taint without a key or an effect is left out.
pub(crate) fn object_taints(value: Option<&Value>) -> Vec<Taint> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|t| {
            let text = |key: &str| t.get(key).and_then(Value::as_str).map(str::to_string);
            Some(Taint {
                key: text("key")?,
                value: text("value").unwrap_or_default(),
                effect: text("effect")?,
            })
        })
        .collect()
}
