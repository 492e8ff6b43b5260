//! JSON Schema validation of skill inputs and outputs.

pub(crate) use crate::model::Issue;

use serde_json::Value;

/// A compiled schema. Cheap to clone: clones share the compiled validator.
#[derive(Clone)]
pub(crate) struct Schema {
    source: Value,
    validator: std::sync::Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema").field("source", &self.source).finish_non_exhaustive()
    }
}

/// Issues are capped so a huge bad input cannot make a huge error body.
const MAX_ISSUES: usize = 64;

impl Schema {
    pub(crate) fn compile(source: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&source).map_err(|error| error.to_string())?;
        Ok(Self { source, validator: std::sync::Arc::new(validator) })
    }

    pub(crate) fn source(&self) -> &Value {
        &self.source
    }

    pub(crate) fn check(&self, instance: &Value) -> Result<(), Vec<Issue>> {
        let issues: Vec<Issue> = self
            .validator
            .iter_errors(instance)
            .take(MAX_ISSUES)
            .map(|error| Issue {
                code: error.kind().keyword().to_owned(),
                path: error
                    .instance_path()
                    .into_iter()
                    .map(|segment| match segment {
                        jsonschema::paths::LocationSegment::Property(name) => Value::String(name.to_string()),
                        jsonschema::paths::LocationSegment::Index(index) => Value::from(index),
                    })
                    .collect(),
                message: error.to_string(),
            })
            .collect();
        if issues.is_empty() { Ok(()) } else { Err(issues) }
    }
}
