//! Proto `oneof` groups in ProtoJSON: the member's name is the JSON key (`{"text": "hi"}`,
//! `{"statusUpdate": {…}}`), there is no `kind` discriminator, and exactly one member must be set.

/// Picks the single member found in a oneof group, or explains why there is not exactly one.
pub(crate) fn exactly_one<T, E: serde::de::Error>(
    group: &str,
    members: &[&str],
    mut found: Vec<(&'static str, T)>,
) -> Result<T, E> {
    if found.len() > 1 {
        let names: Vec<&str> = found.iter().map(|(name, _)| *name).collect();
        return Err(E::custom(format!(
            "{group}: expected exactly one of {}, found several: {}",
            members.join(", "),
            names.join(", ")
        )));
    }
    match found.pop() {
        Some((_, value)) => Ok(value),
        None => Err(E::custom(format!("{group}: expected exactly one of {}, found none", members.join(", ")))),
    }
}

/// Declares an enum for a proto oneof whose members are all messages, with ProtoJSON serde:
/// `{"<member>": {…}}` on output, camelCase or snake_case member names on input, other keys
/// ignored, and an error when zero or several members are present.
macro_rules! proto_oneof {
    (
        $(#[$meta:meta])*
        pub enum $name:ident in $group:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($ty:ty) = $json:literal $(| $snake:literal)?,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant($ty),
            )+
        }

        impl $name {
            /// The ProtoJSON name of the member this value holds.
            pub fn member_name(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $json, )+
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                match self {
                    $( Self::$variant(value) => map.serialize_entry($json, value)?, )+
                }
                map.end()
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            // One object branch per member, each requiring its member: a value with exactly one
            // member matches exactly one branch, as deserialization requires.
            fn json_schema(generator: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let branches = vec![
                    $(
                        ::serde_json::json!({
                            "type": "object",
                            // A title of its own per branch: generators name a class after it.
                            "title": concat!(stringify!($name), "_", $json),
                            "properties": { $json: generator.subschema_for::<$ty>() },
                            "required": [$json],
                        }),
                    )+
                ];
                ::schemars::json_schema!({ "oneOf": branches })
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(::serde::Deserialize)]
                #[allow(non_snake_case)]
                struct Members {
                    $(
                        #[serde(default, rename = $json $(, alias = $snake)?)]
                        $variant: Option<$ty>,
                    )+
                }
                let members = Members::deserialize(deserializer)?;
                let mut found = Vec::new();
                $(
                    if let Some(value) = members.$variant {
                        found.push(($json, $name::$variant(value)));
                    }
                )+
                $crate::a2a::oneof::exactly_one($group, &[$($json),+], found)
            }
        }
    };
}
