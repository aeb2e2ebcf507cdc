//! The secret path segment: 128 random bits from the kernel, compared in constant time.

use std::io::Read;

pub fn new() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// True when `given` is the token; the time taken does not depend on where they differ.
pub fn matches(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_random_hex_and_compared_exactly() {
        let (a, b) = (
            super::new().unwrap_or_default(),
            super::new().unwrap_or_default(),
        );
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(super::matches(&a, &a));
        assert!(!super::matches(&a, &b));
        assert!(!super::matches(&a[..31], &a));
        assert!(!super::matches("", &a));
    }
}
