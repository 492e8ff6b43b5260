//! The JSON-RPC tasks dialect (`tasks/send`, `tasks/get`, `tasks/cancel`, `tasks/sendSubscribe`):
//! the keys its params carry and the patterns they must match, the params themselves, and the task
//! view and update its methods answer with. The face and the client both read and write these, so
//! the dialect's rules are written here once.
//!
//! The dialect's skill pattern (`^[a-zA-Z][a-zA-Z0-9._-]{0,63}$`) is narrower than the engine's
//! skill keys (1–128 characters, which may start with a digit): a skill whose key falls outside it
//! is served by the other faces and refused by name here, as the dialect's peers expect.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The pattern a skill key matches, as the dialect's errors quote it.
pub const SKILL_PATTERN: &str = "/^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/";

/// The pattern a task id matches, as the dialect's errors quote it.
pub const TASK_ID_PATTERN: &str = "/^[A-Za-z0-9_-]{1,64}$/";

/// A skill key of this dialect: 1–64 characters, a letter first, then letters, digits, `.`, `_`
/// or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SkillKey(String);

impl SkillKey {
    /// The key, when `text` matches [`SKILL_PATTERN`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text).then(|| Self(text.to_owned()))
    }

    /// Whether `text` matches [`SKILL_PATTERN`].
    pub fn is_valid(text: &str) -> bool {
        let bytes = text.as_bytes();
        (1..=64).contains(&bytes.len())
            && bytes[0].is_ascii_alphabetic()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SkillKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SkillKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("skill must match {SKILL_PATTERN}")))
    }
}

/// A task id of this dialect: 1–64 letters, digits, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct TaskRef(String);

impl TaskRef {
    /// The id, when `text` matches [`TASK_ID_PATTERN`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::is_valid(text).then(|| Self(text.to_owned()))
    }

    /// Whether `text` matches [`TASK_ID_PATTERN`].
    pub fn is_valid(text: &str) -> bool {
        (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id, owned.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The params of `tasks/get` and `tasks/cancel` for `method`, read as the dialect reads them:
    /// the error is the `-32602` message the face answers with.
    pub fn from_params(method: &str, params: &Value) -> Result<Self, String> {
        let Some(params) = params.as_object() else { return Err(format!("{method}: params must be an object")) };
        params
            .get("taskId")
            .and_then(Value::as_str)
            .and_then(Self::parse)
            .ok_or_else(|| format!("{method}: params.taskId must match {TASK_ID_PATTERN}"))
    }

    /// These params (`{"taskId": …}`).
    pub fn to_params(&self) -> Value {
        serde_json::json!({ "taskId": self.0 })
    }
}

impl std::fmt::Display for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("taskId must match {TASK_ID_PATTERN}")))
    }
}

/// The task of a `tasks/send` or `tasks/sendSubscribe`: a skill and its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The skill key.
    pub skill: SkillKey,
    /// The input (an object; `{}` when the caller sent none, and not written when empty).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
}

impl TaskSpec {
    /// The params of `tasks/send` and `tasks/sendSubscribe` for `method`, read as the dialect
    /// reads them: the error is the `-32602` message the face answers with.
    pub fn from_params(method: &str, params: &Value) -> Result<Self, String> {
        let Some(params) = params.as_object() else { return Err(format!("{method}: params must be an object")) };
        let task = params
            .get("task")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{method}: params.task must be a non-null object"))?;
        let skill = task
            .get("skill")
            .and_then(Value::as_str)
            .and_then(SkillKey::parse)
            .ok_or_else(|| format!("{method}: params.task.skill must match {SKILL_PATTERN}"))?;
        let input = match task.get("input") {
            None => Map::new(),
            Some(Value::Object(input)) => input.clone(),
            Some(_) => return Err(format!("{method}: params.task.input must be a non-null object")),
        };
        Ok(Self { skill, input })
    }

    /// These params (`{"task": {"skill", "input"}}`).
    pub fn to_params(&self) -> Value {
        serde_json::json!({ "task": self })
    }
}

/// Why a task ended without a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// A stable code.
    pub code: String,
    /// What happened.
    pub message: String,
}

/// What `tasks/send`, `tasks/get` and `tasks/cancel` answer: `{taskId, status, contextId?,
/// result?, error?}`, with the engine's state names (`submitted`, `working`, …). `result` is there
/// when the task completed, `error` when it failed or was rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// The task's id.
    pub task_id: String,
    /// Its state.
    pub status: String,
    /// Its context, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Its result, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Its error, once failed or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskFailure>,
}

/// One update of a `tasks/sendSubscribe` stream: the task log entry `sequence` of `taskId`, as
/// `event` (`status`, `result`, `error`, `artifact`, `message`; `other` for what this dialect does
/// not name), with the members that kind carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdate {
    /// The task's id.
    pub task_id: String,
    /// The log entry's sequence number.
    pub sequence: u64,
    /// What kind of entry it is.
    pub event: String,
    /// The state the task is in after it (`status`, `result`, `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The result (`result`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskFailure>,
    /// The artifact (`artifact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Value>,
    /// Whether the artifact's parts append to an earlier chunk (`artifact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// Whether it is the artifact's last chunk (`artifact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// The message (`message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
}

impl TaskUpdate {
    /// An update of `kind` with no member beyond the id and sequence.
    pub fn new(task_id: impl Into<String>, sequence: u64, event: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            sequence,
            event: event.into(),
            status: None,
            result: None,
            error: None,
            artifact: None,
            append: None,
            last_chunk: None,
            message: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_follow_the_dialects_patterns() {
        for good in ["a", "echo", "Echo.v2_beta-1", &"a".repeat(64)] {
            assert!(SkillKey::is_valid(good), "{good}");
        }
        for bad in ["", "1echo", "_echo", "ec ho", "ec/ho", &"a".repeat(65), "ékho"] {
            assert!(!SkillKey::is_valid(bad), "{bad}");
        }
        for good in ["t", "0", "abc-DEF_123", &"9".repeat(64)] {
            assert!(TaskRef::is_valid(good), "{good}");
        }
        for bad in ["", "a.b", "a b", "../x", &"a".repeat(65)] {
            assert!(!TaskRef::is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn params_read_as_the_dialect_reads_them() {
        let spec = TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "echo"}})).expect("spec");
        assert_eq!(spec.skill.as_str(), "echo");
        assert!(spec.input.is_empty(), "no input is an empty object");
        assert_eq!(spec.to_params(), json!({"task": {"skill": "echo"}}));
        assert_eq!(
            TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "1x"}})),
            Err("tasks/send: params.task.skill must match /^[a-zA-Z][a-zA-Z0-9._-]{0,63}$/".into())
        );
        assert_eq!(
            TaskSpec::from_params("tasks/send", &json!({"task": {"skill": "x", "input": [1]}})),
            Err("tasks/send: params.task.input must be a non-null object".into())
        );
        assert_eq!(
            TaskSpec::from_params("tasks/sendSubscribe", &json!({"task": null})),
            Err("tasks/sendSubscribe: params.task must be a non-null object".into())
        );
        assert_eq!(TaskSpec::from_params("tasks/send", &json!([])), Err("tasks/send: params must be an object".into()));
        assert_eq!(TaskRef::from_params("tasks/get", &json!({"taskId": "t-1"})).expect("ref").as_str(), "t-1");
        assert_eq!(
            TaskRef::from_params("tasks/cancel", &json!({"taskId": "../x"})),
            Err("tasks/cancel: params.taskId must match /^[A-Za-z0-9_-]{1,64}$/".into())
        );
        assert!(serde_json::from_value::<TaskSpec>(json!({"skill": "9x"})).is_err(), "serde checks the key too");
    }

    #[test]
    fn views_omit_what_they_do_not_have() {
        let view = TaskView {
            task_id: "t".into(),
            status: "completed".into(),
            context_id: None,
            result: Some(json!({"output": 1})),
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&view).expect("json"),
            json!({"taskId": "t", "status": "completed", "result": {"output": 1}})
        );
        let mut update = TaskUpdate::new("t", 3, "artifact");
        update.append = Some(false);
        update.last_chunk = Some(true);
        assert_eq!(
            serde_json::to_value(&update).expect("json"),
            json!({"taskId": "t", "sequence": 3, "event": "artifact", "append": false, "lastChunk": true})
        );
    }
}
