//! Round-trip checks shared by the conversion tests.

#![allow(dead_code, unreachable_pub)]

use std::fmt::Debug;

use accord_grpc::ConvertError;

/// An a2a value from its ProtoJSON, the way the JSON bindings read it.
macro_rules! a2a {
    ($json:expr $(,)?) => {
        serde_json::from_value($json).expect("the fixture is valid ProtoJSON for the a2a type")
    };
}

/// a2a → pb → a2a is the identity; so are a2a → pb → bytes → pb → a2a and pb → a2a → pb.
/// Returns the proto value.
pub fn round_trip_a2a<A, P>(value: &A) -> P
where
    A: Clone + PartialEq + Debug + TryFrom<P, Error = ConvertError>,
    P: Clone + PartialEq + Debug + Default + prost::Message + TryFrom<A, Error = ConvertError>,
{
    let proto = P::try_from(value.clone()).expect("a2a → pb");
    let back = A::try_from(proto.clone()).expect("pb → a2a");
    assert_eq!(&back, value, "a2a → pb → a2a");

    let bytes = proto.encode_to_vec();
    let decoded = P::decode(bytes.as_slice()).expect("the encoded message decodes");
    assert_eq!(decoded, proto, "encode → decode");
    let from_wire = A::try_from(decoded).expect("pb from the wire → a2a");
    assert_eq!(&from_wire, value, "a2a → pb → bytes → pb → a2a");

    let proto_again = P::try_from(back).expect("a2a → pb again");
    assert_eq!(proto_again, proto, "pb → a2a → pb");
    proto
}

/// pb → a2a → pb is the identity (for proto values built directly, with what a2a JSON fixtures
/// do not reach: nanosecond timestamps, arbitrary bytes). Returns the a2a value.
pub fn round_trip_pb<P, A>(proto: &P) -> A
where
    A: Clone + PartialEq + Debug + TryFrom<P, Error = ConvertError>,
    P: Clone + PartialEq + Debug + prost::Message + TryFrom<A, Error = ConvertError>,
{
    let value = A::try_from(proto.clone()).expect("pb → a2a");
    let back = P::try_from(value.clone()).expect("a2a → pb");
    assert_eq!(&back, proto, "pb → a2a → pb");
    let again = A::try_from(back).expect("pb → a2a again");
    assert_eq!(again, value, "a2a → pb → a2a of the converted value");
    value
}
