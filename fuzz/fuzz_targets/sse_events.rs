//! Event streams and their ids: the client's reading of A2A streams (JSON-RPC and HTTP+JSON
//! bindings) and Lucid streams from raw SSE bytes cut into chunks at arbitrary points, and the
//! server's reading of `Last-Event-ID`. Never a panic; how the bytes are cut never changes the
//! events read; an event id the server reads writes back to the same id, and resuming after it
//! names a valid place in the task log.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Cuts `data` into chunks at the positions named by `cuts` (each a byte, taken modulo the
/// length), as a network might deliver them.
fn chunks(data: &[u8], cuts: &[u8]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|&cut| usize::from(cut) % (data.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for point in points.into_iter().chain([data.len()]) {
        out.push(data[start..point].to_vec());
        start = point;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    // The first byte says how many of the next bytes are cut points; the rest is the stream.
    let (count, rest) = data.split_first().map_or((0, data), |(&count, rest)| (usize::from(count % 8), rest));
    let (cuts, stream) = rest.split_at(count.min(rest.len()));

    let whole = vec![stream.to_vec()];
    let pieces = chunks(stream, cuts);
    let rpc_id = Value::from(1);
    for json_rpc in [false, true] {
        let id = json_rpc.then_some(&rpc_id);
        let read = accord_client::fuzzing::a2a_stream(whole.clone(), json_rpc, id);
        assert_eq!(read, accord_client::fuzzing::a2a_stream(pieces.clone(), json_rpc, id), "chunking changed events");
    }
    let lucid = accord_client::fuzzing::lucid_stream(whole);
    assert_eq!(lucid, accord_client::fuzzing::lucid_stream(pieces), "chunking changed Lucid events");
    for event in lucid.into_iter().flatten() {
        let _ = event.envelope();
    }

    if let Ok(text) = std::str::from_utf8(stream) {
        if let Some((sequence, part)) = accord_server::fuzzing::parse_event_id(text) {
            let written = accord_server::fuzzing::format_event_id(sequence, part);
            assert_eq!(accord_server::fuzzing::parse_event_id(&written), Some((sequence, part)), "{text:?}");
        }
        if let Some((after, partial)) = accord_server::fuzzing::resume_point(text) {
            if let Some((entry, skip)) = partial {
                assert!(after <= entry && skip >= 1, "{text:?}: after {after}, entry {entry}, skip {skip}");
            }
        }
    }
});
