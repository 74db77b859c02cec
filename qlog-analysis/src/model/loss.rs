//! Loss helpers shared by the papers: the end-to-end erasure rate of a
//! path of independent lossy hops, and the least redundancy that
//! compensates it.

use super::{positive, probability, ModelError, Result};

/// End-to-end erasure probability of `hops` links that each erase a packet
/// independently with probability `link_loss`: `p = 1 - (1 - q)^hops`
/// (Kim et al. Section 7; Sundararajan et al. Section VI-A).
pub fn path_loss(link_loss: f64, hops: u32) -> Result<f64> {
    let q = probability(link_loss, "link_loss must be in [0, 1]")?;
    if hops == 0 {
        return Err(ModelError::InvalidParameter("hops must be at least 1"));
    }
    Ok(1.0 - (1.0 - q).powf(f64::from(hops)))
}

/// The least redundancy factor that masks random erasures of probability
/// `p`: `R = 1/(1 - p)` coded packets per packet (Kim et al. Section 6.2.1,
/// TCP/NC Section III-B, FNC Section 2.2). `p` must be below 1.
pub fn min_redundancy(p: f64) -> Result<f64> {
    let p = probability(p, "p must be in [0, 1]")?;
    positive(1.0 - p, "p must be below 1").map(|q| 1.0 / q)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kim Section 7.1: q = 0.005, 0.015, 0.025, 0.05 per link over four
    /// links give the p column of Table 1 (printed to 4 decimals).
    #[test]
    fn kim_table_1_loss_rates() {
        for (q, printed) in [
            (0.005, 0.0199),
            (0.015, 0.0587),
            (0.025, 0.0963),
            (0.05, 0.1855),
        ] {
            let p = path_loss(q, 4).unwrap();
            assert!((p - printed).abs() <= 0.5e-4, "q {q}: {p} vs {printed}");
        }
    }

    /// TCP/NC Section VI-A: 5% per link over 4 hops is "roughly 19%", so
    /// the optimum R is "approximately 1/(1-0.19) = 1.23" and two flows on
    /// 1 Mbit/s links get 0.405 Mbit/s each.
    #[test]
    fn tcp_nc_four_hop_example() {
        let p = path_loss(0.05, 4).unwrap();
        assert!((p - 0.19).abs() < 0.005, "{p}");
        assert!((min_redundancy(0.19).unwrap() - 1.23).abs() <= 0.005);
        assert!(((1.0 - 0.19) / 2.0 - 0.405_f64).abs() < 1e-12);
    }

    /// Kim Section 7.2 prints 1/(1-p) = 1.107 at p = 0.0963 and 1.228 at
    /// p = 0.1855; FNC Section 2.2 gives R = 1/0.8 = 1.25 at 20% loss.
    #[test]
    fn printed_redundancies() {
        assert!((min_redundancy(0.0963).unwrap() - 1.107).abs() <= 0.5e-3);
        assert!((min_redundancy(0.1855).unwrap() - 1.228).abs() <= 0.5e-3);
        assert_eq!(min_redundancy(0.2).unwrap(), 1.25);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(path_loss(0.1, 0).is_err());
        assert!(path_loss(f64::NAN, 2).is_err());
        assert!(min_redundancy(1.0).is_err());
        assert!(min_redundancy(-0.5).is_err());
        assert_eq!(path_loss(1.0, 3), Ok(1.0));
    }
}
