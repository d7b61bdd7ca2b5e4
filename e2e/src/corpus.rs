//! The corpus of real manifests (`../shared/corpus`): the OS each one is
//! documented for (the `os` column of SOURCES.md), and checks of where a pod
//! template would land.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use os_placement_core::Kind;
use serde_json::Value;

/// `file -> os` from every Markdown table of SOURCES.md that has a `file` and an `os` column.
pub fn parse_sources(markdown: &str) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    // Column indices (file, os) of the table being read, if any.
    let mut columns: Option<(usize, usize)> = None;
    for (number, line) in markdown.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            columns = None;
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue; // separator row
        }
        match columns {
            None => {
                let file = cells.iter().position(|c| *c == "file");
                let os = cells.iter().position(|c| *c == "os");
                if let (Some(file), Some(os)) = (file, os) {
                    columns = Some((file, os));
                }
            }
            Some((file, os)) => {
                let (Some(file), Some(os)) = (cells.get(file), cells.get(os)) else {
                    bail!("SOURCES.md line {}: row has too few cells", number + 1);
                };
                if map.insert((*file).to_owned(), (*os).to_owned()).is_some() {
                    bail!("SOURCES.md line {}: {file} listed twice", number + 1);
                }
            }
        }
    }
    Ok(map)
}

/// Reads `SOURCES.md` in `corpus_dir`.
pub fn load_sources(corpus_dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = corpus_dir.join("SOURCES.md");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse_sources(&text)
}

/// The pod spec of a Pod or a workload (`spec`, `spec.template.spec`,
/// `spec.jobTemplate.spec.template.spec`).
pub fn pod_spec(object: &Value) -> Option<&Value> {
    let kind = Kind::parse(object.get("kind")?.as_str()?)?;
    kind.pod_spec_fields()
        .iter()
        .try_fold(object, |v, key| v.get(key))
}

/// `nodeSelector[kubernetes.io/os]` of a pod spec.
pub fn selected_os(spec: &Value) -> Option<&str> {
    spec.get("nodeSelector")?.get("kubernetes.io/os")?.as_str()
}

/// True when required node affinity restricts the pod to `os`: every node
/// selector term has an expression `kubernetes.io/os In [os]` (values all `os`).
pub fn affinity_requires_os(spec: &Value, os: &str) -> bool {
    let terms = [
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ]
    .iter()
    .try_fold(spec, |v, key| v.get(key))
    .and_then(Value::as_array);
    let Some(terms) = terms.filter(|t| !t.is_empty()) else {
        return false;
    };
    terms.iter().all(|term| {
        term.get("matchExpressions")
            .and_then(Value::as_array)
            .is_some_and(|exprs| {
                exprs.iter().any(|e| {
                    let values = e.get("values").and_then(Value::as_array);
                    e.get("key").and_then(Value::as_str) == Some("kubernetes.io/os")
                        && e.get("operator").and_then(Value::as_str) == Some("In")
                        && values.is_some_and(|vs| {
                            !vs.is_empty() && vs.iter().all(|v| v.as_str() == Some(os))
                        })
                })
            })
    })
}

/// Why `object` is not placed on `os` (nodeSelector, or for Linux required
/// affinity too), or `None` when it is.
pub fn placement_problem(object: &Value, os: &str) -> Option<String> {
    let Some(spec) = pod_spec(object) else {
        return Some("no pod spec found".to_owned());
    };
    match selected_os(spec) {
        Some(selected) if selected == os => None,
        _ if os == "linux" && affinity_requires_os(spec, "linux") => None,
        Some(selected) => Some(format!(
            "nodeSelector[kubernetes.io/os] is {selected:?}, expected {os:?}"
        )),
        None => Some(format!(
            "no nodeSelector[kubernetes.io/os] = {os:?}{}",
            if os == "linux" {
                " nor required nodeAffinity kubernetes.io/os In [linux]"
            } else {
                ""
            }
        )),
    }
}

/// Lines of a rejection message that do not follow `<path>: <what>; <fix>`.
/// An empty message is reported as one bad (empty) line.
pub fn malformed_message_lines(message: &str) -> Vec<String> {
    if message.trim().is_empty() {
        return vec![String::new()];
    }
    message
        .lines()
        .filter(|line| !(line.contains(": ") && line.contains("; ")))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_tables() {
        let md = "# x\n\n| file | repo | os | note |\n|---|---|---|---|\n| a.yaml | r | windows | n |\n| b.yaml | r | linux | |\n\ntext\n\n| file | os |\n|--|--|\n| c.yaml | linux |\n";
        let map = parse_sources(md).unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(map["a.yaml"], "windows");
        assert_eq!(map["b.yaml"], "linux");
        assert_eq!(map["c.yaml"], "linux");
    }

    #[test]
    fn placement() {
        let ds = json!({"kind": "DaemonSet", "spec": {"template": {"spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}}}}});
        assert_eq!(placement_problem(&ds, "linux"), None);
        assert!(placement_problem(&ds, "windows").is_some());
        let cj = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "nodeSelector": {"kubernetes.io/os": "windows"}}}}}}});
        assert_eq!(placement_problem(&cj, "windows"), None);
        assert!(placement_problem(&cj, "linux").is_some());
        let pod = json!({"kind": "Pod", "spec": {}});
        assert!(placement_problem(&pod, "linux").is_some());
    }

    #[test]
    fn message_format() {
        assert!(malformed_message_lines("spec.x: wrong; add y\nspec.z: bad; fix").is_empty());
        assert_eq!(malformed_message_lines("oops"), vec!["oops".to_owned()]);
        assert_eq!(malformed_message_lines(""), vec![String::new()]);
    }
}
