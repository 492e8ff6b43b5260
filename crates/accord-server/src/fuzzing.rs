//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): thin wrappers over the
//! server's own parsers of untrusted input, so a target drives exactly the code a request
//! reaches. Not a stable API; nothing else may use it.

use serde_json::Value;

use crate::LucidError;

/// Reads a Lucid invoke/stream/task body the way the Lucid face does: JSON (an all-whitespace
/// body is `{}`), then the profile's input rule (`{"input": X}` means X).
pub fn lucid_input(body: &[u8]) -> Result<Value, LucidError> {
    crate::lucid::body::parse_json(body).map(|payload| crate::lucid::extract_input(&payload))
}

/// Reads a `Last-Event-ID` header value as the A2A stream routes do (`N` or `N:k`), returning
/// the sequence and the part, or `None` when it is not one.
pub fn parse_event_id(text: &str) -> Option<(u64, Option<usize>)> {
    crate::a2a::EventId::parse(text).map(|id| (id.sequence, id.part))
}

/// Writes an event id as the A2A stream routes send it in the SSE `id` field.
pub fn format_event_id(sequence: u64, part: Option<usize>) -> String {
    crate::a2a::EventId { sequence, part }.to_string()
}

/// Where a subscription resuming after the `Last-Event-ID` `text` starts: the log sequence to
/// read after, and the entry whose first events are skipped with how many; `None` when `text`
/// is not an event id.
pub fn resume_point(text: &str) -> Option<(u64, Option<(u64, usize)>)> {
    crate::a2a::EventId::parse(text).map(crate::a2a::EventId::resume_point)
}
