//! Sign and verify per algorithm, and RFC 8785 canonicalization throughput.
//!
//! Run with: `cargo bench -p accord-card` (add `-- verify` etc. to filter). SLH-DSA signing takes
//! about a second per signature, so its group uses criterion's minimum sample count.

use std::hint::black_box;
use std::time::Duration;

use accord_card::{
    Algorithm, CardOptions, PrivateKey, SignOptions, VerifyOptions, canonicalize, create_card, sign_card, verify_card,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

fn card() -> accord_card::Card {
    create_card(
        CardOptions::new("agent.example.com", "ops-bot-1")
            .capability("chat.respond")
            .capability("tool.search")
            .endpoint("https://agent.example.com/a2a/v1")
            .metadata(json!({"owner": "ops", "tier": 2})),
    )
    .expect("card")
}

fn sign_and_verify(c: &mut Criterion) {
    let card = card();
    for algorithm in Algorithm::ALL {
        let key = PrivateKey::generate(algorithm).expect("key");
        let public = key.public_key();
        let public_pem = public.to_pem().expect("pem");
        let envelope = sign_card(&card, &key, &SignOptions::new()).expect("sign").to_value();
        let options = VerifyOptions::new();

        let mut group = c.benchmark_group(algorithm.name());
        if algorithm == Algorithm::SlhDsaShake256f {
            group.sample_size(10).measurement_time(Duration::from_secs(15));
        }
        group.throughput(Throughput::Elements(1));
        group.bench_function("sign_card", |b| b.iter(|| sign_card(black_box(&card), &key, &SignOptions::new())));
        group.bench_function("verify_card (key read)", |b| {
            b.iter(|| assert!(verify_card(black_box(&envelope), &public, &options).valid));
        });
        group.bench_function("verify_card (PEM each time)", |b| {
            b.iter(|| assert!(verify_card(black_box(&envelope), public_pem.as_str(), &options).valid));
        });
        group.finish();
    }
}

/// A JSON document of about `members` objects with strings, numbers and nesting.
fn document(members: usize) -> Vec<u8> {
    let items: Vec<Value> = (0..members)
        .map(|i| {
            json!({
                "id": format!("skill-{i}"), "score": i as f64 / 7.0, "count": i * 1_000_003,
                "tags": ["a", "é", "😀"], "nested": {"z": null, "a": true, "m": [1.5e-7, 1e21]}
            })
        })
        .collect();
    serde_json::to_vec_pretty(&json!({"items": items, "issuer": "agent.example.com"})).expect("json")
}

fn canonicalization(c: &mut Criterion) {
    let mut group = c.benchmark_group("canonicalize");
    for (name, members) in [("card-sized", 2), ("64KiB", 240)] {
        let input = document(members);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name} ({} bytes)", input.len()), |b| b.iter(|| canonicalize(black_box(&input))));
    }
    group.finish();
}

criterion_group!(benches, canonicalization, sign_and_verify);
criterion_main!(benches);
