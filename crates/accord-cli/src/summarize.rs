//! A small extractive summarizer: sentences are scored by how many of the text's frequent
//! content words they carry, and the best ones are returned in their original order.
//!
//! No model and no network: it is a demo skill whose answers are real and repeatable.

use std::collections::HashMap;

/// Words too common to say anything about a sentence's topic.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "may", "more", "most", "my", "no", "not", "of", "on", "one", "only", "or",
    "other", "our", "out", "over", "she", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "too", "up", "very", "was", "we", "were", "what", "when", "which",
    "while", "who", "will", "with", "would", "you", "your",
];

/// Splits text into sentences at `.`, `!` or `?` followed by whitespace or the end.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, ch)) = chars.next() {
        if matches!(ch, '.' | '!' | '?') {
            let at_boundary = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
            if at_boundary {
                let end = index + ch.len_utf8();
                let sentence = text[start..end].trim();
                if !sentence.is_empty() {
                    out.push(sentence);
                }
                start = end;
            }
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

fn words(sentence: &str) -> impl Iterator<Item = String> + '_ {
    sentence
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|word| word.trim_matches('\'').to_lowercase())
        .filter(|word| !word.is_empty() && !STOPWORDS.contains(&word.as_str()))
}

/// The `count` best sentences of `text`, in their original order, joined by spaces.
pub fn summarize(text: &str, count: usize) -> String {
    let all = sentences(text);
    if all.len() <= count {
        return all.join(" ");
    }
    let mut frequency: HashMap<String, usize> = HashMap::new();
    for sentence in &all {
        for word in words(sentence) {
            *frequency.entry(word).or_default() += 1;
        }
    }
    let top = frequency.values().copied().max().unwrap_or(1) as f64;
    let mut scored: Vec<(usize, f64)> = all
        .iter()
        .enumerate()
        .map(|(index, sentence)| {
            let content: Vec<String> = words(sentence).collect();
            let total: f64 = content.iter().map(|word| frequency[word] as f64 / top).sum();
            // Dividing by the square root favours sentences dense in topic words without
            // letting long sentences win on length alone.
            let score = if content.is_empty() { 0.0 } else { total / (content.len() as f64).sqrt() };
            (index, score)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<usize> = scored.iter().take(count).map(|(index, _)| *index).collect();
    chosen.sort_unstable();
    chosen.iter().map(|&index| all[index]).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_but_not_decimals() {
        assert_eq!(sentences("Pi is 3.14 today. Really? Yes!"), vec!["Pi is 3.14 today.", "Really?", "Yes!"]);
        assert_eq!(sentences("no end"), vec!["no end"]);
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn keeps_the_sentences_about_the_topic_in_order() {
        let text = "Rust is a systems language. The weather was nice on Tuesday. \
                    Rust gives memory safety without a garbage collector. Lunch was soup. \
                    Many teams adopt Rust for safety and speed.";
        let summary = summarize(text, 2);
        assert_eq!(
            summary,
            "Rust gives memory safety without a garbage collector. Many teams adopt Rust for safety and speed."
        );
        assert_eq!(summarize("One. Two.", 5), "One. Two.");
    }
}
