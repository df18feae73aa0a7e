//! Checks an API key the user pasted with one cheap request before it is saved: the
//! provider's model list (`GET {base_url}/models`), which every supported API has, costs no
//! tokens, and answers 401 or 403 for a wrong key.

use std::time::Duration;

use crate::{Model, wire};

/// What the provider said of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCheck {
    /// It answered the request made with the key.
    Accepted,
    /// It refused the key: its own words.
    Rejected(String),
    /// It could not say (unreachable, a server error, no model list): why.
    Unchecked(String),
}

impl KeyCheck {
    /// What to tell the user: `Ok` (the key is kept) when `provider` accepted it or could not
    /// say, `Err` with the provider's words when it refused it.
    pub fn said(self, provider: &str) -> Result<String, String> {
        match self {
            Self::Accepted => Ok(format!("{provider} accepted the key")),
            Self::Rejected(said) => Err(said),
            Self::Unchecked(why) => Ok(format!("the key could not be checked ({why})")),
        }
    }
}

/// How long the check may take: a key is worth keeping even when the provider is slow.
const DEADLINE: Duration = Duration::from_secs(10);

/// Asks `model`'s provider whether it takes `key`.
pub async fn check_key(model: &Model, key: &str) -> KeyCheck {
    let url = format!("{}/models", model.base_url.trim_end_matches('/'));
    // No redirect is followed: one to another host would carry the key (reqwest drops only
    // `authorization` on the way, and Anthropic's key is in `x-api-key`).
    let client = match crate::http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(err) => return KeyCheck::Unchecked(format!("no HTTP client: {err}")),
    };
    let mut request = client.get(&url).timeout(DEADLINE);
    for (name, value) in (wire::of(model.api).key_headers)(key) {
        request = request.header(name, value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(err) => {
            return KeyCheck::Unchecked(format!(
                "{url} could not be reached: {}",
                crate::http::error_chain(&err)
            ));
        }
    };
    let status = response.status().as_u16();
    if response.status().is_success() {
        return KeyCheck::Accepted;
    }
    let body = response.text().await.unwrap_or_default();
    let said = provider_words(&body);
    match status {
        401 | 403 => KeyCheck::Rejected(format!("{} answered {status}: {said}", model.provider)),
        _ => KeyCheck::Unchecked(format!("{url} answered {status}: {said}")),
    }
}

/// The message of an error body (`{"error": {"message": …}}`, or `{"error": "…"}`), else the
/// body's start.
fn provider_words(body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    let short: String = text.chars().take(200).collect();
    if short.is_empty() {
        "no reason given".into()
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_s_own_words_are_kept() {
        assert_eq!(
            provider_words(r#"{"error":{"message":"Incorrect API key provided","type":"x"}}"#),
            "Incorrect API key provided"
        );
        assert_eq!(provider_words(r#"{"error":"bad key"}"#), "bad key");
        assert_eq!(provider_words("  nope "), "nope");
        assert_eq!(provider_words(""), "no reason given");
    }
}
