//! The stable spellings of the enums that are stored and reported by name (kinds, statuses,
//! severities, failures): one list per enum gives its `as_str`, `parse`, `Display` and serde, so a
//! spelling is written once.

/// Gives an enum its stable spellings: `ALL`, `as_str`, `parse`, `Display`, and serde as the
/// spelling itself (a string in JSON and in rmp-serde alike; an unknown spelling is a
/// deserialisation error naming the known ones).
macro_rules! spelled {
    ($ty:ident, $what:literal, { $( $variant:ident $( ( $($inner:tt)+ ) )? => $name:literal, )+ }) => {
        impl $ty {
            /// Every value, in documentation order.
            pub const ALL: &'static [$ty] = &[$( $ty::$variant $( ( $($inner)+ ) )?, )+];

            /// Every spelling, in the order of [`Self::ALL`].
            const NAMES: &'static [&'static str] = &[$( $name, )+];

            /// The stable spelling, as stored in the audit database and written in reports.
            #[must_use]
            pub fn as_str(&self) -> &'static str {
                match self {
                    $( $ty::$variant $( ( $($inner)+ ) )? => $name, )+
                }
            }

            /// The value spelled `s`, if there is one.
            #[must_use]
            pub fn parse(s: &str) -> Option<$ty> {
                match s {
                    $( $name => Some($ty::$variant $( ( $($inner)+ ) )?), )+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<$ty, D::Error> {
                struct Spelling;
                impl ::serde::de::Visitor<'_> for Spelling {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: ::serde::de::Error>(self, s: &str) -> Result<$ty, E> {
                        $ty::parse(s).ok_or_else(|| E::unknown_variant(s, $ty::NAMES))
                    }
                }
                deserializer.deserialize_str(Spelling)
            }
        }

        // Why by hand: the derive would read the Rust variants, but the wire carries the
        // spellings above; this schema is made from the same list, so it cannot differ.
        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $ty {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .enum_values(Some($ty::NAMES.iter().copied()))
                    .description(Some($what))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $ty {}
    };
}
pub(crate) use spelled;
