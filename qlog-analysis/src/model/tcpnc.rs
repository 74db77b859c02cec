//! Sundararajan, Shah, Médard, Mitzenmacher, Barros, "Network coding meets
//! TCP" (IEEE INFOCOM 2009), Section VI-B: the ideal case.
//!
//! A chain of erasure links in slotted time: the source (node 0) gets
//! Bernoulli(`lambda`) packets a slot; link `i` carries node `i`'s random
//! linear combination to node `i + 1` with probability `mu_i` (ON); the
//! last link (`i = N - 1`) reaches the sink. Every node re-encodes and
//! drops a packet once it learns that the sink has seen it. Load factors
//! `rho_i = lambda / mu_i`.

use super::{finite, positive, ModelError, Result};

fn check(lambda: f64, mu: &[f64]) -> Result<()> {
    positive(lambda, "lambda must be finite and > 0")?;
    if mu.is_empty() {
        return Err(ModelError::InvalidParameter("at least one link is needed"));
    }
    for &m in mu {
        if !(m.is_finite() && m > 0.0 && m <= 1.0) {
            return Err(ModelError::InvalidParameter("each mu must be in (0, 1]"));
        }
        if lambda >= m {
            return Err(ModelError::OutOfDomain(
                "lambda >= mu on some link: the queues are not stable",
            ));
        }
    }
    Ok(())
}

/// Expected steady-state queue size at each node `k = 0..N-1`, Theorem 2
/// (as printed):
///
/// `E[Q_k] = sum_{i=k}^{N-1} rho_i (1 - mu_i) / (1 - rho_i)
///         + sum_{i=1}^{k-1} rho_i`.
///
/// `mu[i]` is the ON probability of the link from node `i` to `i + 1`.
/// Needs `lambda < mu_i` for every link (stability).
pub fn expected_queue_sizes(lambda: f64, mu: &[f64]) -> Result<Vec<f64>> {
    check(lambda, mu)?;
    let rho = |i: usize| lambda / mu[i];
    let n = mu.len();
    // Suffix sums of the first term, prefix sums of the second.
    let mut tail = vec![0.0; n + 1];
    for i in (0..n).rev() {
        tail[i] = tail[i + 1] + rho(i) * (1.0 - mu[i]) / (1.0 - rho(i));
    }
    let mut out = Vec::with_capacity(n);
    let mut feed = 0.0; // sum_{i=1}^{k-1} rho_i
    for (k, t) in tail.iter().take(n).enumerate() {
        if k >= 2 {
            feed += rho(k - 1);
        }
        out.push(finite(t + feed, "queue size")?);
    }
    Ok(out)
}

/// Expected time a packet spends at each node (slots), from the proof of
/// Theorem 2: the waits for each downstream node to see it,
/// `sum_{i=k}^{N-1} (1 - mu_i) / (mu_i (1 - rho_i))` (Geom/Geom/1 virtual
/// queues), plus the feed-forward of the sink's ACK,
/// `sum_{i=1}^{k-1} 1 / mu_i`.
pub fn sojourn_times(lambda: f64, mu: &[f64]) -> Result<Vec<f64>> {
    check(lambda, mu)?;
    let n = mu.len();
    (0..n)
        .map(|k| {
            let wait: f64 = (k..n)
                .map(|i| (1.0 - mu[i]) / (mu[i] * (1.0 - lambda / mu[i])))
                .sum();
            let ack: f64 = (1..k).map(|i| 1.0 / mu[i]).sum();
            finite(wait + ack, "sojourn time")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The theorem is Little's law on the proof's sojourn times:
    /// E[Q_k] = lambda T_k, computed independently.
    #[test]
    fn theorem_2_is_littles_law_on_the_proof() {
        let mu = [0.9, 0.7, 0.95, 0.8, 0.85];
        let lambda = 0.6;
        let q = expected_queue_sizes(lambda, &mu).unwrap();
        let t = sojourn_times(lambda, &mu).unwrap();
        for k in 0..mu.len() {
            assert!((q[k] - lambda * t[k]).abs() < 1e-12, "node {k}");
        }
    }

    /// One link: the source queue is the Geom/Geom/1 virtual queue of
    /// "ARQ for network coding", lambda (1-mu) / (mu (1-rho)).
    #[test]
    fn single_link_is_the_virtual_queue() {
        let (lambda, mu) = (0.5, 0.8);
        let q = expected_queue_sizes(lambda, &[mu]).unwrap();
        let rho: f64 = lambda / mu;
        assert!((q[0] - rho * (1.0 - mu) / (1.0 - rho)).abs() < 1e-15);
        assert!((q[0] - 0.5 * 0.2 / (0.8 * 0.375)).abs() < 1e-15);
    }

    /// Section VI-B: with equal rho_i and heavy traffic (rho -> 1) queues
    /// are longer near the source than near the sink.
    #[test]
    fn heavy_traffic_queues_are_longer_near_the_source() {
        let mu = [0.8; 6];
        let q = expected_queue_sizes(0.799, &mu).unwrap();
        for k in 1..q.len() {
            assert!(q[k] < q[k - 1], "{q:?}");
        }
        // Light traffic does not have this order everywhere: the ACK
        // feed-forward term grows with k.
        let light = expected_queue_sizes(0.1, &[1.0; 4]).unwrap();
        assert_eq!(light, vec![0.0, 0.0, 0.1, 0.2]);
    }

    /// Theorem 2's condition: lambda < mu_k for all k.
    #[test]
    fn unstable_or_bad_inputs_are_errors() {
        assert!(expected_queue_sizes(0.8, &[0.9, 0.8]).is_err());
        assert!(expected_queue_sizes(0.5, &[]).is_err());
        assert!(expected_queue_sizes(0.0, &[0.9]).is_err());
        assert!(expected_queue_sizes(f64::NAN, &[0.9]).is_err());
        assert!(expected_queue_sizes(0.5, &[1.2]).is_err());
        assert!(sojourn_times(0.5, &[f64::NAN]).is_err());
    }
}
