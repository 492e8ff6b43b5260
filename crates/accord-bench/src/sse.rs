//! A small incremental parser for `text/event-stream` bodies: bytes in as they arrive, whole
//! events out.

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

/// Parses a stream fed in arbitrary chunks.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buffer[start..].iter().position(|&byte| byte == b'\n') {
            let end = start + offset;
            let line = &self.buffer[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        events
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            // A blank line ends an event; one without data is not dispatched.
            let event = std::mem::take(&mut self.current);
            let had_data = std::mem::take(&mut self.has_data);
            return had_data.then_some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_owned()),
            "id" => self.current.id = Some(value.to_owned()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut parser = Parser::new();
        assert!(parser.push(b"id: 1\r\nevent: status").is_empty());
        let events = parser.push(b"Update\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: keep-alive\n\ndata: x\n");
        assert_eq!(
            events,
            vec![Event { event: Some("statusUpdate".into()), id: Some("1".into()), data: "{\"a\":\n1}".into() }]
        );
        assert_eq!(parser.push(b"\n"), vec![Event { event: None, id: None, data: "x".into() }]);
    }
}
