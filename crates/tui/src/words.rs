//! Counting things in words the user reads: "1 line", "2 lines".

/// `s` after a count that is not one.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `n` and the noun, in the plural when `n` is not one (`count(1, "line")` → "1 line").
pub(crate) fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular() {
        assert_eq!(count(1, "line"), "1 line");
        assert_eq!(count(0, "line"), "0 lines");
        assert_eq!(count(12, "line"), "12 lines");
    }
}
