//! The responses and Anthropic clients over real HTTP against mock-llm: generated streams,
//! fixtures written from each API's documentation, request shapes, and stream faults.

mod support;

use llm::{
    Api, AssistantContent, ErrorKind, Message, Provider, StopReason, StreamEvent, ThinkingLevel,
    ToolResultMessage, UserContent, UserMessage,
};
use mock_llm::{Fault, Reply, ScriptUsage};
use serde_json::{Value, json};
use support::{collect, count, model, options, serve};
use tokio_util::sync::CancellationToken;

const WIRE: [Api; 2] = [Api::OpenaiResponses, Api::AnthropicMessages];

fn thinking_of(content: &AssistantContent) -> Option<(&str, Option<&str>)> {
    match content {
        AssistantContent::Thinking {
            thinking,
            signature,
        } => Some((thinking.as_str(), signature.as_deref())),
        _ => None,
    }
}

#[tokio::test]
async fn text_thinking_usage_and_cost() {
    for api in WIRE {
        let reply = Reply::text("Hello, world")
            .with_thinking("let me see")
            .with_chunk_size(3)
            .with_usage(ScriptUsage {
                input: 100,
                output: 20,
                cache_read: 50,
            });
        let server = serve(vec![reply]).await;
        let (events, message) = collect(&server, api, options()).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api:?}");
        assert_eq!(message.text(), "Hello, world");
        let (thinking, _) = thinking_of(&message.content[0]).expect("thinking first");
        assert_eq!(thinking, "let me see");
        assert_eq!(
            support::streamed_text(&events),
            "Hello, world",
            "{api:?}: 12 characters in pieces of 3"
        );
        let u = message.usage;
        assert_eq!((u.input, u.output, u.cache_read), (100, 20, 50), "{api:?}");
        let expected = (100.0 * 1.0 + 20.0 * 2.0 + 50.0 * 0.5) / 1e6;
        assert!((u.cost - expected).abs() < 1e-12, "{api:?}: {}", u.cost);
        assert!(matches!(events[0], StreamEvent::Start));
    }
}

#[tokio::test]
async fn tool_calls_stream_by_block() {
    for api in WIRE {
        let reply = Reply::tool_call("read", json!({"path": "src/main.rs"}))
            .with_tool_call("read", json!({"path": "Cargo.toml"}))
            .with_text("Reading both.")
            .with_chunk_size(4);
        let server = serve(vec![reply]).await;
        let (events, message) = collect(&server, api, options()).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{api:?}");
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls.len(), 2, "{api:?}");
        assert_eq!(calls[0].arguments, json!({"path": "src/main.rs"}));
        assert_eq!(calls[1].arguments, json!({"path": "Cargo.toml"}));
        assert_ne!(calls[0].id, calls[1].id);
        let ends = count(&events, |e| matches!(e, StreamEvent::ToolcallEnd { .. }));
        assert_eq!(ends, 2, "{api:?}: each call closed once");
    }
}

#[tokio::test]
async fn a_length_cut_is_reported_as_length() {
    for api in WIRE {
        let server = serve(vec![Reply::text("cut off").with_finish_reason("length")]).await;
        let (_, message) = collect(&server, api, options()).await;
        assert_eq!(message.stop_reason, StopReason::Length, "{api:?}");
        assert_eq!(message.text(), "cut off");
    }
}

#[tokio::test]
async fn responses_request_shape() {
    let server = serve(vec![Reply::text("ok")]).await;
    let mut opts = options();
    opts.thinking = ThinkingLevel::High;
    opts.max_tokens = Some(500);
    collect(&server, Api::OpenaiResponses, opts).await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    let body = &request.body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["instructions"], "sys");
    assert_eq!(
        body["input"][0],
        json!({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["max_output_tokens"], 500);
}

#[tokio::test]
async fn anthropic_request_shape() {
    let server = serve(vec![Reply::text("ok")]).await;
    let mut opts = options();
    opts.thinking = ThinkingLevel::Medium;
    collect(&server, Api::AnthropicMessages, opts).await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    let body = &request.body;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert!(
        body["max_tokens"].as_u64().unwrap() > 8192,
        "above the budget"
    );
}

#[tokio::test]
async fn history_round_trips_in_each_wire_format() {
    for api in WIRE {
        let server = serve(vec![
            Reply::tool_call("read", json!({"path": "a"})).with_thinking("plan"),
            Reply::text("done"),
        ])
        .await;
        let (_, first) = collect(&server, api, options()).await;
        let call = first.tool_calls().next().unwrap().clone();
        let mut context = support::context();
        context.messages.push(Message::Assistant(first.clone()));
        for id in [&call.id, &call.id] {
            // Two results in a row: Anthropic wants them in one user message.
            context
                .messages
                .push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id.clone(),
                    tool_name: "read".into(),
                    content: vec![UserContent::Text {
                        text: "contents".into(),
                    }],
                    details: None,
                    is_error: true,
                    timestamp: 0,
                }));
        }
        context
            .messages
            .push(Message::User(UserMessage::text("thanks")));
        let stream = llm::Router::new().stream(
            &model(&server, api),
            context,
            options(),
            CancellationToken::new(),
        );
        support::drain(stream).await;
        let body = &server.requests()[1].body;
        match api {
            Api::OpenaiResponses => {
                let input = body["input"].as_array().unwrap();
                assert_eq!(input[1]["type"], "reasoning", "reasoning replayed");
                assert_eq!(input[1]["encrypted_content"], "enc_mock_1");
                assert_eq!(input[2]["type"], "function_call");
                assert_eq!(input[2]["call_id"], call.id.as_str());
                assert_eq!(input[2]["arguments"], r#"{"path":"a"}"#);
                assert_eq!(input[3]["type"], "function_call_output");
                assert_eq!(input[3]["output"], "contents");
                assert_eq!(input.len(), 6);
            }
            _ => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(messages.len(), 4, "{messages:?}");
                let assistant = &messages[1]["content"];
                assert_eq!(assistant[0]["type"], "thinking");
                assert_eq!(
                    assistant[0]["signature"], "sig_mock_1",
                    "signature replayed"
                );
                assert_eq!(assistant[1]["type"], "tool_use");
                assert_eq!(assistant[1]["input"], json!({"path": "a"}));
                let results = messages[2]["content"].as_array().unwrap();
                assert_eq!(results.len(), 2);
                assert_eq!(results[0]["tool_use_id"], call.id.as_str());
                assert_eq!(results[0]["is_error"], true);
                assert!(results[1].get("cache_control").is_none());
                let last = &messages[3]["content"][0];
                assert_eq!(
                    last["cache_control"]["type"], "ephemeral",
                    "newest turn cached"
                );
            }
        }
    }
}

#[tokio::test]
async fn stream_faults_become_error_events() {
    for api in WIRE {
        let long = "lorem ipsum ".repeat(20);
        let server = serve(vec![
            Reply::text(&long).with_fault(Fault::Drop { after: 3 }),
            Reply::text(&long).with_fault(Fault::Malformed { after: 3 }),
            Reply::text(&long).with_fault(Fault::NoDone),
            Reply::status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#),
        ])
        .await;
        let terminal = match api {
            Api::OpenaiResponses => "ended before response.completed",
            _ => "ended before message_stop",
        };
        let expectations = [
            "broke off",
            "malformed data",
            terminal,
            "401 Unauthorized: invalid x-api-key (mock)",
        ];
        for expected in expectations {
            let (_, message) = collect(&server, api, options()).await;
            assert_eq!(message.stop_reason, StopReason::Error);
            let reason = message.error_message.unwrap();
            assert!(reason.contains(expected), "{api:?}: {reason}");
        }
    }
}

async fn replay_fixture(api: Api, fixture: &str) -> (Vec<StreamEvent>, llm::AssistantMessage) {
    // Odd piece sizes cut events and UTF-8 characters at arbitrary points.
    let server = serve(vec![Reply::raw_sse(fixture).with_chunk_size(37)]).await;
    collect(&server, api, options()).await
}

#[tokio::test]
async fn replays_responses_fixtures() {
    let fixture = include_str!("fixtures/responses_reasoning_text.sse");
    let (_, message) = replay_fixture(Api::OpenaiResponses, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "There are three r’s in “strawberry”.");
    let (thinking, _) = thinking_of(&message.content[0]).unwrap();
    assert_eq!(thinking, "**Counting letters** in the word.\n\nThree r's.");
    let u = message.usage;
    assert_eq!((u.input, u.output, u.cache_read), (1024, 180, 1024));

    let fixture = include_str!("fixtures/responses_function_call.sse");
    let (_, message) = replay_fixture(Api::OpenaiResponses, fixture).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].id, "call_Ab12");
    assert_eq!(calls[0].arguments, json!({"path": "src/lib.rs"}));
    assert_eq!(
        calls[1].arguments,
        json!({"path": "."}),
        "arguments only in the done item"
    );

    let fixture = include_str!("fixtures/responses_failed.sse");
    let (_, message) = replay_fixture(Api::OpenaiResponses, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_kind, Some(ErrorKind::ContextOverflow));
    assert!(
        message
            .error_message
            .unwrap()
            .contains("context_length_exceeded")
    );
}

#[tokio::test]
async fn replays_anthropic_fixtures() {
    let fixture = include_str!("fixtures/anthropic_thinking_text.sse");
    let (events, message) = replay_fixture(Api::AnthropicMessages, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.text(), "27 × 453 = 12,231.");
    let (thinking, signature) = thinking_of(&message.content[0]).unwrap();
    assert_eq!(thinking, "The user wants 27 * 453. 27 * 453 = 12231.");
    assert!(signature.unwrap().starts_with("EqQBCgIYAhIM"));
    assert_eq!(
        count(&events, |e| matches!(
            e,
            StreamEvent::ThinkingSignature { .. }
        )),
        1
    );
    let u = message.usage;
    assert_eq!((u.input, u.output, u.cache_write), (12, 96, 3000));

    let fixture = include_str!("fixtures/anthropic_tool_use.sse");
    let (_, message) = replay_fixture(Api::AnthropicMessages, fixture).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.text(), "Let me look at the file.");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_01Fx", "read")
    );
    assert_eq!(call.arguments, json!({"path": "Cargo.toml", "limit": 40}));
    assert_eq!(message.usage.cache_read, 5000);

    let fixture = include_str!("fixtures/anthropic_overloaded.sse");
    let (_, message) = replay_fixture(Api::AnthropicMessages, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "Partial", "what arrived is kept");
    let reason = message.error_message.unwrap();
    assert_eq!(reason, "mock: Overloaded (overloaded_error)");
}

#[tokio::test]
async fn signed_thinking_is_replayed_only_to_its_own_provider() {
    // An OpenAI reasoning item must not reach Anthropic, nor another model's reasoning OpenAI.
    let server = serve(vec![
        Reply::tool_call("read", json!({"path": "a"})).with_thinking("plan"),
        Reply::text("one"),
        Reply::text("two"),
    ])
    .await;
    let (_, first) = collect(&server, Api::OpenaiResponses, options()).await;
    assert!(thinking_of(&first.content[0]).unwrap().1.is_some());
    for (api, id) in [
        (Api::AnthropicMessages, "mock-model"),
        (Api::OpenaiResponses, "other-model"),
    ] {
        let mut context = support::context();
        context.messages.push(Message::Assistant(first.clone()));
        let mut m = model(&server, api);
        m.id = id.into();
        if api == Api::AnthropicMessages {
            m.provider = "anthropic".into();
        }
        let stream = llm::Router::new().stream(&m, context, options(), CancellationToken::new());
        support::drain(stream).await;
    }
    let requests = server.requests();
    let anthropic = requests[1].body["messages"][1]["content"]
        .as_array()
        .unwrap();
    assert!(
        anthropic.iter().all(|b| b["type"] != "thinking"),
        "{anthropic:?}"
    );
    let input = requests[2].body["input"].as_array().unwrap();
    assert!(input.iter().all(|i| i["type"] != "reasoning"), "{input:?}");
}

#[tokio::test]
async fn the_providers_own_search_is_asked_for_and_its_results_kept() {
    // The request fields, with and without `web_search`.
    for api in [Api::OpenaiResponses, Api::AnthropicMessages] {
        let server = serve(vec![Reply::text("ok"), Reply::text("ok")]).await;
        let mut opts = options();
        opts.web_search = true;
        collect(&server, api, opts).await;
        collect(&server, api, options()).await;
        let requests = server.requests();
        let tools = requests[0].body["tools"].as_array().unwrap().clone();
        let search: Vec<&Value> = tools
            .iter()
            .filter(|t| t["name"] != "read" && t["type"] != "function")
            .collect();
        match api {
            Api::OpenaiResponses => {
                assert_eq!(search, [&json!({"type": "web_search"})]);
                let include = &requests[0].body["include"];
                assert!(
                    include
                        .as_array()
                        .unwrap()
                        .contains(&json!("web_search_call.action.sources")),
                    "{include}"
                );
            }
            _ => assert_eq!(
                search,
                [&json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})]
            ),
        }
        let off = requests[1].body.to_string();
        assert!(!off.contains("web_search"), "off by default: {off}");
    }

    // What each API streams back becomes one block per search, kept in the message.
    let fixture = include_str!("fixtures/anthropic_web_search.sse");
    let (events, message) = replay_fixture(Api::AnthropicMessages, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert!(
        message.tool_calls().next().is_none(),
        "not a tool call of ours"
    );
    let searches: Vec<&llm::WebSearch> = message
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::WebSearch(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0].query, "ratatui 0.30 release notes");
    let urls: Vec<&str> = searches[0].sources.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://github.com/ratatui/ratatui/releases/tag/v0.30.0",
            "https://ratatui.rs/highlights/v030/"
        ]
    );
    assert_eq!(searches[0].sources[1].title, "Ratatui 0.30 highlights");
    assert_eq!(
        message.text(),
        "Let me search for that.\n0.30 splits the crate into a core and widgets."
    );
    assert_eq!(
        count(&events, |e| matches!(e, StreamEvent::WebSearch { .. })),
        1
    );

    let fixture = include_str!("fixtures/responses_web_search.sse");
    let (_, message) = replay_fixture(Api::OpenaiResponses, fixture).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let AssistantContent::WebSearch(search) = &message.content[0] else {
        panic!("{:?}", message.content);
    };
    assert_eq!(search.query, "tokio 1.48 changelog");
    assert_eq!(search.sources.len(), 2);
    assert_eq!(message.text(), "Tokio 1.48 adds a new sync primitive.");
    let AssistantContent::WebSearch(cited) = message.content.last().unwrap() else {
        panic!("the cited sources last: {:?}", message.content);
    };
    assert_eq!(cited.query, "");
    assert_eq!(cited.sources[0].title, "Releases · tokio-rs/tokio");

    // A search is shown and kept, never sent back: the next request carries the text only.
    for api in [Api::OpenaiResponses, Api::AnthropicMessages] {
        let server = serve(vec![Reply::text("ok")]).await;
        let mut context = support::context();
        context.messages.push(Message::Assistant(message.clone()));
        context
            .messages
            .push(Message::User(UserMessage::text("more")));
        let stream = llm::Router::new().stream(
            &model(&server, api),
            context,
            options(),
            CancellationToken::new(),
        );
        support::drain(stream).await;
        let body = server.requests()[0].body.to_string();
        assert!(!body.contains("tokio 1.48 changelog"), "{api}: {body}");
        assert!(
            body.contains("Tokio 1.48 adds a new sync primitive."),
            "{api}"
        );
    }
}
