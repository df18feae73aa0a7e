//! Ids, UTC timestamps and directory slugs, without pulling a date crate for two small
//! functions.

pub(crate) use platform::ids::random_hex;

/// Entry ids, hashed with foldhash: a long session's load hashes a hundred thousand of them
/// (SipHash was a fifth of the time), and they come from our own files, so a hasher that
/// resists crafted collisions buys nothing here.
pub(crate) type IdSet = std::collections::HashSet<String, foldhash::fast::RandomState>;
pub(crate) type IdIndex = std::collections::HashMap<String, usize, foldhash::fast::RandomState>;

/// Digits of an entry id. 16 hex digits (64 bits) make a collision in a 100,000-entry file
/// about one in 10^9 (8 digits: one in two); [`unique_id`] rules out the rest.
pub(crate) const ENTRY_ID_LEN: usize = 16;

/// A new entry id that is not in `taken`, which then holds it.
pub(crate) fn unique_id(taken: &mut IdSet) -> String {
    unique_from(taken, || random_hex(ENTRY_ID_LEN))
}

fn unique_from(taken: &mut IdSet, mut next: impl FnMut() -> String) -> String {
    loop {
        let id = next();
        if taken.insert(id.clone()) {
            return id;
        }
    }
}

/// Milliseconds since the epoch as RFC 3339 UTC, e.g. `2025-03-04T05:06:07.089Z`.
pub(crate) fn rfc3339(millis: u64) -> String {
    let secs = millis / 1000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        millis % 1000
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar: shift the
/// year to start in March so the leap day falls at the end, then count 400-year eras.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A directory name for a working directory: readable, and unique through a hash of the full
/// path (`/a-b` and `/a/b` would otherwise share a slug).
pub(crate) fn cwd_slug(cwd: &str) -> String {
    let mut readable: String = cwd
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    readable = readable.trim_matches('-').to_string();
    // Keep the tail: the project name is what a human looks for.
    let chars: Vec<char> = readable.chars().collect();
    if chars.len() > 60 {
        readable = chars[chars.len() - 60..].iter().collect();
    }
    format!("{readable}-{:08x}", fnv1a(cwd.as_bytes()) as u32)
}

/// FNV-1a: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
    }

    #[test]
    fn entry_ids_are_long_and_never_repeat_a_taken_id() {
        let mut taken: IdSet = ["aaaa".to_string()].into_iter().collect();
        let mut candidates = ["aaaa", "aaaa", "bbbb"].into_iter().map(String::from);
        let id = unique_from(&mut taken, || candidates.next().unwrap());
        assert_eq!(id, "bbbb", "a taken id is drawn again");
        assert!(taken.contains("bbbb"));
        for _ in 0..10_000 {
            let before = taken.len();
            let id = unique_id(&mut taken);
            assert_eq!(id.len(), ENTRY_ID_LEN);
            assert_eq!(taken.len(), before + 1, "{id} was new");
        }
    }

    #[test]
    fn slugs_are_readable_and_distinct() {
        let slug = cwd_slug("/home/me/my.project");
        assert!(slug.starts_with("home-me-my-project-"), "{slug}");
        assert_ne!(cwd_slug("/a-b"), cwd_slug("/a/b"));
    }
}
