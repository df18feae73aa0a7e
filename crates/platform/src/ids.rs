//! Random ids, from the system's randomness (getrandom: `getrandom(2)` on Linux,
//! `getentropy` on macOS, `ProcessPrng` on Windows).

/// 64 random bits. Falls back to a hash of the time and a counter in the one case the system
/// cannot give randomness (never seen on the systems above): an id must still be made.
pub fn random_u64() -> u64 {
    getrandom::u64().unwrap_or_else(|_| fallback())
}

/// `len` random hexadecimal digits.
pub fn random_hex(len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(&format!("{:016x}", random_u64()));
    }
    out.truncate(len);
    out
}

fn fallback() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_the_length_asked_and_distinct() {
        let a = random_hex(8);
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(random_hex(20).len(), 20);
        let many: std::collections::HashSet<u64> = (0..1000).map(|_| random_u64()).collect();
        assert_eq!(many.len(), 1000);
    }
}
