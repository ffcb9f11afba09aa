//! The API page: every documented operation, with a curl example of each.

use super::page_answer::page;
use crate::api_error::ApiResult;
use actix_web::HttpResponse;
use askama::Template;

pub(super) struct Operation {
    method: String,
    path: String,
    summary: String,
    responses: String,
    /// A command that calls it, made from the document.
    example: String,
}

#[derive(Template)]
#[template(path = "api.html")]
pub(super) struct ApiPage {
    operations: Vec<Operation>,
}

/// Every documented operation: (path, method, summary, response codes).
pub fn documented_operations() -> Vec<(String, String, String, Vec<String>)> {
    operations_of(&api_document())
        .into_iter()
        .map(|(path, method, op)| {
            let summary = op["summary"].as_str().unwrap_or_default().to_string();
            let codes = op["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            (path, method.to_uppercase(), summary, codes)
        })
        .collect()
}

pub(super) fn api_document() -> serde_json::Value {
    serde_json::from_str(crate::api::openapi::document_json()).unwrap_or_default()
}

/// The document's operations: path, method and the operation's object.
pub(super) fn operations_of(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    let mut out = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                out.push((path.clone(), method.clone(), op.clone()));
            }
        }
    }
    out
}

/// A `curl` command for an operation, made from the document (so it cannot drift from it):
/// path parameters as shell variables (`$ID`), the client id header when the operation takes
/// one, a multipart body's required fields (files as `@FILE`), and `-o` for an image.
pub(super) fn curl_example(
    doc: &serde_json::Value,
    path: &str,
    method: &str,
    op: &serde_json::Value,
) -> String {
    let mut url = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        url.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        url.push('$');
        url.push_str(&rest[open + 1..close].to_uppercase());
        rest = rest.get(close + 1..).unwrap_or_default();
    }
    url.push_str(rest);
    let mut parts = vec!["curl".to_string()];
    if method != "get" {
        parts.push(format!("-X {}", method.to_uppercase()));
    }
    let takes_client = op["parameters"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["name"] == "X-Client-Id"));
    if takes_client {
        parts.push("-H \"X-Client-Id: $ME\"".to_string());
    }
    let schema = &op["requestBody"]["content"]["multipart/form-data"]["schema"];
    let schema = match schema["$ref"].as_str() {
        Some(r) => doc
            .pointer(&r.trim_start_matches('#').replace("~1", "/"))
            .cloned()
            .unwrap_or_default(),
        None => schema.clone(),
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let binary = property["format"] == "binary" || property["items"]["format"] == "binary";
        if !required.contains(&name.as_str()) {
            continue;
        }
        if binary {
            let file = if name == "files" {
                "tiles.zip"
            } else {
                "photo.jpg"
            };
            parts.push(format!("-F {name}=@{file}"));
        } else {
            let example = property["example"].as_str().unwrap_or("...");
            parts.push(format!("-F {name}={example}"));
        }
    }
    // An image answered is saved to a file.
    let answers = op["responses"]["200"]["content"]
        .as_object()
        .map(|c| c.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    // Of several image types (a result in the job's format), PNG, the default.
    let image = answers
        .iter()
        .find(|k| *k == "image/png")
        .or_else(|| answers.iter().find(|k| k.starts_with("image/")));
    if let Some(kind) = image {
        let extension = kind.trim_start_matches("image/").replace("jpeg", "jpg");
        parts.push(format!("-o picture.{extension}"));
    }
    parts.push(format!("http://127.0.0.1:8080{url}"));
    parts.join(" ")
}

pub(super) async fn api() -> ApiResult<HttpResponse> {
    let doc = api_document();
    let operations = operations_of(&doc)
        .into_iter()
        .map(|(path, method, op)| {
            let codes: Vec<String> = op["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            Operation {
                example: curl_example(&doc, &path, &method, &op),
                method: method.to_uppercase(),
                path,
                summary: op["summary"].as_str().unwrap_or_default().to_string(),
                responses: codes.join(", "),
            }
        })
        .collect();
    page(&ApiPage { operations })
}
