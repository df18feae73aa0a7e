//! Images in: `-i`, RPC `images`, `@shot.png` and a dropped path in the TUI reach each wire
//! API's request as its image block, scaled when too large, stored once in the session and
//! sent again after a resume; a model that takes no image is refused before any request.
#![cfg(unix)]

use std::path::Path;

use base64::Engine as _;
use mock_llm::{MockServer, Reply};
use serde_json::{Value, json};

mod common;

use common::pty::Session;
use common::rpc::Rpc;
use common::*;

/// A PNG of `width` × `height` with some detail (so it does not compress to nothing).
fn png(width: u32, height: u32) -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x ^ y) % 239) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The base64 data of every image in a request body, whatever the wire API.
fn images_in(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![body];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                // chat completions `image_url.url`, responses `image_url`: data URLs.
                for key in ["url", "image_url"] {
                    if let Some(url) = map.get(key).and_then(Value::as_str)
                        && let Some((_, data)) = url.split_once(";base64,")
                    {
                        found.push(data.to_string());
                    }
                }
                // Anthropic: `source.data`.
                if map.get("type").and_then(Value::as_str) == Some("base64")
                    && let Some(data) = map.get("data").and_then(Value::as_str)
                {
                    found.push(data.to_string());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found
}

/// The flags that reach the mock as `model` through `api`.
fn model_args<'a>(server: &'a MockServer, model: &'a str, api: &'a str) -> Vec<String> {
    ["--base-url", &server.url(), "--model", model, "--api", api]
        .map(str::to_string)
        .to_vec()
}

#[tokio::test]
async fn each_wire_api_carries_an_image_given_with_dash_i() {
    let shot = png(64, 40);
    for (model, api, block) in [
        ("gpt-5-mini", "openai-completions", "image_url"),
        ("gpt-5-mini", "openai-responses", "input_image"),
        ("claude-haiku-4-5", "anthropic-messages", "image"),
    ] {
        let env = Env::new();
        std::fs::write(env.work.path().join("my shot.png"), &shot).unwrap();
        let server = serve(vec![Reply::text("A chart.")]).await;
        let mut args = model_args(&server, model, api);
        args.extend(["-p", "what is this?", "-i", "my shot.png"].map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(None, &args, "").await;
        assert!(out.status.success(), "{api}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "A chart.\n");
        let body = &server.requests()[0].body;
        assert_eq!(images_in(body), [base64(&shot)], "{api}: {body}");
        assert!(
            body.to_string().contains(&format!("\"type\":\"{block}\"")),
            "{api}"
        );
        assert!(body.to_string().contains("what is this?"), "{api}");

        // The session holds the image once, by hash, beside its file, not in it.
        let sessions = env.sessions();
        let file = std::fs::read_to_string(&sessions[0]).unwrap();
        assert!(
            !file.contains(&base64(&shot)[..40]),
            "{api}: no bytes in the file"
        );
        let stored = session::images_dir(&sessions[0]);
        assert_eq!(std::fs::read_dir(&stored).unwrap().count(), 1, "{api}");

        // Resumed, the next request sends it again, read from where it was stored.
        let server2 = serve(vec![Reply::text("Still a chart.")]).await;
        let mut args = model_args(&server2, model, api);
        args.extend(["--continue", "-p", "and now?"].map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(None, &args, "").await;
        assert!(out.status.success(), "{api}: {}", text(&out.stderr));
        assert_eq!(
            images_in(&server2.requests()[0].body),
            [base64(&shot)],
            "{api}"
        );
    }
}

#[tokio::test]
async fn an_image_larger_than_the_api_takes_is_scaled_down_keeping_its_shape() {
    let env = Env::new();
    std::fs::write(env.work.path().join("wide.png"), png(3000, 1200)).unwrap();
    let server = serve(vec![Reply::text("Wide.")]).await;
    let mut args = model_args(&server, "claude-haiku-4-5", "anthropic-messages");
    args.extend(["-p", "look", "-i", "wide.png"].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(None, &args, "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = images_in(&server.requests()[0].body);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&sent[0])
        .unwrap();
    let image = image::load_from_memory(&bytes).unwrap();
    assert_eq!((image.width(), image.height()), (2000, 800));
}

#[tokio::test]
async fn a_model_without_image_input_is_refused_before_any_request() {
    let env = Env::new();
    std::fs::write(env.work.path().join("shot.png"), png(10, 10)).unwrap();
    std::fs::write(env.work.path().join("notes.txt"), "not an image").unwrap();
    let server = serve(vec![Reply::text("never")]).await;
    let mut args = model_args(&server, "deepseek-chat", "openai-completions");
    args.extend(["-p", "look", "-i", "shot.png"].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(None, &args, "").await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("deepseek-chat does not take images"),
        "{stderr}"
    );

    // A file that is not an image is named as such, also for a model that takes images.
    let mut args = model_args(&server, "gpt-5-mini", "openai-completions");
    args.extend(["-p", "look", "-i", "notes.txt"].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(None, &args, "").await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not an image"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.requests().is_empty(), "no request was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_messages_take_images_and_mentions_and_refuse_bad_data() {
    let env = Env::new();
    let shot = png(30, 20);
    let other = png(12, 12);
    std::fs::write(env.work.path().join("ui.png"), &other).unwrap();
    let server = serve(vec![Reply::text("Seen."), Reply::text("Seen again.")]).await;
    let mut args = model_args(&server, "gpt-5-mini", "openai-completions");
    args.extend(["--mode", "rpc"].map(str::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut rpc = Rpc::spawn(env.command(None, &args));

    let response = rpc.call(
        1,
        json!({"type": "prompt", "message": "compare with @ui.png",
               "images": [{"data": base64(&shot), "mime_type": "image/png"}]}),
    );
    assert_eq!(response["success"], true, "{response}");
    rpc.event("agent_end");
    assert_eq!(
        images_in(&server.requests()[0].body),
        [base64(&shot), base64(&other)]
    );

    let bad = rpc.call(
        2,
        json!({"type": "follow_up", "message": "x", "images": [{"data": "%%%", "mime_type": "image/png"}]}),
    );
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("not base64"),
        "{bad}"
    );
    let text_file = rpc.call(
        3,
        json!({"type": "steer", "message": "x", "images": [{"data": base64(b"hello"), "mime_type": "image/png"}]}),
    );
    assert_eq!(text_file["success"], false);
    assert!(
        text_file["error"]
            .as_str()
            .unwrap()
            .contains("not an image")
    );
    assert_eq!(
        server.requests().len(),
        1,
        "refused commands made no request"
    );
    rpc.finish();
}

/// The TUI on a model that takes images, with `prepare` filling the work directory.
fn tui_on(server: &MockServer, model: &str) -> Session {
    Session::start_bare(
        &["--base-url", &server.url(), "--model", model],
        &[("CODING_AGENT_LOCAL_PROBES", "")],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_path_with_spaces_becomes_a_chip_and_goes_with_the_message() {
    let server = serve(vec![Reply::text("It is a button.")]).await;
    let mut session = tui_on(&server, "gpt-5-mini");
    session.wait_for("Type a message");
    let shot = png(64, 40);
    let dir = session.dir.path().to_path_buf();
    std::fs::write(dir.join("my shot.png"), &shot).unwrap();
    std::fs::write(dir.join("notes.txt"), "text").unwrap();

    // A path that is not an image stays text.
    session.send("\x1b[200~notes.txt\x1b[201~");
    session.wait_for("notes.txt");
    // Dropped as terminals do: quoted, the full path.
    let quoted = format!("'{}'", dir.join("my shot.png").display());
    session.send(&format!("\x1b[200~{quoted}\x1b[201~"));
    session.wait_for("[image #1 · PNG 64×40");
    // Backspace after the chip's space, then after the chip: the chip goes whole.
    session.send("\x7f\x7f");
    session.wait_gone("[image #1");
    session.send(&format!("\x1b[200~{quoted}\x1b[201~"));
    session.wait_for("[image #2 · PNG 64×40");
    session.type_text("what is this?");
    session.send("\r");
    session.wait_for("It is a button.");
    let body = &server.requests()[0].body;
    assert_eq!(
        images_in(body),
        [base64(&shot)],
        "one image: the removed one is not sent"
    );
    // (The responses API: the prompt is the last input item.)
    let user = body["input"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        user.contains("notes.txt") && user.contains("what is this?"),
        "{user}"
    );
    assert!(
        !user.contains("[image #"),
        "the chip is not sent as text: {user}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_refuses_an_image_for_a_model_without_image_input() {
    let server = serve(vec![Reply::text("never")]).await;
    let mut session = tui_on(&server, "deepseek-chat");
    session.wait_for("Type a message");
    let path = session.dir.path().join("shot.png");
    std::fs::write(&path, png(8, 8)).unwrap();
    session.send(&format!("\x1b[200~{}\x1b[201~", path.display()));
    session.wait_for("[image #1 · PNG 8×8");
    session.send("\r");
    session.wait_for("deepseek-chat does not take images");
    // Still in the editor, and nothing was sent.
    assert!(session.contents().contains("[image #1"));
    assert!(server.requests().is_empty());
}

#[test]
fn a_pasted_path_is_resolved_from_the_working_directory() {
    // The rule the TUI uses, on the path the terminal would paste for a file dropped from
    // the project: relative, with an escaped space.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a b.png"), png(2, 2)).unwrap();
    let found = attach::pasted_paths("a\\ b.png", dir.path()).unwrap();
    assert_eq!(found, [dir.path().join("a b.png")]);
    assert_eq!(attach::pasted_paths("a b.png", Path::new("/")), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_v_without_a_display_says_why_no_image_was_pasted() {
    // The test terminal has no display server (the harness removes DISPLAY, WAYLAND_DISPLAY
    // and SSH's variables): Ctrl+V says so rather than failing silently. (Over SSH the
    // reason names SSH: a unit test of `platform::clipboard`.)
    let server = serve(vec![Reply::text("never")]).await;
    let mut session = tui_on(&server, "gpt-5-mini");
    session.wait_for("Type a message");
    session.send("\x16");
    session.wait_for("No image pasted: there is no display server here");
    assert!(!session.contents().contains("[image #"));
    assert!(server.requests().is_empty());
}
