//! The wire APIs, in one table: the name users write (config, `--api`), the request each
//! builds, and the parser of its stream. The router and the stream driver read it; a new wire
//! API is its module plus one line here.

use std::fmt;
use std::str::FromStr;

use crate::http::WireRequest;
use crate::parse::WireParser;
use crate::{Api, Context, Model, StreamOptions, anthropic, openai_completions, openai_responses};

/// One wire API.
pub(crate) struct WireApi {
    pub api: Api,
    /// As written in config and on the command line.
    pub name: &'static str,
    /// The HTTP request of one call.
    pub request: fn(&Model, &Context, &StreamOptions) -> WireRequest,
    /// A parser for one response stream; it names `provider` in its errors.
    pub parser: fn(provider: String) -> Box<dyn WireParser>,
    /// The headers that carry `key` (and any the API requires with it), for requests besides
    /// a call: checking a key the user pasted.
    pub key_headers: fn(key: &str) -> Vec<(&'static str, String)>,
    /// The largest image the API takes as sent: larger ones are scaled down before.
    pub image_limit: ImageLimit,
    /// Whether the API has a search tool of its own (`StreamOptions::web_search`).
    pub web_search: bool,
}

/// The largest image a wire API takes: its longest side in pixels and its size in bytes
/// (before base64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimit {
    pub max_edge: u32,
    pub max_bytes: usize,
}

/// OpenAI scales anything past 2048 pixels down itself and takes up to 20 MB; sending more is
/// only slower.
const OPENAI_IMAGES: ImageLimit = ImageLimit {
    max_edge: 2048,
    max_bytes: 20 << 20,
};

/// Whether `api` offers a web search tool of the provider's own.
pub fn offers_web_search(api: Api) -> bool {
    of(api).web_search
}

/// The largest image `api` takes.
pub fn image_limit(api: Api) -> ImageLimit {
    of(api).image_limit
}

fn bearer(key: &str) -> Vec<(&'static str, String)> {
    vec![("authorization", format!("Bearer {key}"))]
}

pub(crate) static WIRE_APIS: [WireApi; 3] = [
    WireApi {
        api: Api::OpenaiCompletions,
        name: "openai-completions",
        request: openai_completions::request,
        parser: |provider| Box::new(openai_completions::Parser::new(provider)),
        key_headers: bearer,
        image_limit: OPENAI_IMAGES,
        web_search: false,
    },
    WireApi {
        api: Api::OpenaiResponses,
        name: "openai-responses",
        request: openai_responses::request,
        parser: |provider| Box::new(openai_responses::Parser::new(provider)),
        key_headers: bearer,
        image_limit: OPENAI_IMAGES,
        web_search: true,
    },
    WireApi {
        api: Api::AnthropicMessages,
        name: "anthropic-messages",
        request: anthropic::request,
        parser: |provider| Box::new(anthropic::Parser::new(provider)),
        key_headers: anthropic::key_headers,
        // 5 MB of base64 per image, and 2000 pixels a side once a request holds more than
        // 20 images.
        image_limit: ImageLimit {
            max_edge: 2000,
            max_bytes: 5 * (1 << 20) / 4 * 3,
        },
        web_search: true,
    },
];

/// The table's entry for `api`.
pub(crate) fn of(api: Api) -> &'static WireApi {
    WIRE_APIS
        .iter()
        .find(|w| w.api == api)
        .unwrap_or(&WIRE_APIS[0])
}

impl Api {
    /// Every wire API's name, for help and error messages.
    pub fn names() -> Vec<&'static str> {
        WIRE_APIS.iter().map(|w| w.name).collect()
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(of(*self).name)
    }
}

/// A wire API name that is not in the table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown wire API `{name}`; the wire APIs are {}", Api::names().join(", "))]
pub struct UnknownApi {
    pub name: String,
}

impl FromStr for Api {
    type Err = UnknownApi;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        WIRE_APIS
            .iter()
            .find(|w| w.name == name.trim())
            .map(|w| w.api)
            .ok_or_else(|| UnknownApi {
                name: name.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_is_in_the_table_once_and_its_name_is_its_serde_name() {
        for api in [
            Api::OpenaiCompletions,
            Api::OpenaiResponses,
            Api::AnthropicMessages,
        ] {
            assert_eq!(of(api).api, api);
            let serde_name = serde_json::to_value(api).unwrap();
            assert_eq!(serde_name, api.to_string());
            assert_eq!(api.to_string().parse::<Api>(), Ok(api));
        }
        let err = "openai".parse::<Api>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown wire API `openai`; the wire APIs are openai-completions, openai-responses, anthropic-messages"
        );
    }
}
