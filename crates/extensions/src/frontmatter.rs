//! YAML front matter: the `---` block that opens a `SKILL.md` or a prompt template.

use serde::de::DeserializeOwned;

/// Splits `text` into its front matter (parsed as `T`) and the body after it. Text without a
/// front matter block is all body, with `T::default()`.
pub fn split<T: DeserializeOwned + Default>(text: &str) -> Result<(T, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((T::default(), text));
    };
    // The closing `---` is a line of its own.
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            let meta = if yaml.trim().is_empty() {
                T::default()
            } else {
                serde_yaml_ng::from_str(yaml).map_err(|e| format!("front matter: {e}"))?
            };
            return Ok((meta, body));
        }
        offset += line.len();
    }
    Err("front matter: no closing `---` line".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Meta {
        name: Option<String>,
        description: Option<String>,
    }

    #[test]
    fn parses_front_matter_and_body() {
        let (meta, body): (Meta, _) =
            split("---\nname: pdf\ndescription: >\n  Fill PDF\n  forms.\n---\n# Body\n").unwrap();
        assert_eq!(meta.name.as_deref(), Some("pdf"));
        assert_eq!(meta.description.as_deref(), Some("Fill PDF forms.\n"));
        assert_eq!(body, "# Body\n");
    }

    #[test]
    fn no_front_matter_is_all_body_and_an_open_block_is_an_error() {
        let (meta, body): (Meta, _) = split("just text\n").unwrap();
        assert_eq!(meta, Meta::default());
        assert_eq!(body, "just text\n");
        assert!(split::<Meta>("---\nname: x\n").is_err());
        assert!(split::<Meta>("---\nname: [x\n---\n").is_err());
    }
}
