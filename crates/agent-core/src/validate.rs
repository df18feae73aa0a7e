//! Checks tool arguments against the `required` fields and `type`s of a JSON schema.
//!
//! A full JSON-schema validator is the most expensive crate of the ecosystem to build; tool
//! schemas use a small subset, so this covers `type`, `required`, `properties`, `items` and
//! `enum`. Strings that spell a number or boolean where one is expected are converted, because
//! small models often quote them.

use serde_json::Value;

/// What is wrong with a tool call's arguments: one line per problem, each naming the
/// offending path and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct InvalidArguments {
    pub problems: Vec<String>,
}

/// Validates `args` in place (converting quoted numbers and booleans).
pub fn validate_arguments(schema: &Value, args: &mut Value) -> Result<(), InvalidArguments> {
    let mut problems = Vec::new();
    check(schema, args, "", &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(InvalidArguments { problems })
    }
}

fn check(schema: &Value, value: &mut Value, path: &str, problems: &mut Vec<String>) {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| matches_type(t, value)) {
        match types.iter().find_map(|t| coerce(t, value)) {
            Some(converted) => *value = converted,
            None => {
                let name = display_path(path);
                problems.push(format!(
                    "{name} must be {}, got {}",
                    types.join(" or "),
                    type_name(value)
                ));
                return;
            }
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        problems.push(format!(
            "{} must be one of {}",
            display_path(path),
            list.join(", ")
        ));
    }
    match value {
        Value::Object(map) => {
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for name in required.iter().filter_map(Value::as_str) {
                    if map.get(name).is_none_or(Value::is_null) {
                        let missing = display_path(&join(path, name));
                        problems.push(format!("missing required property {missing}"));
                    }
                }
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    if let Some(v) = map.get_mut(name).filter(|v| !v.is_null()) {
                        check(sub, v, &join(path, name), problems);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

fn matches_type(t: &str, value: &Value) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    }
}

fn coerce(t: &str, value: &Value) -> Option<Value> {
    match (t, value) {
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        // 3.0 is an integer to a model.
        ("integer", Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| Value::from(f as i64)),
        ("number", Value::String(s)) => s.trim().parse::<f64>().ok().map(Value::from),
        ("boolean", Value::String(s)) => match s.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "arguments".to_string()
    } else {
        format!("`{path}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "edits": {"type": "array", "items": {
                    "type": "object", "required": ["old_text"],
                    "properties": {"old_text": {"type": "string"}}
                }}
            }
        })
    }

    #[test]
    fn accepts_valid_arguments() {
        let mut args = json!({"path": "a", "limit": 3, "edits": [{"old_text": "x"}]});
        assert_eq!(validate_arguments(&schema(), &mut args), Ok(()));
    }

    #[test]
    fn reports_missing_required_and_wrong_types() {
        let mut args = json!({"limit": "many", "mode": "c"});
        let err = validate_arguments(&schema(), &mut args)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing required property `path`"), "{err}");
        assert!(err.contains("`limit` must be integer, got string"), "{err}");
        assert!(err.contains("`mode` must be one of"), "{err}");
    }

    #[test]
    fn checks_nested_items() {
        let mut args = json!({"path": "a", "edits": [{"new_text": "y"}]});
        let err = validate_arguments(&schema(), &mut args)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`edits[0].old_text`"), "{err}");
    }

    #[test]
    fn converts_quoted_numbers() {
        let mut args = json!({"path": "a", "limit": "20"});
        validate_arguments(&schema(), &mut args).unwrap();
        assert_eq!(args["limit"], 20);
    }

    #[test]
    fn arguments_must_be_an_object() {
        let mut args = json!("path");
        let err = validate_arguments(&schema(), &mut args).unwrap_err();
        assert_eq!(err.to_string(), "arguments must be object, got string");
    }
}
