//! The pages: their content types, caching and security headers, whether the
//! web assets were built into this binary (`cargo xtask web`) or not (then a
//! page says how to build them).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mandate_host::web::{CYTOSCAPE_STYLESHEET, PAGE_CSP, assets_built};
use reqwest::{Response, StatusCode};
use sha2::{Digest as _, Sha256};

use crate::helpers::{TestApp, expect_problem};

fn header<'a>(response: &'a Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

/// Asserts what every page carries and returns its text.
async fn page(app: &TestApp, path: &str) -> String {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    assert_eq!(
        header(&response, "content-type"),
        "text/html; charset=utf-8"
    );
    assert_eq!(header(&response, "content-security-policy"), PAGE_CSP);
    assert_eq!(header(&response, "x-content-type-options"), "nosniff");
    assert_eq!(header(&response, "referrer-policy"), "no-referrer");
    assert_eq!(header(&response, "cache-control"), "no-cache");
    response.text().await.unwrap()
}

/// Every `<script` tag of a page loads a file: no inline script.
fn scripts_are_files(html: &str) {
    for tag in html.split("<script").skip(1) {
        let end = tag.find('>').unwrap();
        assert!(tag[..end].contains(" src="), "inline script: <script{tag}");
        assert!(
            tag[end + 1..].starts_with("</script>"),
            "script body: {tag}"
        );
    }
}

/// The first `./assets/…` path in `html` ending in `suffix`.
fn asset_path(html: &str, suffix: &str) -> String {
    html.split('"')
        .find(|part| part.starts_with("./assets/") && part.ends_with(suffix))
        .unwrap_or_else(|| panic!("no asset ending in {suffix}"))
        .trim_start_matches('.')
        .to_owned()
}

#[test]
fn the_policy_is_strict() {
    for directive in [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval';",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(PAGE_CSP.contains(directive), "{directive}");
    }
    assert!(!PAGE_CSP.contains("unsafe-inline"));
    assert!(!PAGE_CSP.contains("'unsafe-eval'"));
}

#[test]
fn the_one_inline_style_allowed_is_the_graph_librarys() {
    let hash = STANDARD.encode(Sha256::digest(CYTOSCAPE_STYLESHEET.as_bytes()));
    assert!(
        PAGE_CSP.contains(&format!("style-src 'self' 'sha256-{hash}';")),
        "{PAGE_CSP}"
    );
}

#[tokio::test]
async fn pages_carry_the_policy_whether_built_or_not() {
    let app = TestApp::spawn().await;
    let index = page(&app, "/").await;
    let widget = page(&app, "/widget.html").await;
    for html in [&index, &widget] {
        assert!(html.contains("<link rel=\"icon\" href=\"data:,\">"));
        scripts_are_files(html);
    }
    if assets_built() {
        assert!(index.contains("<script type=\"module\""), "{index}");
        assert!(widget.contains("<mandate-verify"), "{widget}");
    } else {
        for html in [&index, &widget] {
            assert!(html.contains("not built"), "{html}");
            assert!(html.contains("cargo xtask serve"), "{html}");
        }
    }
}

#[tokio::test]
async fn assets_have_their_types_caching_and_etags() {
    let app = TestApp::spawn().await;
    if !assets_built() {
        for path in ["/mandate-verify.js", "/assets/index.js"] {
            let response = app.client.get(app.url(path)).send().await.unwrap();
            expect_problem(response, StatusCode::NOT_FOUND, "not_found").await;
        }
        return;
    }
    let index = app
        .client
        .get(app.url("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let module = app
        .client
        .get(app.url("/mandate-verify.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        header(&module, "content-type"),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(header(&module, "cache-control"), "no-cache");
    assert_eq!(header(&module, "access-control-allow-origin"), "*");
    let mut module = module.text().await.unwrap();
    // The widget names its .wasm, itself or in a chunk it imports (the
    // SDK's, which the dashboard shares).
    if !module.contains(".wasm") {
        let imported: Vec<String> = module
            .split("\"./assets/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|name| name.ends_with(".js"))
            .map(|name| format!("/assets/{name}"))
            .collect();
        for chunk in imported {
            let text = app
                .client
                .get(app.url(&chunk))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if text.contains(".wasm") {
                module = text;
                break;
            }
        }
    }
    let wasm_end = module.find(".wasm").expect("the widget names its .wasm") + ".wasm".len();
    let wasm_start = module[..wasm_end]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
        .map_or(0, |i| i + 1);
    let wasm_name = format!(
        "assets/{}",
        module[wasm_start..wasm_end]
            .trim_start_matches("./")
            .trim_start_matches("assets/")
    );

    for (path, content_type) in [
        (asset_path(&index, ".js"), "text/javascript; charset=utf-8"),
        (asset_path(&index, ".css"), "text/css; charset=utf-8"),
        (format!("/{wasm_name}"), "application/wasm"),
    ] {
        let response = app.client.get(app.url(&path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&response, "content-type"), content_type, "{path}");
        assert_eq!(
            header(&response, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(header(&response, "x-content-type-options"), "nosniff");
        let etag = header(&response, "etag").to_owned();
        let again = app
            .client
            .get(app.url(&path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.bytes().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn unknown_assets_are_problems() {
    let app = TestApp::spawn().await;
    for path in ["/assets/nothing-here.js", "/assets/../Cargo.toml"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        expect_problem(response, StatusCode::NOT_FOUND, "not_found").await;
    }
}
