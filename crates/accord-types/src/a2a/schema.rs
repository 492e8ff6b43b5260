//! JSON Schemas of the A2A types whose serde is written by hand (enums by name, [`Part`]'s
//! content oneof, [`ErrorDetail`]'s `@type`), so that the schemas describe what the serde
//! impls write. The oneof groups get theirs from the `proto_oneof!` macro. Each enum schema lists
//! the v1.0 names, the only spelling Accord writes (it also reads the 0.3 spellings and numbers).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

use super::errors::ErrorDetail;
use super::task::{Part, Role, TaskState};

impl JsonSchema for TaskState {
    fn schema_name() -> Cow<'static, str> {
        "TaskState".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = TaskState::ALL.iter().map(|state| state.as_str()).collect();
        json_schema!({
            "description": "The lifecycle state of a task (proto `TaskState`).",
            "type": "string",
            "enum": names,
        })
    }
}

impl JsonSchema for Role {
    fn schema_name() -> Cow<'static, str> {
        "Role".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = [Role::Unspecified, Role::User, Role::Agent].iter().map(|role| role.as_str()).collect();
        json_schema!({
            "description": "Who sent a message (proto `Role`).",
            "type": "string",
            "enum": names,
        })
    }
}

impl JsonSchema for Part {
    fn schema_name() -> Cow<'static, str> {
        "Part".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let metadata = generator.subschema_for::<Map<String, Value>>();
        let string = generator.subschema_for::<String>();
        // One branch per content member, each with the members every kind may carry: exactly one
        // branch matches a part with exactly one content member, as the serde impl requires. The
        // branches are named definitions (`PartText`, …), so generators make one class of each.
        let definitions =
            generator.settings().definitions_path.trim_start_matches('#').trim_end_matches('/').to_owned();
        let branches: Vec<Value> = [
            ("text", "PartText", string.clone(), "Text content."),
            ("raw", "PartRaw", json_schema!({"type": "string", "contentEncoding": "base64"}), "File bytes, base64."),
            (
                "url",
                "PartUrl",
                json_schema!({"type": "string", "format": "uri-reference"}),
                "Where the file's content lives.",
            ),
            ("data", "PartData", json_schema!({}), "Any JSON value."),
        ]
        .into_iter()
        .map(|(member, name, schema, description)| {
            let mut content = schema.to_value();
            if let Some(object) = content.as_object_mut() {
                object.insert("description".into(), description.into());
            }
            let branch = serde_json::json!({
                "type": "object",
                "description": format!("A part with `{member}` content."),
                "properties": {
                    member: content,
                    "metadata": metadata,
                    "filename": string,
                    "mediaType": string,
                },
                "required": [member],
            });
            generator.definitions_mut().insert(name.into(), branch);
            serde_json::json!({ "$ref": format!("#{definitions}/{name}") })
        })
        .collect();
        json_schema!({
            "description": "A piece of message or artifact content (proto `Part`): exactly one of `text`, `raw`, `url`, `data`.",
            "oneOf": branches,
        })
    }
}

impl JsonSchema for ErrorDetail {
    fn schema_name() -> Cow<'static, str> {
        "ErrorDetail".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A `google.protobuf.Any` in JSON (`google.rpc.ErrorInfo`, `google.rpc.BadRequest`, …), typed by `@type`.",
            "type": "object",
            "properties": { "@type": { "type": "string" } },
        })
    }
}
