//! Corrections for multiple comparisons: many tests at alpha 0.05 find "significant"
//! differences by chance alone (one in twenty when nothing differs), so a table of tests
//! judges each by a p-value adjusted for how many were made.

/// How the p-values of a family of tests are adjusted before they are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Correction {
    /// Holm's step-down method: controls the family-wise error rate (the chance of any false
    /// positive), uniformly more powerful than Bonferroni.
    #[default]
    Holm,
    /// Benjamini and Hochberg's step-up method: controls the false discovery rate (the
    /// expected share of false positives among the significant).
    BenjaminiHochberg,
    /// No adjustment: each test is judged alone.
    None,
}

impl Correction {
    /// Every correction, the default first.
    pub const ALL: [Correction; 3] =
        [Correction::Holm, Correction::BenjaminiHochberg, Correction::None];

    /// The name used on the command line and in exports.
    pub fn name(self) -> &'static str {
        match self {
            Correction::Holm => "holm",
            Correction::BenjaminiHochberg => "bh",
            Correction::None => "none",
        }
    }

    /// The name as a sentence shows it.
    pub fn label(self) -> &'static str {
        match self {
            Correction::Holm => "Holm",
            Correction::BenjaminiHochberg => "Benjamini-Hochberg",
            Correction::None => "no correction for multiple comparisons",
        }
    }

    /// Parses a name (also `benjamini-hochberg`, `fdr`).
    pub fn parse(name: &str) -> Option<Correction> {
        Some(match name {
            "holm" => Correction::Holm,
            "bh" | "benjamini-hochberg" | "fdr" => Correction::BenjaminiHochberg,
            "none" => Correction::None,
            _ => return None,
        })
    }

    /// The adjusted p-values of `p`, in the same order (see [`adjust`]).
    pub fn adjust(self, p: &[f64]) -> Vec<f64> {
        match self {
            Correction::Holm => holm(p),
            Correction::BenjaminiHochberg => benjamini_hochberg(p),
            Correction::None => p.to_vec(),
        }
    }
}

/// Indices of `p` from the smallest p-value to the largest (NaN last).
fn ascending(p: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    order
}

/// Holm's adjusted p-values, in the order of `p`: with the m p-values sorted ascending,
/// the i-th (1-based) becomes min(1, max over j ≤ i of (m − j + 1) · p_(j)). A test is
/// significant at alpha when its adjusted p-value is below alpha.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running = 0.0_f64;
    for (rank, &i) in ascending(p).iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Benjamini–Hochberg adjusted p-values (q-values), in the order of `p`: with the m
/// p-values sorted ascending, the i-th (1-based) becomes min over j ≥ i of
/// min(1, m / j · p_(j)).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running = 1.0_f64;
    for (rank, &i) in ascending(p).iter().enumerate().rev() {
        running = running.min((m as f64 / (rank + 1) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// The adjusted p-values of the tests that exist (`Some`), in place of None where a test
/// is missing: a family counts only the tests actually made.
pub fn adjust(p: &[Option<f64>], correction: Correction) -> Vec<Option<f64>> {
    let made: Vec<f64> = p.iter().flatten().copied().collect();
    let mut adjusted = correction.adjust(&made).into_iter();
    p.iter().map(|x| x.and_then(|_| adjusted.next())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "got {got:?}, want {want:?}");
        }
    }

    // The textbook example p = [0.01, 0.04, 0.03, 0.005], m = 4. Sorted: 0.005 (index 3),
    // 0.01 (index 0), 0.03 (index 2), 0.04 (index 1).
    const P: [f64; 4] = [0.01, 0.04, 0.03, 0.005];

    #[test]
    fn holm_by_hand() {
        // (m - j + 1) p_(j): 4 * 0.005 = 0.02, 3 * 0.01 = 0.03, 2 * 0.03 = 0.06, 1 * 0.04 = 0.04;
        // running maximum: 0.02, 0.03, 0.06, 0.06. Back in input order:
        close(&holm(&P), &[0.03, 0.06, 0.06, 0.02]);
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // m / j p_(j): 4/1 * 0.005 = 0.02, 4/2 * 0.01 = 0.02, 4/3 * 0.03 = 0.04, 4/4 * 0.04 = 0.04;
        // running minimum from the largest: 0.04, 0.04, 0.02, 0.02. Back in input order:
        close(&benjamini_hochberg(&P), &[0.02, 0.04, 0.04, 0.02]);
    }

    #[test]
    fn adjusted_values_never_exceed_one_nor_fall_below_the_raw() {
        let p = [0.9, 0.5, 0.7];
        for c in Correction::ALL {
            let a = c.adjust(&p);
            assert!(a.iter().zip(p).all(|(a, p)| *a >= p && *a <= 1.0), "{c:?}: {a:?}");
        }
        // Holm: 3 * 0.5 = 1.5 -> 1, then the running maximum keeps 1.
        close(&holm(&p), &[1.0, 1.0, 1.0]);
        // BH: 3/1 * 0.5 = 1.5 -> 1; 3/2 * 0.7 = 1.05 -> 1; 3/3 * 0.9 = 0.9.
        close(&benjamini_hochberg(&p), &[0.9, 0.9, 0.9]);
    }

    #[test]
    fn a_raw_p_below_alpha_stops_being_significant_after_correction() {
        // Five tests, one at p = 0.03: alone it is significant at 0.05, but Holm multiplies the
        // smallest of five by 5 (0.15) and BH by 5/1 (0.15).
        let p = [0.03, 0.4, 0.5, 0.6, 0.8];
        assert!(p[0] < 0.05);
        assert!((holm(&p)[0] - 0.15).abs() < 1e-12);
        assert!((benjamini_hochberg(&p)[0] - 0.15).abs() < 1e-12);
        assert_eq!(Correction::None.adjust(&p), p.to_vec());
    }

    #[test]
    fn missing_tests_are_not_counted() {
        let a = adjust(&[Some(0.01), None, Some(0.04)], Correction::Holm);
        // m = 2: 2 * 0.01 = 0.02, 1 * 0.04 = 0.04.
        assert_eq!(a[1], None);
        assert!((a[0].unwrap() - 0.02).abs() < 1e-12 && (a[2].unwrap() - 0.04).abs() < 1e-12);
        assert!(adjust(&[], Correction::BenjaminiHochberg).is_empty());
    }

    #[test]
    fn names_round_trip() {
        for c in Correction::ALL {
            assert_eq!(Correction::parse(c.name()), Some(c));
        }
        assert_eq!(Correction::parse("bonferroni"), None);
        assert_eq!(Correction::default(), Correction::Holm);
    }
}
