//! Internally tagged enums (`{"type": "text", "text": "…"}`) read without serde's detour. For
//! such an enum serde's derive first copies the whole object into a buffer of its own to find
//! the tag, then reads the variant from the copy; a long session is mostly such objects (every
//! message, every content block), and that copy was a third of loading one. When the tag is the
//! first key, as our writer puts it, the rest of the object is read straight into the variant.
//! Otherwise the object is read as JSON first and the variant from that: any key order works.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::value::{MapAccessDeserializer, MapDeserializer};
use serde::de::{DeserializeSeed, Error, MapAccess, Visitor};
use serde_json::Value;

/// An enum whose variant is named by the key [`Tagged::TAG`] of its object.
pub trait Tagged: Sized {
    const TAG: &'static str;
    /// What the object is, for error messages.
    const EXPECTING: &'static str;

    /// The variant named `tag`, read from the object's other keys.
    fn variant<'de, A: MapAccess<'de>>(tag: &str, rest: A) -> Result<Self, A::Error>;
}

/// A `Deserialize` body for a [`Tagged`] enum.
pub fn deserialize<'de, T: Tagged, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(TagFirst(PhantomData))
}

/// The rest of an object, for a variant's own `Deserialize` (a struct's derive takes it).
pub fn rest<'de, A: MapAccess<'de>>(rest: A) -> MapAccessDeserializer<A> {
    MapAccessDeserializer::new(rest)
}

struct TagFirst<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TagFirst<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key_seed(Text)? else {
            return Err(A::Error::missing_field(T::TAG));
        };
        if first == T::TAG {
            let tag = map.next_value_seed(Text)?;
            return T::variant(&tag, map);
        }
        // The tag comes later: read the object, then the variant from it.
        let mut object = serde_json::Map::new();
        object.insert(first.into_owned(), map.next_value::<Value>()?);
        while let Some(key) = map.next_key::<String>()? {
            object.insert(key, map.next_value::<Value>()?);
        }
        let tag = match object.remove(T::TAG) {
            Some(Value::String(tag)) => tag,
            Some(other) => {
                return Err(A::Error::custom(format!(
                    "`{}` is not a string: {other}",
                    T::TAG
                )));
            }
            None => return Err(A::Error::missing_field(T::TAG)),
        };
        let rest = MapDeserializer::<_, serde_json::Error>::new(object.into_iter());
        T::variant(&tag, rest).map_err(A::Error::custom)
    }
}

/// A string key or value, borrowed from the input when it has no escapes.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{AssistantContent, ImageContent, ToolCall, UserContent};

    fn blocks() -> (Vec<UserContent>, Vec<AssistantContent>) {
        let user = vec![
            UserContent::Text {
                text: "say \"hi\"\n".into(),
            },
            UserContent::Image(ImageContent::new("aGk=", "image/png")),
        ];
        let assistant = vec![
            AssistantContent::Text { text: "ok".into() },
            AssistantContent::Thinking {
                thinking: "hm".into(),
                signature: Some("sig".into()),
            },
            AssistantContent::Thinking {
                thinking: "no signature".into(),
                signature: None,
            },
            AssistantContent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls", "type": "not the tag"}),
                invalid_arguments: None,
            }),
        ];
        (user, assistant)
    }

    /// The object with its tag moved from the front to the end.
    fn tag_last(value: &serde_json::Value) -> String {
        let object = value.as_object().unwrap();
        let mut parts: Vec<String> = object
            .iter()
            .filter(|(k, _)| *k != "type")
            .map(|(k, v)| format!("{}:{v}", json!(k)))
            .collect();
        parts.push(format!("\"type\":{}", object["type"]));
        format!("{{{}}}", parts.join(","))
    }

    #[test]
    fn every_block_reads_back_with_its_tag_first_or_last() {
        let (user, assistant) = blocks();
        for block in &user {
            let written = serde_json::to_string(block).unwrap();
            assert!(written.starts_with(r#"{"type":"#), "{written}");
            assert_eq!(
                &serde_json::from_str::<UserContent>(&written).unwrap(),
                block
            );
            let moved = tag_last(&serde_json::to_value(block).unwrap());
            assert_eq!(&serde_json::from_str::<UserContent>(&moved).unwrap(), block);
            assert_eq!(
                &serde_json::from_value::<UserContent>(serde_json::from_str(&moved).unwrap())
                    .unwrap(),
                block
            );
        }
        for block in &assistant {
            let written = serde_json::to_string(block).unwrap();
            assert_eq!(
                &serde_json::from_str::<AssistantContent>(&written).unwrap(),
                block
            );
            let moved = tag_last(&serde_json::to_value(block).unwrap());
            assert_eq!(
                &serde_json::from_str::<AssistantContent>(&moved).unwrap(),
                block,
                "{moved}"
            );
        }
    }

    #[test]
    fn bad_blocks_are_errors_that_say_why() {
        let error = |json: &str| {
            serde_json::from_str::<UserContent>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(error(r#"{"type":"video","url":"x"}"#).contains("unknown variant `video`"));
        assert!(error(r#"{"text":"x","type":"video"}"#).contains("unknown variant `video`"));
        assert!(error(r#"{"text":"x"}"#).contains("missing field `type`"));
        assert!(error(r#"{}"#).contains("missing field `type`"));
        assert!(error(r#"{"text":"x","type":3}"#).contains("not a string"));
        assert!(error(r#"{"type":"text"}"#).contains("missing field `text`"));
        assert!(error(r#"{"type":"text","text":5}"#).contains("invalid type"));
        assert!(error(r#""text""#).contains("a text or image block"));
    }
}
