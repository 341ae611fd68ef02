//! The seed study's hashing load (seed 004): 128-bit CityHash (v1.1, from the cityhash-rs
//! crate) of one 4 KiB buffer, repeated. The buffer is filled once from the OS random
//! source by the caller, before the release.

use crate::Probe;
use std::ops::ControlFlow;

/// Bytes hashed per iteration, as in the seed.
pub const HASH_BUFFER: usize = 4096;

/// Hashes between probe ticks.
const CHUNK: u64 = 64;

/// What a hash run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashOutcome {
    /// Hashes computed.
    pub hashes: u64,
    /// XOR of all hashes, so the work cannot be optimised away and runs can be compared.
    pub digest: u128,
}

/// Hashes `buf` `n` times; each round feeds the previous hash into the buffer's first
/// bytes, so no two rounds hash identical input.
pub fn hash(n: u64, buf: &mut [u8; HASH_BUFFER], probe: &mut dyn Probe) -> HashOutcome {
    let (mut done, mut digest) = (0u64, 0u128);
    while done < n {
        let m = CHUNK.min(n - done);
        for _ in 0..m {
            let h = cityhash_rs::cityhash_110_128(&buf[..]);
            buf[..16].copy_from_slice(&h.to_le_bytes());
            digest ^= h;
        }
        done += m;
        if probe.tick() == ControlFlow::Break(()) {
            break;
        }
    }
    HashOutcome { hashes: done, digest }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_for_the_same_buffer_and_sensitive_to_it() {
        let mut a = [7u8; HASH_BUFFER];
        let mut b = [7u8; HASH_BUFFER];
        assert_eq!(hash(100, &mut a, &mut crate::NoProbe), hash(100, &mut b, &mut crate::NoProbe));
        let mut c = [7u8; HASH_BUFFER];
        c[4000] = 8;
        assert_ne!(
            hash(100, &mut c, &mut crate::NoProbe).digest,
            hash(100, &mut [7u8; HASH_BUFFER], &mut crate::NoProbe).digest
        );
    }

    #[test]
    fn matches_the_crate_for_a_single_round() {
        let mut buf = [1u8; HASH_BUFFER];
        let expected = cityhash_rs::cityhash_110_128(&[1u8; HASH_BUFFER]);
        assert_eq!(hash(1, &mut buf, &mut crate::NoProbe).digest, expected);
    }
}
