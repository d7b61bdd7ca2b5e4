//! Node selector requirements parsed once into typed operators, with one
//! `matches`: the scheduler's NodeAffinity filter (nodeSelector entries
//! ANDed, required terms ORed, expressions ANDed), as
//! k8s.io/component-helpers/scheduling/corev1/nodeaffinity applies it over
//! k8s.io/apimachinery/pkg/labels (`NewRequirement`, `Requirement.Matches`).

use crate::vocab::ordered::StringMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

use crate::input::node::{LabelValue, Node};

/// The one field `matchFields` may compare (core/v1 validation).
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// A requirement's operator with its values, as apimachinery accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator<'a> {
    /// `In`: the label has one of the values (at least one value).
    In(&'a [String]),
    /// `NotIn`: the label is absent or has none of the values.
    NotIn(&'a [String]),
    /// `Exists`: the label is present (no values).
    Exists,
    /// `DoesNotExist`: the label is absent (no values).
    DoesNotExist,
    /// `Gt`: the label, read as an integer, is greater than the bound.
    Gt(i64),
    /// `Lt`: the label, read as an integer, is less than the bound.
    Lt(i64),
    /// Anything `NewRequirement` refuses: an unknown operator, `In`/`NotIn`
    /// without values, values on `Exists`/`DoesNotExist`, a `Gt`/`Lt` bound
    /// that is not exactly one int64. The term holding it matches no node.
    Invalid,
}

/// One `key operator values` requirement, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement<'a> {
    /// The label key (or, in `matchFields`, the field).
    pub key: &'a str,
    /// The operator and its values.
    pub operator: Operator<'a>,
}

impl<'a> Requirement<'a> {
    /// Reads a requirement as apimachinery's `NewRequirement` validates it.
    pub fn parse(req: &'a NodeSelectorRequirement) -> Requirement<'a> {
        let values: &[String] = req.values.as_deref().unwrap_or_default();
        let bound = || match values {
            [value] => value.parse::<i64>().ok(),
            _ => None,
        };
        let operator = match req.operator.as_str() {
            "In" if !values.is_empty() => Operator::In(values),
            "NotIn" if !values.is_empty() => Operator::NotIn(values),
            "Exists" if values.is_empty() => Operator::Exists,
            "DoesNotExist" if values.is_empty() => Operator::DoesNotExist,
            "Gt" => bound().map_or(Operator::Invalid, Operator::Gt),
            "Lt" => bound().map_or(Operator::Invalid, Operator::Lt),
            _ => Operator::Invalid,
        };
        Requirement {
            key: &req.key,
            operator,
        }
    }

    /// Whether a node whose label is `value` (`None`: absent) satisfies it.
    /// `Gt`/`Lt` compare integers: a value that does not parse never matches.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let number = || value.and_then(|v| v.parse::<i64>().ok());
        match self.operator {
            Operator::In(values) => value.is_some_and(|v| values.iter().any(|x| x == v)),
            Operator::NotIn(values) => value.is_none_or(|v| !values.iter().any(|x| x == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Gt(bound) => number().is_some_and(|n| n > bound),
            Operator::Lt(bound) => number().is_some_and(|n| n < bound),
            Operator::Invalid => false,
        }
    }

    /// Whether an entry that knows `value` may satisfy it: a known value as
    /// [`matches`](Self::matches); an unknown one may hold anything; the
    /// name or hostname of nodes not looked up holds none of the looked-up
    /// values but may hold any other, so `In` fails only when the request
    /// looked up every value it names; a node still to be launched has a
    /// name no pod names yet.
    pub fn may_match(&self, value: &LabelValue<'_>) -> bool {
        match value {
            LabelValue::Known(known) => self.matches(known.as_deref()),
            LabelValue::Unknown => !matches!(self.operator, Operator::Invalid),
            LabelValue::NoneOf(looked_up) => match self.operator {
                Operator::In(values) => !values.iter().all(|v| looked_up.contains(v)),
                Operator::Invalid => false,
                _ => true,
            },
            LabelValue::Fresh => !matches!(
                self.operator,
                Operator::In(_) | Operator::DoesNotExist | Operator::Invalid
            ),
        }
    }
}

/// Whether a node matches one required term: every label expression and
/// every field expression (only `metadata.name` exists); an empty term
/// matches no node.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|e| Requirement::parse(e).may_match(&node.label_value(&e.key)))
        && fields.iter().all(|f| {
            f.key == NODE_NAME_FIELD && Requirement::parse(f).may_match(&node.name_value())
        })
}

/// Whether a node matches required node affinity: any of its terms.
pub fn affinity_matches(required: &NodeSelector, node: &Node) -> bool {
    required
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, node))
}

/// The nodeSelector entries a node does not carry, with the node's value
/// (`None`: no such label, or a value the entry does not know). An entry
/// that does not know a label misses it only when it knows the value is
/// none of the wanted one.
pub fn selector_misses<'s, 'n>(
    selector: &'s StringMap,
    node: &'n Node,
) -> Vec<(&'s str, &'s str, Option<std::borrow::Cow<'n, str>>)> {
    selector
        .iter()
        .filter_map(|(key, want)| {
            let miss = match node.label_value(key) {
                LabelValue::Known(has) => (has.as_deref() != Some(want.as_str())).then_some(has),
                LabelValue::Unknown => None,
                LabelValue::NoneOf(looked_up) => looked_up.contains(want).then_some(None),
                LabelValue::Fresh => Some(None),
            };
            miss.map(|has| (key.as_str(), want.as_str(), has))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::node::Node;
    use serde_json::json;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.to_string(),
            operator: op.to_string(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn node(labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({"name": "n1", "labels": labels})).unwrap()
    }

    /// apimachinery labels.Requirement.Matches, operator by operator.
    #[test]
    fn operators_match_as_apimachinery_defines_them() {
        let matches = |key, op, values: &[&str], value| {
            Requirement::parse(&req(key, op, values)).matches(value)
        };
        assert!(matches("os", "In", &["windows"], Some("windows")));
        assert!(!matches("os", "In", &["windows"], Some("linux")));
        assert!(!matches("os", "In", &["windows"], None));
        assert!(!matches("os", "NotIn", &["windows"], Some("windows")));
        assert!(matches("os", "NotIn", &["windows"], None));
        assert!(matches("os", "Exists", &[], Some("")));
        assert!(!matches("os", "Exists", &[], None));
        assert!(matches("os", "DoesNotExist", &[], None));
        assert!(!matches("os", "DoesNotExist", &[], Some("x")));
        assert!(matches("gpus", "Gt", &["3"], Some("4")));
        assert!(!matches("gpus", "Gt", &["3"], Some("3")));
        assert!(matches("gpus", "Lt", &["3"], Some("-1")));
        // A value that does not parse as an integer never compares.
        assert!(!matches("build", "Gt", &["1"], Some("10.0.17763")));
        assert!(!matches("build", "Lt", &["99"], None));
    }

    /// NewRequirement's validation: what it refuses matches no node.
    #[test]
    fn requirements_apimachinery_refuses_match_nothing() {
        for (op, values) in [
            ("Bogus", &["x"][..]),
            ("In", &[][..]),
            ("NotIn", &[][..]),
            ("Exists", &["x"][..]),
            ("DoesNotExist", &["x"][..]),
            ("Gt", &["1.5"][..]),
            ("Gt", &["1", "2"][..]),
            ("Lt", &[][..]),
        ] {
            let written = req("k", op, values);
            let parsed = Requirement::parse(&written);
            assert_eq!(parsed.operator, Operator::Invalid, "{op} {values:?}");
            assert!(!parsed.matches(Some("x")) && !parsed.matches(None));
        }
        // strconv.ParseInt accepts a sign, as i64::from_str does.
        let signed = req("k", "Gt", &["+1"]);
        assert_eq!(Requirement::parse(&signed).operator, Operator::Gt(1));
    }

    /// component-helpers nodeaffinity: terms ORed, expressions ANDed, an
    /// empty term matches nothing, matchFields compare `metadata.name`.
    #[test]
    fn terms_and_fields() {
        let n = node(json!({"kubernetes.io/os": "windows", "pool": "a"}));
        let term = |value: serde_json::Value| -> NodeSelectorTerm {
            serde_json::from_value(value).unwrap()
        };
        assert!(!term_matches(&term(json!({})), &n));
        let both = term(json!({"matchExpressions": [
            {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
            {"key": "pool", "operator": "In", "values": ["b"]}]}));
        assert!(!term_matches(&both, &n));
        let by_name = term(json!({"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}));
        assert!(term_matches(&by_name, &n));
        let other_name = term(json!({"matchFields": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}));
        assert!(!term_matches(&other_name, &n));
        let unknown_field = term(json!({"matchFields": [
            {"key": "spec.unschedulable", "operator": "In", "values": ["n1"]}]}));
        assert!(!term_matches(&unknown_field, &n));
        let selector: NodeSelector = serde_json::from_value(json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}))
        .unwrap();
        assert!(affinity_matches(&selector, &n));
    }

    /// The kubelet's labels are read from the node's fields when the label
    /// list lacks them (a pruned Node answer).
    /// A class of nodes knows its shared labels; one that varies within it
    /// may hold any value; the names of nodes not looked up hold none of
    /// the looked-up values. Unknown never rules a node out, since the
    /// check only reports a pod no node can run.
    #[test]
    fn classes_match_what_they_know_and_may_match_what_they_do_not() {
        let looked_up = vec!["n1".to_string()];
        let class: Node = serde_json::from_value(json!({"name": "example", "count": 5,
            "labels": {"pool": "a"}, "varying": ["zone"], "unnamed": looked_up}))
        .unwrap();
        let may = |key: &str, op: &str, values: &[&str]| {
            let r = req(key, op, values);
            Requirement::parse(&r).may_match(&class.label_value(key))
        };
        assert!(may("pool", "In", &["a"]));
        assert!(!may("pool", "In", &["b"]));
        assert!(may("zone", "In", &["z1"]));
        assert!(may("zone", "DoesNotExist", &[]));
        assert!(!may("zone", "Bogus", &["z1"]));
        // The hostname of nodes not looked up: none of the looked-up names.
        assert!(!may("kubernetes.io/hostname", "In", &["n1"]));
        assert!(may("kubernetes.io/hostname", "In", &["n1", "n2"]));
        assert!(may("kubernetes.io/hostname", "NotIn", &["n1"]));
        let by_name = |values: &[&str]| -> NodeSelectorTerm {
            serde_json::from_value(json!({"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": values}]}))
            .unwrap()
        };
        assert!(!term_matches(&by_name(&["n1"]), &class));
        assert!(term_matches(&by_name(&["other"]), &class));
        // nodeSelector entries: a known value misses, an unknown one does not.
        let selector = |key: &str, value: &str| -> StringMap {
            [(key.to_string(), value.to_string())].into_iter().collect()
        };
        assert_eq!(selector_misses(&selector("pool", "b"), &class).len(), 1);
        assert!(selector_misses(&selector("zone", "z9"), &class).is_empty());
        assert_eq!(
            selector_misses(&selector("kubernetes.io/hostname", "n1"), &class).len(),
            1
        );
        assert!(selector_misses(&selector("kubernetes.io/hostname", "n7"), &class).is_empty());
        // Negative: a node listed whole knows its name and every label.
        let listed = node(json!({"pool": "a"}));
        assert!(term_matches(&by_name(&["n1"]), &listed));
        assert!(!term_matches(&by_name(&["other"]), &listed));
        assert_eq!(selector_misses(&selector("zone", "z9"), &listed).len(), 1);
    }

    #[test]
    fn kubelet_labels_fall_back_to_node_fields() {
        let n: Node = serde_json::from_value(json!({"name": "w", "os": "windows",
            "windowsBuild": "10.0.20348.2700", "architecture": "amd64"}))
        .unwrap();
        let selector = [
            ("kubernetes.io/os", "windows"),
            ("kubernetes.io/arch", "amd64"),
            ("node.kubernetes.io/windows-build", "10.0.20348"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert!(selector_misses(&selector, &n).is_empty());
        let wrong = [("kubernetes.io/arch".to_string(), "arm64".to_string())]
            .into_iter()
            .collect();
        assert_eq!(selector_misses(&wrong, &n).len(), 1);
    }
}
