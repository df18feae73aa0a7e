//! The fetch tool against a real HTTP server on 127.0.0.1 (allowed by name, as a user's
//! "always allow" does), and the refusals of private addresses.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// What the test server answers for a path: status line, headers, body, and whether the
/// body trickles (one byte a second).
struct Page {
    status: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    slow: bool,
}

fn page(path: &str, port: u16) -> Page {
    let html = |body: &str| Page {
        status: "200 OK",
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: body.as_bytes().to_vec(),
        slow: false,
    };
    let redirect = |to: String| Page {
        status: "302 Found",
        headers: vec![("location".into(), to)],
        body: Vec::new(),
        slow: false,
    };
    match path {
        "/doc" => html(
            "<!doctype html><html><head><title>T</title><style>body{color:red}</style>\
             <script>alert('boom')</script></head><body><h1>Install</h1>\
             <p>Run <code>cargo add serde</code> first.</p><script>var secret=1;</script>\
             <ul><li>one</li><li>two</li></ul></body></html>",
        ),
        "/loop" => redirect("/loop".into()),
        "/hop" => redirect("/doc".into()),
        "/away" => redirect(format!("http://localhost:{port}/doc")),
        "/huge" => Page {
            status: "200 OK",
            headers: vec![("content-type".into(), "text/plain".into())],
            body: "all work and no play\n"
                .repeat(50 * 1024 * 1024 / 21)
                .into_bytes(),
            slow: false,
        },
        "/slow" => Page {
            status: "200 OK",
            headers: vec![("content-type".into(), "text/plain".into())],
            body: b"tick tick tick".to_vec(),
            slow: true,
        },
        "/latin1" => Page {
            status: "200 OK",
            headers: vec![(
                "content-type".into(),
                "text/html; charset=iso-8859-1".into(),
            )],
            // "Café crème" in Latin-1.
            body: b"<html><body><p>Caf\xe9 cr\xe8me</p></body></html>".to_vec(),
            slow: false,
        },
        // Ten thousand nested elements: converted, it would overflow a stack.
        "/deep" => html(&format!(
            "{}bottom{}",
            "<div>".repeat(10_000),
            "</div>".repeat(10_000)
        )),
        "/binary" => Page {
            status: "200 OK",
            headers: vec![("content-type".into(), "image/png".into())],
            body: vec![0x89, b'P', b'N', b'G', 0, 0, 0, 1],
            slow: false,
        },
        _ => Page {
            status: "404 Not Found",
            headers: vec![("content-type".into(), "text/plain".into())],
            body: b"no such page".to_vec(),
            slow: false,
        },
    }
}

/// Serves [`page`] on 127.0.0.1 until the test ends.
async fn serve() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
                let page = page(&path, addr.port());
                let mut head = format!(
                    "HTTP/1.1 {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                    page.status,
                    page.body.len()
                );
                for (name, value) in &page.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                if page.slow {
                    for byte in page.body {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        if stream.write_all(&[byte]).await.is_err() {
                            return;
                        }
                    }
                } else {
                    let _ = stream.write_all(&page.body).await;
                }
            });
        }
    });
    addr
}

/// The tool, with `allowed` hosts allowed by name.
fn tool(allowed: &'static [&'static str]) -> FetchTool {
    FetchTool::new(FetchOptions {
        host_allowed: Arc::new(move |host| allowed.contains(&host)),
        timeout: Duration::from_secs(3),
    })
}

async fn run(tool: &FetchTool, url: &str) -> Result<String, String> {
    let ctx = ToolContext::new("t", tokio_util::sync::CancellationToken::new(), |_| {});
    tool.execute(json!({ "url": url }), ctx)
        .await
        .map(|out| out.plain_text())
        .map_err(|e| e.0)
}

#[tokio::test]
async fn a_page_comes_as_markdown_without_its_scripts_and_styles() {
    let addr = serve().await;
    let out = run(&tool(&["127.0.0.1"]), &format!("http://{addr}/doc"))
        .await
        .unwrap();
    assert!(
        out.starts_with(&format!("GET http://{addr}/doc → 200 OK")),
        "{out}"
    );
    assert!(out.contains("# Install"), "{out}");
    assert!(out.contains("`cargo add serde`"), "{out}");
    assert!(out.contains("one") && out.contains("two"), "{out}");
    for hidden in ["alert", "secret", "color:red"] {
        assert!(!out.contains(hidden), "{hidden} in {out}");
    }
}

#[tokio::test]
async fn redirects_are_followed_on_the_host_reported_off_it_and_a_loop_ends() {
    let addr = serve().await;
    let tool = tool(&["127.0.0.1", "localhost"]);
    let out = run(&tool, &format!("http://{addr}/hop")).await.unwrap();
    assert!(out.contains("# Install"), "{out}");
    assert!(out.contains("after 1 redirect(s)"), "{out}");
    let out = run(&tool, &format!("http://{addr}/away")).await.unwrap();
    assert!(out.contains("redirects to another host"), "{out}");
    assert!(!out.contains("# Install"), "{out}");
    let err = run(&tool, &format!("http://{addr}/loop"))
        .await
        .unwrap_err();
    assert!(err.contains("redirected more than 5 times"), "{err}");
}

#[tokio::test]
async fn a_huge_body_is_cut_and_a_slow_one_times_out() {
    let addr = serve().await;
    let tool = tool(&["127.0.0.1"]);
    let out = run(&tool, &format!("http://{addr}/huge")).await.unwrap();
    assert!(out.contains("(body cut at 5 MB)"), "{}", &out[..200]);
    assert!(
        out.len() < MAX_BYTES + 1024,
        "{} bytes reach the model",
        out.len()
    );
    assert!(out.contains("[cut: the first"), "the cut is said");
    let err = run(&tool, &format!("http://{addr}/slow"))
        .await
        .unwrap_err();
    assert!(err.contains("did not finish within 3s"), "{err}");
}

#[tokio::test]
async fn a_page_in_another_charset_is_decoded_and_binaries_are_not_shown() {
    let addr = serve().await;
    let tool = tool(&["127.0.0.1"]);
    let out = run(&tool, &format!("http://{addr}/latin1")).await.unwrap();
    assert!(out.contains("Café crème"), "{out}");
    let out = run(&tool, &format!("http://{addr}/binary")).await.unwrap();
    assert!(out.contains("not text"), "{out}");
    let out = run(&tool, &format!("http://{addr}/missing")).await.unwrap();
    assert!(
        out.contains("404 Not Found") && out.contains("no such page"),
        "{out}"
    );
}

/// The attacks: a model asking for the machine's own services, the cloud's metadata address,
/// a name that resolves to loopback, and a scheme that is not the web.
#[tokio::test]
async fn private_addresses_are_refused_unless_allowed_by_name() {
    let addr = serve().await;
    let tool = tool(&[]);
    for url in [
        format!("http://{addr}/doc"),
        format!("http://localhost:{}/doc", addr.port()),
        format!("http://[::1]:{}/doc", addr.port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/".to_string(),
    ] {
        let err = run(&tool, &url).await.unwrap_err();
        assert!(err.contains("private or loopback address"), "{url}: {err}");
    }
    let err = run(&tool, "file:///etc/passwd").await.unwrap_err();
    assert!(err.contains("only http and https"), "{err}");
    // Allowed by name: the name works; the same server by its address is still refused.
    let by_name = super::tests::tool(&["localhost"]);
    let out = run(&by_name, &format!("http://localhost:{}/doc", addr.port()))
        .await
        .unwrap();
    assert!(out.contains("# Install"), "{out}");
    assert!(run(&by_name, &format!("http://{addr}/doc")).await.is_err());
}

#[tokio::test]
async fn a_page_nested_too_deep_comes_as_text_and_the_agent_survives() {
    let addr = serve().await;
    let out = run(&tool(&["127.0.0.1"]), &format!("http://{addr}/deep"))
        .await
        .unwrap();
    assert!(out.contains("bottom"), "{}", &out[..out.len().min(300)]);
    assert!(!out.contains("<div>"));
}

#[test]
fn private_ranges_are_recognised() {
    for private in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fc00::1",
        "fd12::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "64:ff9b::a00:1",
        "2002:7f00:1::",
        "0.1.2.3",
        "198.18.0.1",
        "240.0.0.1",
        "224.0.0.1",
    ] {
        assert!(is_private(private.parse().unwrap()), "{private}");
    }
    for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "172.32.0.1"] {
        assert!(!is_private(public.parse().unwrap()), "{public}");
    }
}
