//! The answer to `validate`: what the SDK's `ValidationResponse` holds,
//! written as it serialises, with the mutated object written by
//! `object::write` (its unread fields as the text they came as).

use os_placement_core::{Decision, ReadNode};
use serde_json::Value;

use crate::object;

/// The outcome of one request.
#[derive(Debug, Default)]
pub struct Answer {
    /// Whether the request is accepted.
    pub accepted: bool,
    /// Why it is rejected, or what the policy has to say.
    pub message: Option<String>,
    /// Warnings for the requesting client.
    pub warnings: Option<Vec<String>>,
    /// The mutated object, as read (`object::Narrow`) and patched.
    mutated: Option<Value>,
}

impl Answer {
    /// The answer a decision gives; its mutated object read by `object::Narrow`.
    pub fn of(decision: Decision) -> Answer {
        let warnings = decision.warning_lines();
        Answer {
            accepted: decision.accepted,
            message: decision.message(),
            warnings: (!warnings.is_empty()).then_some(warnings),
            mutated: decision.mutated_object,
        }
    }

    /// A rejection saying `message`.
    pub fn rejection(message: String) -> Answer {
        Answer {
            message: Some(message),
            ..Answer::default()
        }
    }

    /// The mutated object as JSON, parsed back; `None` when unchanged.
    pub fn mutated_object(&self) -> Option<Value> {
        let object = self.mutated.as_ref()?;
        let mut text = Vec::new();
        object::write(&mut text, object, ReadNode::Object).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The JSON of the SDK's `ValidationResponse`, field by field in its order.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(br#"{"accepted":"#);
        serde_json::to_writer(&mut out, &self.accepted)?;
        out.extend_from_slice(br#","message":"#);
        serde_json::to_writer(&mut out, &self.message)?;
        out.extend_from_slice(br#","code":null,"mutated_object":"#);
        match &self.mutated {
            Some(object) => object::write(&mut out, object, ReadNode::Object)?,
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(br#","audit_annotations":null,"warnings":"#);
        serde_json::to_writer(&mut out, &self.warnings)?;
        out.push(b'}');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kubewarden_policy_sdk::response::ValidationResponse;
    use serde::de::DeserializeSeed;
    use serde_json::json;

    /// The SDK's response holding the same answer.
    fn sdk(answer: &Answer) -> ValidationResponse {
        ValidationResponse {
            accepted: answer.accepted,
            message: answer.message.clone(),
            code: None,
            mutated_object: answer.mutated_object(),
            audit_annotations: None,
            warnings: answer.warnings.clone(),
        }
    }

    #[test]
    fn without_a_mutation_it_is_the_sdk_s_json_byte_for_byte() {
        let mut answers = vec![
            Answer::rejection("no \"quotes\" — here\n".into()),
            Answer {
                accepted: true,
                ..Answer::default()
            },
        ];
        let warned = Answer {
            accepted: true,
            message: Some("m".into()),
            warnings: Some(vec!["w1".into(), "w\"2".into()]),
            mutated: None,
        };
        answers.push(warned);
        for answer in answers {
            let sdk = serde_json::to_vec(&sdk(&answer)).unwrap();
            assert_eq!(answer.to_json().unwrap(), sdk);
        }
    }

    #[test]
    fn with_a_mutation_the_sdk_reads_the_whole_object_back() {
        let text =
            r#"{"kind": "Pod", "spec": {"nodeSelector": {"a": "b"}, "volumes": [{"name": "v"}]}}"#;
        let mut de = serde_json::Deserializer::from_str(text);
        let object = object::Narrow(ReadNode::Object)
            .deserialize(&mut de)
            .unwrap();
        let answer = Answer {
            accepted: true,
            mutated: Some(object),
            ..Answer::default()
        };
        let sdk: ValidationResponse = serde_json::from_slice(&answer.to_json().unwrap()).unwrap();
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(sdk.mutated_object, Some(whole.clone()));
        assert_eq!(answer.mutated_object(), Some(whole));
        assert!(sdk.accepted);
        assert_eq!(sdk.message, None);
        assert_eq!(json!(sdk.warnings), json!(null));
    }
}
