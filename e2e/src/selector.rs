//! Label and field selectors as the API server reads them
//! (k8s.io/apimachinery/pkg/labels `Parse`): requirements separated by
//! commas, each `key`, `!key`, `key=value`, `key==value`, `key!=value`,
//! `key in (a,b)` or `key notin (a,b)`. They are parsed into kube-core's
//! typed selector and matched with its one `matches`, for the e2e host's
//! host calls and the fake API server alike.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, Result};
pub use kube_core::Selector;
use kube_core::{Expression, SelectorExt};
use serde_json::Value;

/// A selector text parsed; `None` or blank selects everything.
pub fn parse(selector: Option<&str>) -> Result<Selector> {
    let Some(text) = selector.filter(|s| !s.trim().is_empty()) else {
        return Ok(Selector::default());
    };
    requirements(text)
        .into_iter()
        .map(|part| expression(part.trim()).map_err(|e| anyhow!("selector {text:?}: {e}")))
        .collect()
}

/// The requirements of `text`: split at commas outside parentheses.
fn requirements(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(text.get(start..at).unwrap_or_default());
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(text.get(start..).unwrap_or_default());
    parts
}

fn expression(part: &str) -> Result<Expression> {
    let owned = |s: &str| s.trim().to_owned();
    if let Some((key, rest)) = split_word(part, " notin ") {
        return Ok(Expression::NotIn(owned(key), set(rest)?));
    }
    if let Some((key, rest)) = split_word(part, " in ") {
        return Ok(Expression::In(owned(key), set(rest)?));
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Expression::NotEqual(owned(key), owned(value)));
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Expression::Equal(owned(key), owned(value)));
    }
    if part.is_empty() || part.contains(['(', ')', ' ']) {
        return Err(anyhow!("{part:?} is not a requirement"));
    }
    Ok(match part.strip_prefix('!') {
        Some(key) => Expression::DoesNotExist(owned(key)),
        None => Expression::Exists(owned(part)),
    })
}

fn split_word<'a>(part: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    part.split_once(word)
}

/// `(a,b)`: the values, at least one.
fn set(text: &str) -> Result<BTreeSet<String>> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| anyhow!("{text:?}: a set is written (a,b)"))?;
    let values: BTreeSet<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    if values.iter().any(String::is_empty) {
        return Err(anyhow!("{text:?}: an empty value in a set"));
    }
    Ok(values)
}

/// Whether `object`'s labels match `selector`.
pub fn labels_match(selector: &Selector, object: &Value) -> bool {
    let labels: BTreeMap<String, String> = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    selector.matches(&labels)
}

/// Whether `object`'s fields (dotted paths such as `metadata.name`) match
/// `selector`.
pub fn fields_match(selector: &Selector, object: &Value) -> bool {
    let fields: BTreeMap<String, String> = selector
        .clone()
        .into_iter()
        .filter_map(|e| {
            let key = match &e {
                Expression::In(k, _)
                | Expression::NotIn(k, _)
                | Expression::Equal(k, _)
                | Expression::NotEqual(k, _)
                | Expression::Exists(k)
                | Expression::DoesNotExist(k) => k.clone(),
            };
            let value = key
                .split('.')
                .try_fold(object, |v, part| v.get(part))
                .and_then(Value::as_str)?;
            Some((key, value.to_owned()))
        })
        .collect();
    selector.matches(&fields)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_based_and_equality_requirements_are_parsed_as_the_api_server_reads_them() {
        let object =
            json!({"metadata": {"name": "a", "labels": {"facts": "shard-3", "tier": "x"}}});
        let selects = |text: &str| labels_match(&parse(Some(text)).unwrap(), &object);
        assert!(selects("facts in (cluster,shard-3)"));
        assert!(!selects("facts in (cluster,shard-4)"));
        assert!(selects("facts notin (cluster), tier=x"));
        assert!(!selects("facts in (cluster,shard-3),tier!=x"));
        assert!(selects("facts==shard-3"));
        assert!(selects("tier"));
        assert!(!selects("!tier"));
        assert!(selects(""));
        assert!(fields_match(
            &parse(Some("metadata.name=a")).unwrap(),
            &object
        ));
        assert!(!fields_match(
            &parse(Some("metadata.name=b")).unwrap(),
            &object
        ));
        // Negative: what the API server refuses is refused.
        for broken in ["facts in cluster", "facts in ()", "a b", "facts in (a,,b)"] {
            assert!(parse(Some(broken)).is_err(), "{broken}");
        }
    }
}
