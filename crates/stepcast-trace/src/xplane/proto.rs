//! The XPlane schema (`xplane.proto`, vendored beside this file) as prost messages. Written
//! field for field from the schema, as `prost-build` would generate it, so that building
//! stepcast needs no `protoc`; maps are `BTreeMap` so that nothing depends on hash order.

use std::collections::BTreeMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(btree_map = "int64, message", tag = "4")]
    pub event_metadata: BTreeMap<i64, XEventMetadata>,
    #[prost(btree_map = "int64, message", tag = "5")]
    pub stat_metadata: BTreeMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
    #[prost(oneof = "x_event::Data", tags = "2, 5")]
    pub data: Option<x_event::Data>,
}

pub mod x_event {
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(int64, tag = "2")]
        OffsetPs(i64),
        #[prost(int64, tag = "5")]
        NumOccurrences(i64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_stat::Value", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<x_stat::Value>,
}

pub mod x_stat {
    // The variants keep the schema's field names (`double_value`, ...), as prost-build would.
    #[allow(clippy::enum_variant_names)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "2")]
        DoubleValue(f64),
        #[prost(uint64, tag = "3")]
        Uint64Value(u64),
        #[prost(int64, tag = "4")]
        Int64Value(i64),
        #[prost(string, tag = "5")]
        StrValue(String),
        #[prost(bytes = "vec", tag = "6")]
        BytesValue(Vec<u8>),
        #[prost(uint64, tag = "7")]
        RefValue(u64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}
