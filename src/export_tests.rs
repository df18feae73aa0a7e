//! The exported page, parsed as a browser would (html5ever): the whole conversation is
//! there, and nothing a message carries becomes markup that runs or loads.

use agent_core::AgentMessage;
use html5ever::tendril::TendrilSink;
use llm::{AssistantBuilder, AssistantContent, ImageContent, ToolCall, ToolResultMessage};
use llm::{UserContent, UserMessage};
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use serde_json::json;

use super::*;

const HOSTILE: &str = "</script><script>alert(1)</script><img src=x onerror=alert(2)>";
const KEY: &str = "sk-export-test-key-0123456789";

fn conversation() -> Vec<AgentMessage> {
    let user = AgentMessage::User(UserMessage {
        content: vec![
            UserContent::Text {
                text: format!("fix it {HOSTILE} with {KEY}"),
            },
            UserContent::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            UserContent::Image(ImageContent::new("PHNjcmlwdD4=", "text/html")),
        ],
        timestamp: 0,
    });
    let mut assistant = AssistantBuilder::new("m", "p").snapshot(llm::StopReason::ToolUse);
    assistant.content = vec![
        AssistantContent::Thinking {
            thinking: "the user wants a fix".into(),
            signature: None,
        },
        AssistantContent::Text {
            text: format!(
                "Here is the plan <img src=x onerror=alert(3)> and [a link](javascript:alert(4)).\n\n\
                 ```rust\nfn main() {{ println!(\"{HOSTILE}\"); }}\n```\n\n\
                 ```js\nconst key = {KEY};\n```\n"
            ),
        },
        AssistantContent::ToolCall(ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: json!({"command": "cat notes.txt"}),
            invalid_arguments: None,
        }),
        AssistantContent::ToolCall(ToolCall {
            id: "c2".into(),
            name: "edit".into(),
            arguments: json!({"path": "src/lib.rs"}),
            invalid_arguments: None,
        }),
    ];
    let output = ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        content: vec![UserContent::Text {
            text: format!("notes say {HOSTILE}"),
        }],
        details: None,
        is_error: false,
        timestamp: 0,
    };
    let edit = ToolResultMessage {
        tool_call_id: "c2".into(),
        tool_name: "edit".into(),
        content: vec![UserContent::Text {
            text: "Edited src/lib.rs".into(),
        }],
        details: Some(json!({"diff": "--- a\n+++ b\n@@ -1 +1 @@\n-old <b>\n+new <i>\n"})),
        is_error: false,
        timestamp: 0,
    };
    vec![
        user,
        AgentMessage::Assistant(assistant),
        AgentMessage::ToolResult(output),
        AgentMessage::ToolResult(edit),
    ]
}

fn parse(html: &str) -> RcDom {
    html5ever::parse_document(RcDom::default(), Default::default()).one(html)
}

/// Every element: its name and attributes.
fn elements(node: &Handle, out: &mut Vec<(String, Vec<(String, String)>)>) {
    if let NodeData::Element { name, attrs, .. } = &node.data {
        out.push((
            name.local.to_string(),
            attrs
                .borrow()
                .iter()
                .map(|a| (a.name.local.to_string(), a.value.to_string()))
                .collect(),
        ));
    }
    for child in node.children.borrow().iter() {
        elements(child, out);
    }
}

fn text_of(node: &Handle, out: &mut String) {
    if let NodeData::Text { contents } = &node.data {
        out.push_str(&contents.borrow());
    }
    for child in node.children.borrow().iter() {
        text_of(child, out);
    }
}

#[test]
fn the_page_holds_the_conversation_and_nothing_it_carries_runs() {
    let redactor = agent_core::Redactor::new([KEY]);
    let page = render("a <session>", &conversation(), Format::Html, &redactor);
    let dom = parse(&page);
    let mut all = Vec::new();
    elements(&dom.document, &mut all);
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(!names.contains(&"script"), "{names:?}");
    for (name, attrs) in &all {
        for (attr, value) in attrs {
            assert!(!attr.starts_with("on"), "<{name} {attr}={value}>");
            if attr == "src" {
                assert!(
                    value.starts_with("data:image/png;base64,"),
                    "{name} src={value}"
                );
            }
            if attr == "href" {
                assert!(!value.starts_with("javascript:"), "{name} href={value}");
            }
        }
    }
    // Exactly one image: the PNG; the `text/html` "image" is named, not embedded.
    assert_eq!(names.iter().filter(|n| **n == "img").count(), 1);
    // The policy forbids scripts even if something slipped through.
    assert!(page.contains("default-src 'none'"));
    // The tool calls and the thinking fold: three <details>.
    assert_eq!(names.iter().filter(|n| **n == "details").count(), 3);
    let mut text = String::new();
    text_of(&dom.document, &mut text);
    for shown in [
        "fix it </script><script>alert(1)</script>",
        "notes say </script>",
        "cat notes.txt",
        "Here is the plan <img src=x onerror=alert(3)>",
        "+new <i>",
        "the user wants a fix",
        "[an image of type text/html]",
        "a <session>",
    ] {
        assert!(text.contains(shown), "{shown:?} not in the page's text");
    }
    // The key the agent knows is not in the file.
    assert!(!page.contains(KEY));
    assert!(text.contains("[redacted]"));
    // The diff is coloured by line, the code highlighted (inline styles).
    assert!(page.contains("<span class=\"add\">+new &lt;i&gt;</span>"));
    assert!(
        page.contains("<pre style=\"background-color:"),
        "syntect's block"
    );
}

#[test]
fn markdown_keeps_the_conversation_in_fences_longer_than_its_backticks() {
    let mut messages = conversation();
    if let AgentMessage::ToolResult(r) = &mut messages[2] {
        r.content = vec![UserContent::Text {
            text: "a ``` fence inside".into(),
        }];
    }
    let md = render(
        "s",
        &messages,
        Format::Md,
        &agent_core::Redactor::new([KEY]),
    );
    assert!(md.starts_with("# s\n"));
    assert!(md.contains("## You\n\nfix it"));
    assert!(md.contains("*(2 image(s) attached)*"));
    assert!(md.contains("**bash**\n\n```\ncat notes.txt\n```"));
    assert!(md.contains("````\na ``` fence inside\n````"), "{md}");
    assert!(!md.contains("the user wants a fix"), "thinking is left out");
    assert!(!md.contains(KEY));
}

#[test]
fn the_format_follows_the_extension() {
    assert_eq!(Format::of_path(Path::new("out.md")), Format::Md);
    assert_eq!(Format::of_path(Path::new("out.html")), Format::Html);
    assert_eq!(Format::of_path(Path::new("out")), Format::Html);
}

#[test]
fn a_stored_image_is_embedded_from_beside_the_session() {
    let home = tempfile::tempdir().unwrap();
    let model = llm::Model {
        id: "m".into(),
        provider: "p".into(),
        api: llm::Api::OpenaiCompletions,
        base_url: String::new(),
        context_window: 1000,
        max_output: 100,
        reasoning: false,
        images: true,
        cost: llm::ModelCost::default(),
    };
    let home = session::Home::new(home.path());
    let mut writer = session::SessionWriter::create(
        &home,
        std::path::Path::new("/p"),
        &model,
        llm::ThinkingLevel::Off,
    );
    let message = AgentMessage::User(UserMessage::with_images(
        "the screenshot".into(),
        vec![ImageContent::new("iVBORw0KGgoAAAA=", "image/png")],
    ));
    writer
        .record(&agent_core::AgentEvent::MessageEnd { message })
        .unwrap();
    let file = std::fs::read_to_string(writer.path()).unwrap();
    assert!(
        !file.contains("iVBORw0KGgoAAAA="),
        "stored beside, not in the file"
    );
    let mut page = Vec::new();
    let redactor = agent_core::Redactor::new([KEY]);
    stream(writer.path(), &mut page, Format::Html, &redactor).unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(
        page.contains("src=\"data:image/png;base64,iVBORw0KGgoAAAA=\""),
        "{page}"
    );
}
