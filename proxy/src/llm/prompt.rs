//! What the router reads of an OpenAI-compatible request body: the prompt
//! (token ids, or text), `max_tokens` and `stream`, and the prompt's blocks
//! as chained [`BlockKey`]s.

use serde::Deserialize;
use serde::de::{self, SeqAccess, Visitor};
use serde_json::Value;
use workerpick::prefix::{BlockKey, keys_of_tokens};

/// The paths whose bodies are read.
pub fn is_llm_path(path: &str) -> bool {
    matches!(path, "/v1/completions" | "/v1/chat/completions")
}

/// A request's prompt as the router keys it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// `prompt` given as an array of token ids.
    Tokens(Vec<u32>),
    /// `prompt` as a string (or an array of strings, joined), or a chat's
    /// `messages` contents joined in order, each followed by a newline.
    Text(String),
}

/// What the router reads of one body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The prompt.
    pub prompt: Prompt,
    /// `max_tokens` (or `max_completion_tokens`), when given.
    pub max_tokens: Option<u64>,
    /// The model's name, part of a text block's key (see [`keys`]).
    pub model: String,
}

/// Why a body is refused (400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

/// Reads `body` as a request to `path` (one of [`is_llm_path`]).
///
/// A completion body is read typed, in one pass that keeps only what is
/// read (a 4 000-token prompt: ~2x faster than a JSON tree); a body that
/// pass does not take (a chat, a field of another type, a duplicate key,
/// anything invalid) is read as a tree, which gives the answer and its
/// reasons: both readings agree wherever the first succeeds.
pub fn parse(path: &str, body: &[u8]) -> Result<Parsed, Invalid> {
    if path == "/v1/chat/completions" {
        return parse_tree(path, body);
    }
    match serde_json::from_slice::<Completion>(body) {
        Ok(c) => {
            let max_tokens = match c.max_tokens {
                Some(given) => given.as_u64(),
                None => c.max_completion_tokens.as_ref().and_then(Value::as_u64),
            };
            let Some(TypedPrompt(prompt)) = c.prompt else {
                return Err(missing_prompt());
            };
            Ok(Parsed {
                prompt,
                max_tokens,
                model: c.model.unwrap_or_default(),
            })
        }
        Err(_) => parse_tree(path, body),
    }
}

/// What the typed pass reads of a completion body (other fields are
/// skipped; a field of another type fails the pass).
#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    prompt: Option<TypedPrompt>,
    #[serde(default)]
    model: Option<String>,
    /// Present (even `null`) or not: as the tree reading's `get`.
    #[serde(default, deserialize_with = "present")]
    max_tokens: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_completion_tokens: Option<Value>,
}

fn present<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A completion's `prompt`: a string, token ids (read straight into the
/// vector), or strings (joined); anything else fails the pass.
struct TypedPrompt(Prompt);

impl<'de> Deserialize<'de> for TypedPrompt {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PromptVisitor).map(TypedPrompt)
    }
}

struct PromptVisitor;

impl<'de> Visitor<'de> for PromptVisitor {
    type Value = Prompt;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string, or a non-empty array of token ids or of strings")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Prompt, E> {
        Ok(Prompt::Text(s.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Prompt, A::Error> {
        match seq.next_element::<TokenOrText>()? {
            Some(TokenOrText::Token(first)) => {
                let mut ids = Vec::with_capacity(seq.size_hint().unwrap_or(0).max(256) + 1);
                ids.push(first);
                while let Some(t) = seq.next_element::<u32>()? {
                    ids.push(t);
                }
                Ok(Prompt::Tokens(ids))
            }
            Some(TokenOrText::Text(first)) => {
                let mut text = first;
                while let Some(part) = seq.next_element::<&str>()? {
                    text.push_str(part);
                }
                Ok(Prompt::Text(text))
            }
            None => Err(de::Error::invalid_length(0, &self)),
        }
    }
}

/// A prompt array's first element, which says what the rest are.
enum TokenOrText {
    Token(u32),
    Text(String),
}

impl<'de> Deserialize<'de> for TokenOrText {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct First;
        impl<'de> Visitor<'de> for First {
            type Value = TokenOrText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a token id or a string")
            }
            fn visit_u64<E: de::Error>(self, t: u64) -> Result<TokenOrText, E> {
                u32::try_from(t)
                    .map(TokenOrText::Token)
                    .map_err(|_| E::custom("a token id over 2^32"))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TokenOrText, E> {
                Ok(TokenOrText::Text(s.to_owned()))
            }
        }
        d.deserialize_any(First)
    }
}

/// Reads `body` as a JSON tree: every body the typed pass does not take.
fn parse_tree(path: &str, body: &[u8]) -> Result<Parsed, Invalid> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Invalid(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(map) = &value else {
        return Err(Invalid("the body is not a JSON object".into()));
    };
    let prompt = if path == "/v1/chat/completions" {
        chat_text(map.get("messages"))?
    } else {
        completion_prompt(map.get("prompt"))?
    };
    let max_tokens = map
        .get("max_tokens")
        .or_else(|| map.get("max_completion_tokens"))
        .and_then(Value::as_u64);
    let model = map
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Parsed {
        prompt,
        max_tokens,
        model,
    })
}

fn missing_prompt() -> Invalid {
    Invalid("`prompt` is required: a string or an array of token ids".into())
}

fn completion_prompt(prompt: Option<&Value>) -> Result<Prompt, Invalid> {
    let missing = missing_prompt;
    match prompt.ok_or_else(missing)? {
        Value::String(s) => Ok(Prompt::Text(s.clone())),
        Value::Array(items) if items.is_empty() => Err(missing()),
        Value::Array(items) if items[0].is_number() => items
            .iter()
            .map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
            .collect::<Option<Vec<u32>>>()
            .map(Prompt::Tokens)
            .ok_or_else(|| Invalid("`prompt`: token ids are whole numbers below 2^32".into())),
        Value::Array(items) => items
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
            .map(|parts| Prompt::Text(parts.concat()))
            .ok_or_else(|| Invalid("`prompt`: an array of strings or of token ids".into())),
        _ => Err(missing()),
    }
}

fn chat_text(messages: Option<&Value>) -> Result<Prompt, Invalid> {
    let Some(Value::Array(messages)) = messages else {
        return Err(Invalid("`messages` is required: an array of messages".into()));
    };
    if messages.is_empty() {
        return Err(Invalid("`messages` is empty".into()));
    }
    let mut text = String::new();
    for m in messages {
        match m.get("content") {
            Some(Value::String(s)) => text.push_str(s),
            // Content parts: their text, in order.
            Some(Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        text.push_str(t);
                    }
                }
            }
            _ => {}
        }
        text.push('\n');
    }
    Ok(Prompt::Text(text))
}

/// The extra word of a token block's key, and of the keys an engine's KV
/// events give its blocks (the applier's `key_salt`): a token block and a
/// text block never share a key.
pub const TOKENS: u64 = 0x746f_6b65_6e73_0001;
/// The extra word of a text block's key (with the model's name folded in).
const TEXT: u64 = 0x7465_7874_0000_0002;

/// The prompt's full blocks as chained keys (a tail shorter than a block is
/// not keyed): token ids `block_tokens` at a time, text `block_chars`
/// characters (Unicode scalar values) at a time. A text block's key holds
/// the model's name; a token block's does not, as an engine's KV events
/// name no model (the upstreams behind one `serve` serve one model).
/// `scratch` holds the characters between calls.
pub fn keys(
    parsed: &Parsed,
    block_tokens: usize,
    block_chars: usize,
    scratch: &mut Vec<u32>,
    out: &mut Vec<BlockKey>,
) {
    out.clear();
    match &parsed.prompt {
        Prompt::Tokens(t) => {
            keys_of_tokens(t, block_tokens, TOKENS, out);
        }
        Prompt::Text(s) => {
            scratch.clear();
            scratch.extend(s.chars().map(u32::from));
            keys_of_tokens(scratch, block_chars, TEXT ^ fold(parsed.model.as_bytes()), out);
        }
    }
}

/// FNV-1a: a model name as a key's extra word.
fn fold(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An OpenAI-style error body.
pub fn error_body(message: &str, kind: &str) -> String {
    serde_json::json!({
        "error": { "message": message, "type": kind, "param": null, "code": null }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(path: &str, body: &str) -> Vec<BlockKey> {
        let parsed = parse(path, body.as_bytes()).unwrap();
        let mut out = Vec::new();
        keys(&parsed, 2, 4, &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn token_prompts_are_keyed_a_block_at_a_time_and_chained() {
        let a = keyed("/v1/completions", r#"{"model":"m","prompt":[1,2,3,4,5]}"#);
        let b = keyed("/v1/completions", r#"{"model":"m","prompt":[1,2,3,4,9,9]}"#);
        assert_eq!(a.len(), 2); // the tail token is not a block
        assert_eq!(b.len(), 3);
        assert_eq!(a[..2], b[..2]);
        let c = keyed("/v1/completions", r#"{"model":"m","prompt":[1,2,9,4]}"#);
        assert_eq!(c[0], a[0]);
        assert_ne!(c[1], a[1]);
        let other = keyed("/v1/completions", r#"{"model":"n","prompt":[1,2,3,4]}"#);
        assert_eq!(other[0], a[0], "keyed as the engine's events key them: no model");
        let mut engine = Vec::new();
        keys_of_tokens(&[1, 2, 3, 4], 2, TOKENS, &mut engine);
        assert_eq!(engine, a);
        let text = keyed("/v1/completions", r#"{"model":"m","prompt":"abcd"}"#);
        let other = keyed("/v1/completions", r#"{"model":"n","prompt":"abcd"}"#);
        assert_ne!(text[0], other[0], "the model is part of a text block's key");
    }

    #[test]
    fn chat_messages_are_joined_in_order_and_cut_in_characters() {
        let chat = r#"{"messages":[{"role":"system","content":"abc"},{"role":"user","content":[{"type":"text","text":"déf"}]}]}"#;
        let parsed = parse("/v1/chat/completions", chat.as_bytes()).unwrap();
        assert_eq!(parsed.prompt, Prompt::Text("abc\ndéf\n".into()));
        assert_eq!(keyed("/v1/chat/completions", chat).len(), 2); // 8 characters
        let text = keyed("/v1/completions", r#"{"prompt":"abc\ndéf\n"}"#);
        assert_eq!(text, keyed("/v1/chat/completions", chat));
    }

    #[test]
    fn the_typed_pass_reads_as_the_tree_does() {
        let bodies = [
            r#"{"model":"m","prompt":[1,2,3,4,5],"max_tokens":7}"#,
            r#"{"prompt":"abc","max_completion_tokens":3}"#,
            r#"{"prompt":["ab","cd"],"model":"x","stream":true,"extra":{"a":[1,{"b":null}]}}"#,
            r#"{"prompt":[1,2],"max_tokens":null,"max_completion_tokens":5}"#,
            r#"{"prompt":[1,2],"max_tokens":"5"}"#,
            r#"{"prompt":[1,2],"max_tokens":1.5}"#,
            r#"{"prompt":[1,2],"model":7}"#,
            r#"{"prompt":[1,2],"prompt":"dup"}"#,
            r#"{"prompt":[4294967295]}"#,
            r#"{"prompt":[4294967296]}"#,
            r#"{"prompt":[1,"a"]}"#,
            r#"{"prompt":["a",1]}"#,
            r#"{"prompt":[1.0]}"#,
            r#"{"prompt":[]}"#,
            r#"{"prompt":null}"#,
            r#"{"prompt":{"a":1}}"#,
            r#"{"model":"m"}"#,
            r#"{"prompt":"é
A"}"#,
            r#"[1,2]"#,
            r#"{"prompt":[1,2]} trailing"#,
        ];
        for body in bodies {
            assert_eq!(
                parse("/v1/completions", body.as_bytes()),
                parse_tree("/v1/completions", body.as_bytes()),
                "{body}"
            );
        }
        // The typed pass took the common bodies itself.
        for body in &bodies[..4] {
            assert!(
                serde_json::from_slice::<Completion>(body.as_bytes()).is_ok(),
                "{body}"
            );
        }
    }

    #[test]
    fn bad_bodies_say_why() {
        for (path, body) in [
            ("/v1/completions", "{not json"),
            ("/v1/completions", "[1,2]"),
            ("/v1/completions", r#"{"model":"m"}"#),
            ("/v1/completions", r#"{"prompt":[]}"#),
            ("/v1/completions", r#"{"prompt":[1,-2]}"#),
            ("/v1/completions", r#"{"prompt":[1,"a"]}"#),
            ("/v1/chat/completions", r#"{"prompt":"x"}"#),
            ("/v1/chat/completions", r#"{"messages":[]}"#),
        ] {
            assert!(parse(path, body.as_bytes()).is_err(), "{body}");
        }
        assert!(
            parse("/v1/completions", b"{\"prompt\":\"\xff\"}").is_err(),
            "not UTF-8"
        );
        let e: Value = serde_json::from_str(&error_body("no", "invalid_request_error")).unwrap();
        assert_eq!(e["error"]["type"], "invalid_request_error");
    }
}
