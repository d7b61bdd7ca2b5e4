//! The nodes a required node affinity admits, as far as OS and build go.
//! Terms are ORed, expressions ANDed. Where a label maps to nodes only
//! approximately, the result errs towards admitting more nodes: that only
//! ever makes the policy add a selector or skip a conflict, never reject
//! a pod wrongly. Values a label never takes, and `Gt`/`Lt` on labels
//! whose values are not integers, match no node, as in the scheduler.

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

use crate::scheduling::requirement::{Operator, Requirement};
use crate::vocab::constraint::{Builds, Placement};
use crate::vocab::labels::{
    is_placement_label, nodes_compared, nodes_with, nodes_with_key, nodes_without_key,
    why_no_node_carries, why_no_node_compares, BETA_OS_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL,
};

pub fn placement(selector: &NodeSelector) -> Placement {
    selector
        .node_selector_terms
        .iter()
        .map(term_placement)
        .fold(Placement::nowhere(), |acc, p| acc.union(&p))
}

fn term_placement(term: &NodeSelectorTerm) -> Placement {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    // An empty term matches no node.
    if expressions.is_empty() && fields.is_empty() {
        return Placement::nowhere();
    }
    expressions
        .iter()
        .map(expression_placement)
        .fold(Placement::anywhere(), |acc, p| acc.intersect(&p))
}

fn expression_placement(req: &NodeSelectorRequirement) -> Placement {
    let parsed = Requirement::parse(req);
    let key = parsed.key;
    let any_of = |values: &[String]| {
        values
            .iter()
            .filter_map(|v| nodes_with(key, v))
            .fold(Placement::nowhere(), |acc, p| acc.union(&p))
    };
    match parsed.operator {
        // The scheduler cannot parse the term, so it matches no node
        // (component-helpers nodeaffinity: a term with parse errors).
        Operator::Invalid => Placement::nowhere(),
        Operator::Gt(bound) => nodes_compared(key, true, bound).unwrap_or_else(Placement::anywhere),
        Operator::Lt(bound) => {
            nodes_compared(key, false, bound).unwrap_or_else(Placement::anywhere)
        }
        _ if !is_placement_label(key) => Placement::anywhere(),
        Operator::In(values) => any_of(values),
        // Exact only where a value maps to exactly the nodes carrying it.
        Operator::NotIn(values)
            if matches!(key, OS_LABEL | BETA_OS_LABEL | WINDOWS_BUILD_LABEL) =>
        {
            complement(&any_of(values))
        }
        Operator::NotIn(_) => Placement::anywhere(),
        Operator::Exists => nodes_with_key(key).unwrap_or_else(Placement::anywhere),
        Operator::DoesNotExist => nodes_without_key(key).unwrap_or_else(Placement::anywhere),
    }
}

/// Why no node satisfies the selector, naming the expressions no node
/// matches; `None` when only their combination is contradictory.
pub fn why_no_node(selector: &NodeSelector) -> Option<String> {
    let terms = &selector.node_selector_terms;
    if terms.is_empty() {
        return Some("an empty nodeSelectorTerms list matches no node".to_string());
    }
    let reasons: Option<Vec<String>> = terms.iter().map(term_reason).collect();
    let mut reasons = reasons?;
    reasons.dedup();
    Some(reasons.join(", and "))
}

fn term_reason(term: &NodeSelectorTerm) -> Option<String> {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return Some("an empty nodeSelectorTerm matches no node".to_string());
    }
    expressions.iter().find_map(expression_reason)
}

/// Why this expression alone matches no node; `None` when some node may match.
fn expression_reason(req: &NodeSelectorRequirement) -> Option<String> {
    if !expression_placement(req).is_empty() {
        return None;
    }
    let key = req.key.as_str();
    let values = req.values.as_deref().unwrap_or_default();
    match (req.operator.as_str(), Requirement::parse(req).operator) {
        (_, Operator::Gt(bound)) => why_no_node_compares(key, true, bound),
        (_, Operator::Lt(bound)) => why_no_node_compares(key, false, bound),
        ("Gt" | "Lt", _) => Some(format!(
            "{key} {} [{}] matches no node ({} takes exactly one integer value)",
            req.operator,
            values.join(", "),
            req.operator
        )),
        ("In" | "NotIn", Operator::Invalid) => Some(format!(
            "{key} {} [] matches no node ({} takes at least one value)",
            req.operator, req.operator
        )),
        ("Exists" | "DoesNotExist", Operator::Invalid) => Some(format!(
            "{key} {} [{}] matches no node ({} takes no values)",
            req.operator,
            values.join(", "),
            req.operator
        )),
        ("In", _) => {
            let why: Vec<String> = values
                .iter()
                .filter_map(|v| why_no_node_carries(key, v))
                .collect();
            (!why.is_empty()).then(|| why.join(", and "))
        }
        ("DoesNotExist", _) => Some(format!(
            "{key} DoesNotExist matches no node (every node carries {key})"
        )),
        _ => Some(format!(
            "{key} {} [{}] matches no node (it excludes every value nodes carry)",
            req.operator,
            values.join(", ")
        )),
    }
}

fn complement(p: &Placement) -> Placement {
    let windows = match &p.windows {
        None => Some(Builds::Any),
        Some(builds) => Some(builds.complement()),
    };
    Placement {
        linux: !p.linux,
        windows,
    }
    .intersect(&Placement::anywhere())
}

/// A short rendering of the expressions that bear on placement.
pub fn describe(selector: &NodeSelector) -> String {
    let terms: Vec<String> = selector
        .node_selector_terms
        .iter()
        .map(|term| {
            let parts: Vec<String> = term
                .match_expressions
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|r| is_placement_label(&r.key) || expression_placement(r).is_empty())
                .map(|r| {
                    let values = r.values.as_deref().unwrap_or_default();
                    if values.is_empty() {
                        format!("{} {}", r.key, r.operator)
                    } else {
                        format!("{} {} [{}]", r.key, r.operator, values.join(", "))
                    }
                })
                .collect();
            if parts.is_empty() {
                "(no OS expression)".to_string()
            } else {
                parts.join(" and ")
            }
        })
        .collect();
    if terms.is_empty() {
        "no nodeSelectorTerms".to_string()
    } else {
        terms.join(" or ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::build::WindowsBuild;
    use crate::vocab::constraint::Os;
    use serde_json::json;

    fn selector(terms: serde_json::Value) -> NodeSelector {
        serde_json::from_value(json!({ "nodeSelectorTerms": terms })).unwrap()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> serde_json::Value {
        json!({"key": key, "operator": op, "values": values})
    }

    #[test]
    fn in_and_not_in_on_os() {
        let linux = selector(json!([{"matchExpressions": [expr(OS_LABEL, "In", &["linux"])]}]));
        assert_eq!(placement(&linux).os(), Some(Os::Linux));
        let not_windows =
            selector(json!([{"matchExpressions": [expr(OS_LABEL, "NotIn", &["windows"])]}]));
        assert_eq!(placement(&not_windows).os(), Some(Os::Linux));
        let both =
            selector(json!([{"matchExpressions": [expr(OS_LABEL, "In", &["linux", "windows"])]}]));
        assert_eq!(placement(&both), Placement::anywhere());
    }

    #[test]
    fn terms_are_ored_and_expressions_anded() {
        let s = selector(json!([
            {"matchExpressions": [expr(OS_LABEL, "In", &["linux"])]},
            {"matchExpressions": [expr(OS_LABEL, "In", &["windows"]),
                                  expr(WINDOWS_BUILD_LABEL, "In", &["10.0.20348"])]}
        ]));
        let p = placement(&s);
        assert!(p.linux);
        assert_eq!(
            p.windows.and_then(|b| b.single()),
            WindowsBuild::from_release("ltsc2022")
        );
        let contradiction = selector(json!([{"matchExpressions": [
            expr(OS_LABEL, "In", &["linux"]), expr(OS_LABEL, "In", &["windows"])]}]));
        assert!(placement(&contradiction).is_empty());
    }

    #[test]
    fn exists_and_does_not_exist() {
        let has_build = selector(json!([{"matchExpressions": [
            {"key": WINDOWS_BUILD_LABEL, "operator": "Exists"}]}]));
        assert_eq!(placement(&has_build).os(), Some(Os::Windows));
        let no_build = selector(json!([{"matchExpressions": [
            {"key": WINDOWS_BUILD_LABEL, "operator": "DoesNotExist"}]}]));
        assert_eq!(placement(&no_build).os(), Some(Os::Linux));
        let no_os = selector(json!([{"matchExpressions": [
            {"key": OS_LABEL, "operator": "DoesNotExist"}]}]));
        assert!(placement(&no_os).is_empty());
    }

    #[test]
    fn unrelated_keys_and_empty_terms() {
        let arch =
            selector(json!([{"matchExpressions": [expr("kubernetes.io/arch", "In", &["amd64"])]}]));
        assert_eq!(placement(&arch), Placement::anywhere());
        let empty_term = selector(json!([{}]));
        assert!(placement(&empty_term).is_empty());
        assert!(placement(&selector(json!([]))).is_empty());
        let build_not_in = selector(json!([{"matchExpressions": [
            expr(WINDOWS_BUILD_LABEL, "NotIn", &["10.0.17763"])]}]));
        let p = placement(&build_not_in);
        assert!(p.linux);
        assert!(!p
            .windows
            .unwrap()
            .allows(WindowsBuild::from_release("ltsc2019").unwrap()));
    }

    #[test]
    fn gt_and_lt_need_one_integer_value() {
        let gt = |values: &[&str]| {
            placement(&selector(json!([{"matchExpressions": [
                expr("example.com/gpus", "Gt", values)]}])))
        };
        assert_eq!(gt(&["1"]), Placement::anywhere());
        // strconv.ParseInt accepts a sign, as does i64::from_str.
        assert_eq!(gt(&["+1"]), Placement::anywhere());
        for bad in [&["1.5"][..], &[" 1"], &[""], &["1", "2"], &[]] {
            assert!(gt(bad).is_empty(), "{bad:?}");
        }
        let build_gt = selector(json!([{"matchExpressions": [
            expr(WINDOWS_BUILD_LABEL, "Gt", &["17763"])]}]));
        assert!(placement(&build_gt).is_empty());
        assert!(why_no_node(&build_gt)
            .unwrap()
            .contains("compares integers"));
    }

    #[test]
    fn contradictions_between_expressions_have_no_single_culprit() {
        let s = selector(json!([{"matchExpressions": [
            expr(OS_LABEL, "In", &["linux"]), expr(OS_LABEL, "In", &["windows"])]}]));
        assert!(placement(&s).is_empty());
        assert_eq!(why_no_node(&s), None);
        assert!(why_no_node(&selector(json!([]))).is_some());
    }
}
