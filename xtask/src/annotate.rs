//! The annotated module, as `kwctl annotate -m metadata.yml -u README.md`
//! writes it: the policy metadata as JSON in a wasm custom section named
//! `io.kubewarden.metadata`, with `protocolVersion`. policy-server refuses
//! modules without it.
//!
//! kwctl asks the module for its protocol version by running it; this crate
//! builds without a wasm runtime, so the version is given (`make
//! annotated-policy.wasm` asks the module through the e2e host, and the e2e
//! tests check the embedded value against the module's answer).
//!
//! Unlike kwctl (which re-encodes the whole module), every other section is
//! copied byte for byte; an earlier metadata section is replaced.

use std::path::Path;

use serde_json::{Map, Value};
use wasm_encoder::Section;
use wasmparser::{Parser, Payload};

use crate::error::{read, read_text, write, Error, Result};

/// Name of the custom section holding the policy metadata.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";
/// Annotation carrying the usage text (the README).
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";

/// Reads `metadata.yml` and checks the fields policy-server relies on.
pub fn load_metadata(path: &Path) -> Result<Map<String, Value>> {
    let Value::Object(metadata) = crate::yaml::read(path)? else {
        return Err(Error::Metadata(format!(
            "{}: the metadata must be a YAML mapping",
            path.display()
        )));
    };
    check_metadata(&metadata)?;
    Ok(metadata)
}

/// The checks `kwctl annotate` makes before writing: rules present and well
/// formed, `mutating` a boolean, annotations a map of strings.
pub fn check_metadata(metadata: &Map<String, Value>) -> Result<()> {
    let problem = |text: String| Err(Error::Metadata(text));
    let Some(rules) = metadata.get("rules").and_then(Value::as_array) else {
        return problem("rules: a list of admission rules is required".to_owned());
    };
    for (i, rule) in rules.iter().enumerate() {
        for field in ["apiGroups", "apiVersions", "resources", "operations"] {
            let values = rule.get(field).and_then(Value::as_array);
            if !values.is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string)) {
                return problem(format!(
                    "rules[{i}].{field}: a non-empty list of strings is required"
                ));
            }
        }
    }
    if !metadata.get("mutating").is_some_and(Value::is_boolean) {
        return problem("mutating: true or false is required".to_owned());
    }
    if let Some(annotations) = metadata.get("annotations") {
        let ok = annotations
            .as_object()
            .is_some_and(|a| a.values().all(Value::is_string));
        if !ok {
            return problem("annotations: a map of string values is required".to_owned());
        }
    }
    Ok(())
}

/// Builds a default value.
type DefaultValue = fn() -> Value;

/// Fields kwctl writes with these values when metadata.yml leaves them out.
const KWCTL_DEFAULTS: [(&str, DefaultValue); 3] = [
    ("backgroundAudit", || Value::Bool(true)),
    ("policyType", || Value::String("kubernetes".to_owned())),
    ("contextAwareResources", || Value::Array(Vec::new())),
];

/// The metadata to embed, as kwctl embeds it: `metadata.yml`, its defaults,
/// `protocolVersion` and, when given, the usage text.
pub fn embedded_metadata(
    mut metadata: Map<String, Value>,
    protocol_version: &str,
    usage: Option<&str>,
) -> Map<String, Value> {
    for (key, default) in KWCTL_DEFAULTS {
        metadata.entry(key).or_insert_with(default);
    }
    metadata.insert(
        "protocolVersion".to_owned(),
        Value::String(protocol_version.to_owned()),
    );
    if let Some(usage) = usage {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(annotations) = annotations {
            annotations.insert(USAGE_ANNOTATION.to_owned(), Value::String(usage.to_owned()));
        }
    }
    metadata
}

/// The bytes of `module` with `metadata` in the `io.kubewarden.metadata` custom
/// section: every other section unchanged, an earlier metadata section dropped,
/// the new one last.
pub fn annotate_bytes(module: &[u8], metadata: &Map<String, Value>) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(module.len() + 4096);
    // Sections are contiguous: each one spans from the end of the previous one
    // to the end of its contents.
    let mut cursor = 0usize;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(|e| Error::Module(e.to_string()))?;
        match &payload {
            Payload::Version {
                encoding, range, ..
            } => {
                if *encoding != wasmparser::Encoding::Module {
                    return Err(Error::Module("a wasm component, not a module".to_owned()));
                }
                out.extend_from_slice(module.get(range.clone()).unwrap_or_default());
                cursor = range.end;
                continue;
            }
            Payload::End(_) => break,
            _ => {}
        }
        let Some((_, range)) = payload.as_section() else {
            continue; // entries inside the code section
        };
        let whole = module
            .get(cursor..range.end)
            .ok_or_else(|| Error::Module("a section outside the module".to_owned()))?;
        cursor = range.end;
        let replaced =
            matches!(&payload, Payload::CustomSection(c) if c.name() == METADATA_SECTION);
        if !replaced {
            out.extend_from_slice(whole);
        }
    }
    let json = serde_json::to_vec(metadata).map_err(|e| Error::Module(e.to_string()))?;
    wasm_encoder::CustomSection {
        name: METADATA_SECTION.into(),
        data: json.into(),
    }
    .append_to(&mut out);
    Ok(out)
}

/// The metadata embedded in `module`, if any.
pub fn read_metadata(module: &[u8]) -> Result<Option<Value>> {
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(section) =
            payload.map_err(|e| Error::Module(e.to_string()))?
        {
            if section.name() == METADATA_SECTION {
                let metadata = serde_json::from_slice(section.data()).map_err(|e| {
                    Error::Module(format!("the {METADATA_SECTION} section is not JSON: {e}"))
                })?;
                return Ok(Some(metadata));
            }
        }
    }
    Ok(None)
}

/// What `annotate` reads and writes.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotateFiles<'a> {
    /// The policy module.
    pub wasm: &'a Path,
    /// `metadata.yml`.
    pub metadata: &'a Path,
    /// The usage text (the README), if any.
    pub usage: Option<&'a Path>,
    /// Where the annotated module goes.
    pub output: &'a Path,
}

/// `annotate` end to end: reads the module, the metadata and the usage file,
/// writes the annotated module, returns the embedded metadata.
pub fn annotate_file(files: &AnnotateFiles, protocol_version: &str) -> Result<Value> {
    let module = read(files.wasm)?;
    let metadata = load_metadata(files.metadata)?;
    let usage = files.usage.map(read_text).transpose()?;
    let embedded = embedded_metadata(metadata, protocol_version, usage.as_deref());
    write(files.output, annotate_bytes(&module, &embedded)?)?;
    Ok(Value::Object(embedded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `(module (func (export "f")))` with a custom section `x` holding `ab`.
    fn module_with_custom(name: &str) -> Vec<u8> {
        let mut module = wasm_encoder::Module::new();
        let mut types = wasm_encoder::TypeSection::new();
        types.ty().function([], []);
        module.section(&types);
        let mut functions = wasm_encoder::FunctionSection::new();
        functions.function(0);
        module.section(&functions);
        module.section(&wasm_encoder::CustomSection {
            name: name.into(),
            data: b"ab".as_slice().into(),
        });
        let mut code = wasm_encoder::CodeSection::new();
        let mut body = wasm_encoder::Function::new([]);
        body.instructions().end();
        code.function(&body);
        module.section(&code);
        module.finish()
    }

    fn metadata() -> Map<String, Value> {
        let Value::Object(map) = json!({
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
            "mutating": true,
            "annotations": {"io.kubewarden.policy.title": "t"}
        }) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn appends_section_and_keeps_the_rest() {
        let module = module_with_custom("x");
        let embedded = embedded_metadata(metadata(), "v1", Some("# usage\ntext"));
        let annotated = annotate_bytes(&module, &embedded).unwrap();
        assert_eq!(&annotated[..module.len()], module.as_slice());
        let read = read_metadata(&annotated).unwrap().unwrap();
        assert_eq!(read["protocolVersion"], "v1");
        assert_eq!(read["annotations"][USAGE_ANNOTATION], "# usage\ntext");
        wasmparser::Validator::new()
            .validate_all(&annotated)
            .unwrap();
    }

    #[test]
    fn replaces_an_earlier_metadata_section() {
        let module = module_with_custom(METADATA_SECTION);
        let first = annotate_bytes(&module, &embedded_metadata(metadata(), "v1", None)).unwrap();
        let again = annotate_bytes(&first, &embedded_metadata(metadata(), "v2", None)).unwrap();
        let sections = Parser::new(0)
            .parse_all(&again)
            .filter(|p| matches!(p, Ok(Payload::CustomSection(c)) if c.name() == METADATA_SECTION))
            .count();
        assert_eq!(sections, 1);
        assert_eq!(
            read_metadata(&again).unwrap().unwrap()["protocolVersion"],
            "v2"
        );
        // Annotating twice with the same metadata gives the same bytes.
        let twice = annotate_bytes(&first, &embedded_metadata(metadata(), "v1", None)).unwrap();
        assert_eq!(twice, first);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(annotate_bytes(b"not wasm", &metadata()).is_err());
        let mut bad = metadata();
        bad.insert("mutating".to_owned(), json!("yes"));
        assert!(check_metadata(&bad)
            .unwrap_err()
            .to_string()
            .contains("mutating"));
        let mut no_rules = metadata();
        no_rules.remove("rules");
        assert!(check_metadata(&no_rules)
            .unwrap_err()
            .to_string()
            .contains("rules"));
        let mut empty_resources = metadata();
        empty_resources["rules"][0]["resources"] = json!([]);
        let err = check_metadata(&empty_resources).unwrap_err().to_string();
        assert!(err.contains("rules[0].resources"), "{err}");
        assert!(read_metadata(&module_with_custom("x")).unwrap().is_none());
    }
}
