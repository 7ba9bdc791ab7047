//! Decoding a review's object tolerantly: only JSON objects where the API
//! server has objects, and a wrongly typed field kept as what was found (so
//! the rules can name it) rather than failing the whole review.

use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::SelectedAnnotations;
use crate::vocabulary::kueue::{JOB_MIN_PARALLELISM_ANNOTATION, QUEUE_NAME_ANNOTATION};
use crate::vocabulary::own_names::CHECKPOINTING_ANNOTATION;

/// Gives each type a `Deserialize` that takes only a JSON object. serde's
/// derived struct decoders also take an array, read field by field in order,
/// which the API server never sends where an object belongs (`"spec": []`),
/// and a patch written against it would not apply. Each type derives its
/// decoder as an inherent `deserialize` (`#[serde(remote = "Self")]`), and
/// this impl hands it only a map; anything else fails the decode (400).
macro_rules! decoded_from_objects_only {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $type;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$type, A::Error> {
                        <$type>::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    )*};
}
pub(crate) use decoded_from_objects_only;

/// A JSON object decoded as `T`, or what was found instead of an object.
/// Decoding never fails on the wrong JSON type (only on `T`'s own fields, which
/// are themselves tolerant here).
#[derive(Debug, Clone, PartialEq)]
pub enum Tolerant<T> {
    Value(T),
    /// What the field held instead of an object: "a string", "an array", ...
    Malformed(&'static str),
}

/// A JSON array of objects decoded as `T`, or what was found instead of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum TolerantList<T> {
    Items(Vec<Tolerant<T>>),
    Malformed(&'static str),
}

/// `visit_*` for every JSON scalar, each answering `Malformed(<its kind>)`.
macro_rules! malformed_scalars {
    ($malformed:path) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($malformed("a boolean"))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($malformed("a string"))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($malformed("null"))
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($malformed("null"))
        }
    };
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tolerant<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Tolerant<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value (an object is expected)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Tolerant::Value)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Tolerant::Malformed("an array"))
            }
            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                Tolerant::deserialize(deserializer)
            }
            malformed_scalars!(Tolerant::Malformed);
        }
        deserializer.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TolerantList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
            type Value = TolerantList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value (an array is expected)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(item) = seq.next_element::<Tolerant<T>>()? {
                    items.push(item);
                }
                Ok(TolerantList::Items(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(TolerantList::Malformed("an object"))
            }
            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                TolerantList::deserialize(deserializer)
            }
            malformed_scalars!(TolerantList::Malformed);
        }
        deserializer.deserialize_any(ListVisitor(std::marker::PhantomData))
    }
}

impl<'de> Deserialize<'de> for SelectedAnnotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnnotationsVisitor;
        impl<'de> Visitor<'de> for AnnotationsVisitor {
            type Value = SelectedAnnotations;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut selected = SelectedAnnotations::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == CHECKPOINTING_ANNOTATION {
                        selected.checkpointing = map.next_value()?;
                    } else if key == JOB_MIN_PARALLELISM_ANNOTATION {
                        selected.job_min_parallelism = map.next_value()?;
                    } else if key == QUEUE_NAME_ANNOTATION {
                        selected.queue_name = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(selected)
            }
        }
        deserializer.deserialize_map(AnnotationsVisitor)
    }
}
