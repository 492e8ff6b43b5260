//! The backends a skill or an MCP server is reached through: `http` (an endpoint) and
//! `command` (a program and its environment).

use std::path::{Path, PathBuf};

use reqwest::header::HeaderName;
use serde_json::Value as Json;
use toml::Value;

use super::reader::{Fields, Reader, kind};
use crate::command::CommandConfig;
use crate::http::{HttpConfig, HttpMethod, RESERVED_HEADERS};
use crate::secret::Secret;

impl Reader<'_> {
    pub(super) fn http(&mut self, value: &Value, path: &str) -> Option<HttpConfig> {
        self.http_endpoint(value, path, None)
    }

    /// A `[[skill]]`'s `http`: beside what every HTTP endpoint takes, a `method` and a URL whose
    /// path may hold `{name}` variables, each a property of the input schema when there is one.
    pub(super) fn skill_http(&mut self, value: &Value, path: &str, input_schema: Option<&Json>) -> Option<HttpConfig> {
        self.http_endpoint(value, path, Some(SkillHttp { input_schema }))
    }

    fn http_endpoint(&mut self, value: &Value, path: &str, skill: Option<SkillHttp<'_>>) -> Option<HttpConfig> {
        let Value::Table(table) = value else {
            self.error(path, format!("expected a table such as {{ url = \"http://...\" }}, found {}", kind(value)));
            return None;
        };
        let before = self.errors.len();
        let mut fields = Fields::new(table, path);
        let url = self.string(&mut fields, "url");
        if url.is_none() && !table.contains_key("url") {
            self.error(fields.key("url"), "missing");
        }
        let url_key = fields.key("url");
        let (url, template) = match (&skill, url) {
            // A skill's URL may be a path template; it is checked as a URL like any other.
            (Some(skill), Some(text)) => match HttpConfig::from_template(&text) {
                Ok(template) => {
                    // The URL's checks, on the URL with its variables standing as letters.
                    let url = self.url(&template_free(&text), &url_key);
                    for name in template.path_variables() {
                        if let Some(schema) = skill.input_schema
                            && !schema.get("properties").and_then(Json::as_object).is_some_and(|p| p.contains_key(name))
                        {
                            self.error(
                                &url_key,
                                format!("the path variable `{{{name}}}` is not a property of the skill's input schema"),
                            );
                        }
                    }
                    (url, Some(template))
                }
                Err(error) => {
                    self.error(&url_key, error.to_string());
                    (None, None)
                }
            },
            (None, Some(text)) => (self.url(&text, &url_key), None),
            (_, None) => (None, None),
        };
        let method = match &skill {
            Some(_) => match fields.get("method") {
                None => HttpMethod::Post,
                Some(Value::String(name)) => HttpMethod::from_name(name).unwrap_or_else(|| {
                    self.error(fields.key("method"), "expected GET, POST, PUT, PATCH or DELETE");
                    HttpMethod::Post
                }),
                Some(other) => {
                    self.error(
                        fields.key("method"),
                        format!("expected a string such as \"GET\", found {}", kind(other)),
                    );
                    HttpMethod::Post
                }
            },
            None => HttpMethod::Post,
        };
        let mut headers = Vec::new();
        if let Some(table) = self.table(&mut fields, "headers") {
            for (name, value) in table {
                let key = format!("{}.{name}", fields.key("headers"));
                let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                    self.error(key, "not a valid header name");
                    continue;
                };
                if RESERVED_HEADERS.contains(&header.as_str()) {
                    self.error(key, "this header is set by Accord");
                    continue;
                }
                match value {
                    // The value is not repeated: it may be an expanded secret.
                    Value::String(text) if reqwest::header::HeaderValue::from_str(text).is_ok() => {
                        headers.push((header, Secret::new(text.clone())));
                    }
                    Value::String(_) => self.error(key, "not a valid header value (control characters?)"),
                    other => self.error(key, format!("expected a string, found {}", kind(other))),
                }
            }
        }
        let timeout = self.duration(&mut fields, "timeout");
        let concurrency = self.positive(&mut fields, "concurrency");
        let max_answer_bytes = self.positive(&mut fields, "max_answer_bytes");
        self.finish(fields);
        if self.errors.len() > before {
            return None;
        }
        let url = url?;
        let mut config = match template {
            Some(template) => template,
            None => HttpConfig::new(url),
        }
        .method(method)
        .concurrency(concurrency);
        for (name, value) in headers {
            config = config.header(name, value);
        }
        if let Some(timeout) = timeout {
            config = config.timeout(timeout);
        }
        if let Some(bytes) = max_answer_bytes {
            config = config.max_answer_bytes(bytes);
        }
        Some(config)
    }

    pub(super) fn command(&mut self, value: &Value, path: &str) -> Option<CommandConfig> {
        let before = self.errors.len();
        let (argv, argv_path, mut options) = match value {
            Value::Array(_) => (self.strings(value, path), path.to_owned(), None),
            Value::Table(table) => {
                let mut fields = Fields::new(table, path);
                let argv_path = fields.key("argv");
                let argv = match fields.get("argv") {
                    Some(argv) => self.strings(argv, &argv_path),
                    None => {
                        self.error(&argv_path, "missing");
                        None
                    }
                };
                (argv, argv_path, Some(fields))
            }
            other => {
                self.error(path, format!("expected an array (argv) or a table with `argv`, found {}", kind(other)));
                return None;
            }
        };
        let argv = argv.unwrap_or_default();
        if argv.is_empty() && self.errors.len() == before {
            self.error(&argv_path, "must name a program");
        }

        // The child's environment: PATH, the variables allowed through, then the ones set here.
        let mut env: Vec<(String, Secret)> = Vec::new();
        if let Some(path_var) = (self.env)("PATH") {
            env.push(("PATH".into(), Secret::new(path_var)));
        }
        let mut cwd = self.base_dir.clone();
        let (mut timeout, mut grace, mut concurrency, mut max_output_bytes) = (None, None, None, None);
        if let Some(fields) = &mut options {
            if let Some(dir) = self.string(fields, "cwd") {
                let dir = self.base_dir.join(dir);
                if dir.is_dir() {
                    cwd = dir;
                } else {
                    self.error(fields.key("cwd"), format!("{} is not a directory", dir.display()));
                }
            }
            if let Some(names) = fields.get("env") {
                let key = fields.key("env");
                for (index, name) in self.strings(names, &key).unwrap_or_default().into_iter().enumerate() {
                    if !is_variable_name(&name) {
                        self.error(format!("{key}[{index}]"), "not a variable name");
                    } else if let Some(value) = (self.env)(&name) {
                        // A variable that is not set is simply not passed.
                        env.push((name, Secret::new(value)));
                    }
                }
            }
            if let Some(table) = self.table(fields, "env_set") {
                for (name, value) in table {
                    let key = format!("{}.{name}", fields.key("env_set"));
                    match value {
                        _ if !is_variable_name(name) => self.error(key, "not a variable name"),
                        Value::String(text) => env.push((name.clone(), Secret::new(text.clone()))),
                        other => self.error(key, format!("expected a string, found {}", kind(other))),
                    }
                }
            }
            timeout = self.duration(fields, "timeout");
            grace = self.duration(fields, "grace");
            concurrency = self.positive(fields, "concurrency");
            max_output_bytes = self.positive(fields, "max_output_bytes");
        }
        if let Some(fields) = options {
            self.finish(fields);
        }
        if self.errors.len() > before {
            return None;
        }
        let program = self.program(&argv[0], &cwd, &env, &format!("{argv_path}[0]"))?;
        let mut config = CommandConfig::new(program).args(argv[1..].iter().cloned()).cwd(cwd);
        for (name, value) in env {
            config = config.env(name, value);
        }
        if let Some(timeout) = timeout {
            config = config.timeout(timeout);
        }
        if let Some(grace) = grace {
            config = config.grace(grace);
        }
        if concurrency.is_some() {
            config = config.concurrency(concurrency);
        }
        if let Some(bytes) = max_output_bytes {
            config = config.max_output_bytes(bytes);
        }
        Some(config)
    }

    /// The program to run: a name looked up on `PATH`, or a path (relative to the command's
    /// working directory) to an executable file.
    fn program(&mut self, program: &str, cwd: &Path, env: &[(String, Secret)], path: &str) -> Option<PathBuf> {
        if program.contains('/') {
            let candidate = cwd.join(program);
            if is_executable(&candidate) {
                return Some(candidate);
            }
            self.error(path, format!("{} is not an executable file", candidate.display()));
            return None;
        }
        let search = env.iter().rev().find(|(name, _)| name == "PATH").map(|(_, value)| value.expose().to_owned());
        let found = search.as_deref().and_then(|search| {
            std::env::split_paths(search)
                .map(|dir| cwd.join(dir).join(program))
                .find(|candidate| is_executable(candidate))
        });
        if found.is_none() {
            self.error(path, format!("program {program:?} is not found on PATH"));
        }
        found
    }
}

/// What a `[[skill]]`'s `http` knows beyond an endpoint's keys.
struct SkillHttp<'s> {
    /// The input schema, when the file gives one.
    input_schema: Option<&'s Json>,
}

/// A template URL with each `{name}` as plain letters, for the checks of a URL.
fn template_free(text: &str) -> String {
    text.replace(['{', '}'], "")
}

/// A name a variable of a child's environment may have.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else { return false };
    if !metadata.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}
