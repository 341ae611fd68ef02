//! Sums of ratios as exact big rationals, for the utilisation and density conditions.

use std::cmp::Ordering;

use num_bigint::BigUint;

/// The exact sum of `num / den` over the pairs, as (numerator, denominator), unreduced.
/// An empty sum is 0/1; every `den` must be positive.
pub(crate) fn sum(pairs: impl IntoIterator<Item = (u64, u64)>) -> (BigUint, BigUint) {
    let (mut p, mut q) = (BigUint::from(0u32), BigUint::from(1u32));
    for (n, d) in pairs {
        p = p * d + &q * n;
        q *= d;
    }
    (p, q)
}

/// The exact product of `num / den` over the pairs, as (numerator, denominator).
pub(crate) fn product(pairs: impl IntoIterator<Item = (u64, u64)>) -> (BigUint, BigUint) {
    let (mut p, mut q) = (BigUint::from(1u32), BigUint::from(1u32));
    for (n, d) in pairs {
        p *= n;
        q *= d;
    }
    (p, q)
}

/// Compares a/b with c/d (b, d positive).
pub(crate) fn cmp(a: &BigUint, b: &BigUint, c: &BigUint, d: &BigUint) -> Ordering {
    (a * d).cmp(&(c * b))
}

/// Whether sum(u) <= m - (m - 1) u_max, with u the ratios `pairs` and u_max their largest:
/// the shape of the GFB and density tests (for m = 1, sum(u) <= 1).
pub(crate) fn within_gfb(pairs: &[(u64, u64)], m: usize) -> bool {
    let (p, q) = sum(pairs.iter().copied());
    let Some(&(cmax, dmax)) = pairs.iter().max_by(|a, b| ratio_cmp(**a, **b)) else {
        return true;
    };
    let m = BigUint::from(m);
    let one = BigUint::from(1u32);
    // p/q + (m-1) cmax/dmax <= m  <=>  p dmax + (m-1) cmax q <= m q dmax
    let lhs = &p * dmax + (&m - &one) * cmax * &q;
    lhs <= m * q * dmax
}

/// Compares two ratios a/b and c/d of u64s exactly.
pub(crate) fn ratio_cmp((a, b): (u64, u64), (c, d): (u64, u64)) -> Ordering {
    (u128::from(a) * u128::from(d)).cmp(&(u128::from(c) * u128::from(b)))
}

/// Whether sum(pairs) exceeds `m`.
pub(crate) fn exceeds(pairs: impl IntoIterator<Item = (u64, u64)>, m: usize) -> bool {
    let (p, q) = sum(pairs);
    p > q * m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirds_sum_to_exactly_one() {
        let (p, q) = sum([(1, 3), (1, 3), (1, 3)]);
        assert_eq!(p, q);
        assert!(!exceeds([(1, 3), (1, 3), (1, 3)], 1));
        assert!(exceeds([(1, 3), (1, 3), (1, 3), (1, u64::MAX)], 1));
    }

    #[test]
    fn gfb_shape_on_two_cpus() {
        // 3/4 + 3/4 + 1/4 = 7/4 against 2 - 3/4 = 5/4: out; 1/2 + 1/2 + 1/4 = 5/4 <= 3/2: in.
        assert!(!within_gfb(&[(3, 4), (3, 4), (1, 4)], 2));
        assert!(within_gfb(&[(1, 2), (1, 2), (1, 4)], 2));
        assert!(within_gfb(&[], 3));
    }
}
