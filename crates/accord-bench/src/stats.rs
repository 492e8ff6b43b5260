//! Latency figures: nearest-rank percentiles over every sample, no histogram buckets.

/// The sample at quantile `q` (clamped to 0..=1) of samples sorted ascending, by nearest rank:
/// the smallest sample with at least `q·n` samples at or below it (`q = 0` gives the smallest).
/// `None` when there is no sample.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    // The 1-based rank ⌈q·n⌉, at least 1; the float product is exact for the quantiles used here.
    let rank = (q * sorted.len() as f64).ceil() as usize;
    let index = rank.clamp(1, sorted.len()) - 1;
    Some(sorted[index])
}

/// What a run's latencies come to, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub count: usize,
    /// The median.
    pub p50_us: u64,
    /// The 99th percentile.
    pub p99_us: u64,
    /// The largest sample.
    pub max_us: u64,
    /// The arithmetic mean.
    pub mean_us: f64,
}

/// Sorts the samples and summarizes them (all zero when there is none).
pub fn summarize(mut samples: Vec<u64>) -> Summary {
    if samples.is_empty() {
        return Summary::default();
    }
    samples.sort_unstable();
    let total: u128 = samples.iter().map(|&sample| u128::from(sample)).sum();
    Summary {
        count: samples.len(),
        p50_us: percentile(&samples, 0.50).unwrap_or(0),
        p99_us: percentile(&samples, 0.99).unwrap_or(0),
        max_us: samples.last().copied().unwrap_or(0),
        mean_us: total as f64 / samples.len() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_on_one_to_a_hundred() {
        let samples: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&samples, 0.50), Some(50));
        assert_eq!(percentile(&samples, 0.99), Some(99));
        assert_eq!(percentile(&samples, 1.0), Some(100));
        assert_eq!(percentile(&samples, 0.0), Some(1));
        assert_eq!(percentile(&samples, 0.001), Some(1));
        assert_eq!(percentile(&samples, 0.991), Some(100));
    }

    #[test]
    fn small_and_empty_sets() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7], 0.5), Some(7));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        // Two samples: the median is the lower one, p99 the upper one.
        assert_eq!(percentile(&[3, 9], 0.5), Some(3));
        assert_eq!(percentile(&[3, 9], 0.99), Some(9));
        // Out-of-range quantiles are clamped.
        assert_eq!(percentile(&[3, 9], 2.0), Some(9));
        assert_eq!(percentile(&[3, 9], -1.0), Some(3));
        assert_eq!(percentile(&[3, 9], f64::NAN), Some(3));
    }

    #[test]
    fn p99_of_a_thousand_is_the_990th_sample() {
        let samples: Vec<u64> = (0..1000).map(|value| value * 10).collect();
        // Rank ⌈0.99·1000⌉ = 990: the sample at index 989.
        assert_eq!(percentile(&samples, 0.99), Some(9890));
        assert_eq!(percentile(&samples, 0.50), Some(4990));
    }

    #[test]
    fn summary_sorts_its_samples_first() {
        let summary = summarize(vec![50, 10, 40, 20, 30]);
        assert_eq!(summary.count, 5);
        assert_eq!(summary.p50_us, 30);
        assert_eq!(summary.p99_us, 50);
        assert_eq!(summary.max_us, 50);
        assert!((summary.mean_us - 30.0).abs() < f64::EPSILON);
        assert_eq!(summarize(Vec::new()), Summary::default());
    }
}
