//! Base URLs of providers: checked once, up front, so a typo is reported as a typo and not as
//! a missing key or an unreachable server later.

/// Why a base URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{url}` is not a usable base URL: {reason}")]
pub struct BaseUrlError {
    pub url: String,
    pub reason: String,
}

/// Checks that `url` is an absolute `http` or `https` URL with a host.
pub fn check_base_url(url: &str) -> Result<(), BaseUrlError> {
    let fail = |reason: &str| BaseUrlError {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| fail(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(fail("it must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(fail("it has no host"));
    }
    Ok(())
}

/// Whether `url` points at this machine (a local server, which needs no key).
pub fn is_local_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_and_bad_base_urls() {
        assert!(check_base_url("http://127.0.0.1:8080/v1").is_ok());
        assert!(check_base_url("https://api.openai.com/v1").is_ok());
        for bad in [
            "127.0.0.1:8080",
            "htp//x",
            "ftp://host/v1",
            "http://",
            "localhost",
        ] {
            let err = check_base_url(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn local_urls_are_this_machine() {
        for local in [
            "http://localhost:11434",
            "http://127.0.0.2/v1",
            "http://[::1]:8080",
            "http://0.0.0.0:8000",
        ] {
            assert!(is_local_url(local), "{local}");
        }
        for remote in ["https://api.openai.com/v1", "http://10.0.0.1", "not a url"] {
            assert!(!is_local_url(remote), "{remote}");
        }
    }
}
