//! The route tables: each face mounts its routes through a [`Routes`], which takes every route
//! together with the operations that describe it, so a face cannot serve a route the OpenAPI
//! document does not list.

use std::sync::Arc;

use axum::Router;
use axum::http::Method;
use axum::routing::MethodRouter;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// A schema, made when the document is generated: from a Rust type, or from a JSON Schema the
/// engine holds (a skill's input or output), built with the document's generator.
#[derive(Clone)]
pub(crate) struct SchemaSource(Arc<dyn Fn(&mut SchemaGenerator) -> Value + Send + Sync>);

impl SchemaSource {
    /// The schema of `T` (a `$ref` into `components/schemas` unless `T` is inlined).
    pub(crate) fn of<T: JsonSchema>() -> Self {
        Self(Arc::new(|generator: &mut SchemaGenerator| generator.subschema_for::<T>().to_value()))
    }

    /// A schema built by `build`.
    pub(crate) fn with(build: impl Fn(&mut SchemaGenerator) -> Value + Send + Sync + 'static) -> Self {
        Self(Arc::new(build))
    }

    pub(crate) fn make(&self, generator: &mut SchemaGenerator) -> Value {
        (self.0)(generator)
    }
}

/// The schema of `T` as a value, for building schemas around it.
pub(crate) fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    generator.subschema_for::<T>().to_value()
}

/// One response of an operation.
#[derive(Clone)]
struct Answer {
    status: String,
    description: String,
    /// `(media type, schema, schema of each server-sent event's data)`.
    content: Option<(&'static str, SchemaSource, Option<SchemaSource>)>,
}

/// One documented operation: a method on a path, with its parameters, body and answers.
#[derive(Clone)]
pub(crate) struct Operation {
    method: Method,
    /// The OpenAPI path relative to the table; `None`: the route's own path.
    path: Option<String>,
    id: String,
    summary: String,
    tag: &'static str,
    parameters: Vec<(Value, Option<SchemaSource>)>,
    body: Option<(&'static str, SchemaSource)>,
    answers: Vec<Answer>,
    /// Served without authentication (`security: []`).
    public: bool,
}

impl Operation {
    /// An operation `id` (unique in the document) with a one-line summary.
    pub(crate) fn new(method: Method, id: impl Into<String>, summary: impl Into<String>) -> Self {
        Self {
            method,
            path: None,
            id: id.into(),
            summary: summary.into(),
            tag: "",
            parameters: Vec::new(),
            body: None,
            answers: Vec::new(),
            public: false,
        }
    }

    /// `GET`.
    pub(crate) fn get(id: impl Into<String>, summary: impl Into<String>) -> Self {
        Self::new(Method::GET, id, summary)
    }

    /// `POST`.
    pub(crate) fn post(id: impl Into<String>, summary: impl Into<String>) -> Self {
        Self::new(Method::POST, id, summary)
    }

    /// `DELETE`.
    pub(crate) fn delete(id: impl Into<String>, summary: impl Into<String>) -> Self {
        Self::new(Method::DELETE, id, summary)
    }

    /// The OpenAPI path, when it is not the route's (one route serving several paths: a skill
    /// per path, or `/tasks/{id}:cancel` on the route `/tasks/{id}`).
    pub(crate) fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The group the operation is listed under.
    pub(crate) fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    /// Served to anyone: no security requirement.
    pub(crate) fn public(mut self) -> Self {
        self.public = true;
        self
    }

    /// A required path parameter (a string).
    pub(crate) fn path_param(mut self, name: &str, description: &str) -> Self {
        self.parameters.push((
            json!({"name": name, "in": "path", "required": true, "description": description,
                   "schema": {"type": "string"}}),
            None,
        ));
        self
    }

    /// A header parameter (a string).
    pub(crate) fn header(mut self, name: &str, required: bool, description: &str) -> Self {
        self.parameters.push((
            json!({"name": name, "in": "header", "required": required, "description": description,
                   "schema": {"type": "string"}}),
            None,
        ));
        self
    }

    /// A query parameter with `schema`.
    pub(crate) fn query(mut self, name: &str, description: &str, schema: Value) -> Self {
        self.parameters.push((
            json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema}),
            None,
        ));
        self
    }

    /// One optional query parameter per property of `T`'s schema, except `skip` (path fields).
    pub(crate) fn query_of<T: JsonSchema>(mut self, skip: &'static [&'static str]) -> Self {
        let source = SchemaSource::with(move |generator| {
            let schema = generator.root_schema_for::<T>().to_value();
            let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let parameters: Vec<Value> = properties
                .into_iter()
                .filter(|(name, _)| !skip.contains(&name.as_str()))
                .map(|(name, mut schema)| {
                    let description = schema
                        .as_object_mut()
                        .and_then(|schema| schema.remove("description"))
                        .unwrap_or_else(|| Value::String(String::new()));
                    json!({"name": name, "in": "query", "required": false, "description": description,
                           "schema": query_schema(schema)})
                })
                .collect();
            Value::Array(parameters)
        });
        self.parameters.push((Value::Null, Some(source)));
        self
    }

    /// A JSON request body of `schema`.
    pub(crate) fn json_body(mut self, schema: SchemaSource) -> Self {
        self.body = Some(("application/json", schema));
        self
    }

    /// A JSON answer.
    pub(crate) fn json(mut self, status: u16, description: &str, schema: SchemaSource) -> Self {
        self.answers.push(Answer {
            status: status.to_string(),
            description: description.into(),
            content: Some(("application/json", schema, None)),
        });
        self
    }

    /// A text answer (a page, a script, an image) of `media` type.
    pub(crate) fn text(mut self, status: u16, description: &str, media: &'static str) -> Self {
        self.answers.push(Answer {
            status: status.to_string(),
            description: description.into(),
            content: Some((media, SchemaSource::with(|_| json!({"type": "string"})), None)),
        });
        self
    }

    /// A server-sent event stream whose events carry `data` as JSON.
    pub(crate) fn events(mut self, description: &str, data: SchemaSource) -> Self {
        let text = SchemaSource::with(|_| json!({"type": "string"}));
        self.answers.push(Answer {
            status: "200".into(),
            description: description.into(),
            content: Some(("text/event-stream", text, Some(data))),
        });
        self
    }

    /// An error answer with `status` (or `default`), its body `schema`.
    pub(crate) fn error(mut self, status: &str, description: &str, schema: SchemaSource) -> Self {
        self.answers.push(Answer {
            status: status.into(),
            description: description.into(),
            content: Some(("application/json", schema, None)),
        });
        self
    }

    /// The OpenAPI path under `prefix`.
    fn prefixed(mut self, prefix: &str, route: &str) -> Self {
        let path = self.path.take().unwrap_or_else(|| route.to_owned());
        self.path = Some(join(prefix, &path));
        self
    }

    /// The path this operation is documented at.
    pub(crate) fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("/")
    }

    /// The method, lower case as OpenAPI keys it.
    pub(crate) fn method(&self) -> String {
        self.method.as_str().to_ascii_lowercase()
    }

    /// The Operation Object.
    pub(crate) fn render(&self, generator: &mut SchemaGenerator) -> Value {
        let mut operation = Map::new();
        operation.insert("operationId".into(), self.id.clone().into());
        operation.insert("summary".into(), self.summary.clone().into());
        if !self.tag.is_empty() {
            operation.insert("tags".into(), json!([self.tag]));
        }
        let mut parameters = Vec::new();
        for (parameter, source) in &self.parameters {
            match source {
                Some(source) => {
                    if let Value::Array(made) = source.make(generator) {
                        parameters.extend(made);
                    }
                }
                None => parameters.push(parameter.clone()),
            }
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some((media, schema)) = &self.body {
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {*media: {"schema": schema.make(generator)}}}),
            );
        }
        let mut responses = Map::new();
        for answer in &self.answers {
            let mut response = Map::new();
            response.insert("description".into(), answer.description.clone().into());
            if let Some((media, schema, events)) = &answer.content {
                let mut content = Map::new();
                content.insert("schema".into(), schema.make(generator));
                if let Some(events) = events {
                    // OpenAPI 3.1 has no keyword for an event's data; this extension names it.
                    content.insert("x-event-data".into(), events.make(generator));
                }
                response.insert("content".into(), json!({*media: content}));
            }
            responses.insert(answer.status.clone(), Value::Object(response));
        }
        operation.insert("responses".into(), Value::Object(responses));
        if self.public {
            operation.insert("security".into(), json!([]));
        }
        Value::Object(operation)
    }
}

/// A query parameter's schema: an optional field's schema without its `null` branch (a query
/// parameter is absent, never `null`).
fn query_schema(schema: Value) -> Value {
    match schema {
        Value::Object(mut object) => {
            if let Some(Value::Array(types)) = object.get("type") {
                let types: Vec<Value> = types.iter().filter(|kind| *kind != "null").cloned().collect();
                let kind = if types.len() == 1 { types[0].clone() } else { Value::Array(types) };
                object.insert("type".into(), kind);
            }
            Value::Object(object)
        }
        other => other,
    }
}

fn join(prefix: &str, path: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if path == "/" && !prefix.is_empty() { prefix.to_owned() } else { format!("{prefix}{path}") }
}

/// A face's routes and the operations that describe them, kept together: every route is added
/// with its operations, and every change of the router (nesting, layers) keeps them in step.
#[derive(Clone, Default)]
pub(crate) struct Routes {
    router: Router,
    operations: Vec<Operation>,
}

impl Routes {
    /// No route.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Serves `handler` at `path` (axum syntax), documented by `operations`: the route's own
    /// path unless an operation says where ([`Operation::at`]).
    pub(crate) fn route(mut self, path: &str, handler: MethodRouter, operations: Vec<Operation>) -> Self {
        self.router = self.router.route(path, handler);
        self.operations.extend(operations.into_iter().map(|operation| operation.prefixed("", path)));
        self
    }

    /// Serves `router` (an endpoint answering at its root), documented by `operations`.
    pub(crate) fn endpoint(mut self, router: Router, operations: Vec<Operation>) -> Self {
        self.router = self.router.merge(router);
        self.operations.extend(operations.into_iter().map(|operation| operation.prefixed("", "/")));
        self
    }

    /// These routes under `prefix`.
    pub(crate) fn nest(self, prefix: &str) -> Self {
        Self {
            router: Router::new().nest(prefix, self.router),
            operations: self.operations.into_iter().map(|operation| operation.prefixed(prefix, "/")).collect(),
        }
    }

    /// Both route sets.
    pub(crate) fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.operations.extend(other.operations);
        self
    }

    /// The router changed by `change` (layers), the same routes.
    pub(crate) fn map_router(mut self, change: impl FnOnce(Router) -> Router) -> Self {
        self.router = change(self.router);
        self
    }

    /// Renames the operations for a second mount of the same routes (the tenant-prefixed forms).
    pub(crate) fn rename_operations(mut self, rename: impl Fn(&str) -> String) -> Self {
        for operation in &mut self.operations {
            operation.id = rename(&operation.id);
        }
        self
    }

    /// Adds a parameter to every operation (a path parameter of a prefix).
    pub(crate) fn with_path_param(mut self, name: &str, description: &str) -> Self {
        self.operations =
            self.operations.into_iter().map(|operation| operation.path_param(name, description)).collect();
        self
    }

    /// The router.
    pub(crate) fn into_router(self) -> Router {
        self.router
    }

    /// The operations.
    pub(crate) fn operations(&self) -> &[Operation] {
        &self.operations
    }
}

/// The schema of a `Schema` value built by hand, for the few bodies no type describes.
pub(crate) fn inline(schema: Value) -> SchemaSource {
    SchemaSource::with(move |_| schema.clone())
}
