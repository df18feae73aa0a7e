//! Reading validated arguments (the loop checked types against the schema already).

use serde_json::Value;

pub(crate) fn str_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

pub(crate) fn required_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    str_arg(args, name).ok_or_else(|| format!("missing required argument `{name}`"))
}

pub(crate) fn usize_arg(args: &Value, name: &str) -> Option<usize> {
    args.get(name)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

pub(crate) fn bool_arg(args: &Value, name: &str) -> bool {
    args.get(name).and_then(Value::as_bool).unwrap_or(false)
}
