//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the faces' route tables
//! (`Routes`) and the wire types' JSON Schemas (`schemars`, the schema system the engine already
//! validates skill input with), never written by hand.
//!
//! Every face mounts its routes through a `Routes` table, which takes each route together with
//! the operations describing it; the document is the union of the tables of the faces the
//! configuration serves, so it lists exactly what is served. A skill's own input and output
//! schemas become the bodies of its `/entrypoints/{key}/…` paths. The module owns the document
//! and the descriptions; the faces own their handlers.

use std::sync::Arc;

use accord_engine::Agent;
use axum::extract::OriginalUri;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

pub(crate) mod describe;
mod routes;

pub(crate) use routes::{Operation, Routes, SchemaSource, inline, schema_of};

use crate::ServerConfig;

/// The path the document is served at, relative to the agent's base path.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The document without `servers` (which depends on the request's origin).
pub(crate) fn document(agent: &Agent, config: &ServerConfig, operations: &[Operation]) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for operation in operations {
        let item = paths.entry(operation.path().to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(operation.method(), operation.render(&mut generator));
        }
    }
    let mut schemas = generator.take_definitions(true);
    for (name, schema) in describe::skill_schemas(agent) {
        hoist(&name, schema, &mut schemas);
    }
    let mut components = Map::new();
    components.insert("schemas".into(), Value::Object(schemas));
    let mut document = Map::new();
    document.insert("openapi".into(), "3.1.0".into());
    let mut info = Map::new();
    info.insert("title".into(), agent.name().into());
    info.insert("version".into(), agent.version().into());
    if let Some(description) = agent.description() {
        info.insert("description".into(), description.into());
    }
    document.insert("info".into(), Value::Object(info));
    let schemes = security_schemes(config);
    if !schemes.is_empty() {
        // Any one scheme, or none: each face decides what an anonymous caller may do.
        let mut requirements = vec![json!({})];
        requirements.extend(schemes.keys().map(|name| json!({ name: [] })));
        document.insert("security".into(), Value::Array(requirements));
        components.insert("securitySchemes".into(), Value::Object(schemes));
    }
    let mut paths = Value::Object(paths);
    let mut components = Value::Object(components);
    for schemas in [&mut paths, &mut components] {
        without_boolean_schemas(schemas, false);
    }
    document.insert("paths".into(), paths);
    document.insert("components".into(), components);
    Value::Object(document)
}

/// The keywords whose value is one schema, and those whose value is a list or map of schemas.
const SCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "schema",
    "x-event-data",
];
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "schemas", "dependentSchemas"];

/// Boolean schemas (`true` for "any JSON value", which schemars writes for `serde_json::Value`)
/// written as `{}` and `{"not": {}}`: the same in JSON Schema 2020-12, and common client
/// generators read only object schemas. `additionalProperties: false` stays, as every reader
/// knows it. `schema` is a schema when `in_schema`, else any part of the document.
fn without_boolean_schemas(value: &mut Value, in_schema: bool) {
    match value {
        Value::Bool(true) if in_schema => *value = json!({}),
        Value::Bool(false) if in_schema => *value = json!({"not": {}}),
        Value::Object(object) => {
            for (key, member) in object.iter_mut() {
                let key = key.as_str();
                if SCHEMA_KEYWORDS.contains(&key) {
                    without_boolean_schemas(member, true);
                } else if SCHEMA_LISTS.contains(&key) {
                    if let Value::Array(items) = member {
                        items.iter_mut().for_each(|item| without_boolean_schemas(item, true));
                    }
                } else if SCHEMA_MAPS.contains(&key) {
                    if let Value::Object(entries) = member {
                        entries.values_mut().for_each(|entry| without_boolean_schemas(entry, true));
                    }
                } else if key == "additionalProperties" {
                    if member.is_object() {
                        without_boolean_schemas(member, true);
                    }
                } else if !matches!(key, "enum" | "const" | "default" | "examples") {
                    without_boolean_schemas(member, false);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| without_boolean_schemas(item, false)),
        _ => {}
    }
}

/// The configured authentication schemes as OpenAPI Security Scheme Objects, under the names the
/// card gives them.
fn security_schemes(config: &ServerConfig) -> Map<String, Value> {
    use accord_types::a2a::SecurityScheme;
    config
        .auth
        .security_schemes()
        .into_iter()
        .filter_map(|(name, scheme)| {
            let object = match scheme {
                SecurityScheme::HttpAuth(http) => {
                    let mut object = json!({"type": "http", "scheme": http.scheme.to_ascii_lowercase()});
                    if let Some(format) = http.bearer_format {
                        object["bearerFormat"] = format.into();
                    }
                    if let Some(description) = http.description {
                        object["description"] = description.into();
                    }
                    object
                }
                SecurityScheme::ApiKey(key) => {
                    let mut object = json!({"type": "apiKey", "in": key.location, "name": key.name});
                    if let Some(description) = key.description {
                        object["description"] = description.into();
                    }
                    object
                }
                SecurityScheme::OpenIdConnect(oidc) => {
                    json!({"type": "openIdConnect", "openIdConnectUrl": oidc.open_id_connect_url})
                }
                SecurityScheme::MutualTls(_) => json!({"type": "mutualTLS"}),
                // Not among the schemes the server verifies.
                _ => return None,
            };
            Some((name.to_owned(), object))
        })
        .collect()
}

/// Adds a skill's JSON Schema to the components as `name`, its `$defs` beside it as
/// `name.Def`, with the references rewritten: a `#/$defs/…` reference inside an OpenAPI document
/// would resolve against the document, not the schema. Titles go: they name the Rust type (an
/// input and an output of one type share it), and generators name classes after titles; the
/// component name is unique.
fn hoist(name: &str, mut schema: Value, schemas: &mut Map<String, Value>) {
    let prefix = format!("#/components/schemas/{name}.");
    if let Value::Object(object) = &mut schema {
        object.remove("$schema");
        object.remove("$id");
        object.remove("title");
        if let Some(Value::Object(defs)) = object.remove("$defs").or_else(|| object.remove("definitions")) {
            for (def, mut def_schema) in defs {
                rewrite_refs(&mut def_schema, &prefix);
                if let Value::Object(def_object) = &mut def_schema {
                    def_object.remove("title");
                }
                schemas.insert(format!("{name}.{def}"), def_schema);
            }
        }
    }
    rewrite_refs(&mut schema, &prefix);
    schemas.insert(name.to_owned(), schema);
}

fn rewrite_refs(value: &mut Value, prefix: &str) {
    match value {
        Value::Object(object) => {
            for (key, member) in object.iter_mut() {
                if key == "$ref"
                    && let Value::String(reference) = member
                {
                    if let Some(def) =
                        reference.strip_prefix("#/$defs/").or_else(|| reference.strip_prefix("#/definitions/"))
                    {
                        *reference = format!("{prefix}{def}");
                    }
                } else {
                    rewrite_refs(member, prefix);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite_refs(item, prefix)),
        _ => {}
    }
}

/// The route serving the document: generated once, with `servers` set per request to the
/// agent's base URL as the request reached it.
pub(crate) fn routes(agent: &Agent, config: &ServerConfig, served: &[Operation]) -> Routes {
    let own = describe::openapi();
    let mut operations = served.to_vec();
    operations.extend(own.iter().cloned());
    let document = Arc::new(document(agent, config, &operations));
    let handler = axum::routing::get(move |OriginalUri(uri): OriginalUri, headers: HeaderMap| {
        let document = Arc::clone(&document);
        async move { serve(&document, &headers, &uri) }
    });
    Routes::new().route(OPENAPI_PATH, handler, own)
}

fn serve(document: &Value, headers: &HeaderMap, uri: &axum::http::Uri) -> Response {
    let mut document = document.clone();
    let base = crate::card::base_url_before(headers, uri, OPENAPI_PATH);
    if let Value::Object(object) = &mut document {
        object.insert("servers".into(), json!([{ "url": base }]));
    }
    match serde_json::to_vec(&document) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "the OpenAPI document does not serialize");
            crate::card::error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal error")
        }
    }
}
