//! Amazon Bedrock's models of vendors the table does not otherwise cover (Qwen, NVIDIA,
//! Writer), at Bedrock's prices and only under Bedrock's ids (`qwen.qwen3-32b-v1:0` is
//! `bedrock/qwen.qwen3-32b-v1`): the same models at other hosts are not priced by them.

use super::*;

/// Amazon Bedrock's pricing page.
const PRICING: Src = data_set("https://aws.amazon.com/bedrock/pricing/");

pub(super) static MODELS: &[Entry] = &[
    m(
        "bedrock/qwen.qwen3-coder-480b-a35b-v1",
        &[],
        PRICING,
        io("0.45", "1.8"),
    ),
    m(
        "bedrock/qwen.qwen3-coder-30b-a3b-v1",
        &[],
        PRICING,
        io("0.15", "0.6"),
    ),
    m(
        "bedrock/qwen.qwen3-vl-235b-a22b-v1",
        &[],
        PRICING,
        io("0.53", "2.66"),
    ),
    m("bedrock/qwen.qwen3-32b-v1", &[], PRICING, io("0.15", "0.6")),
    m(
        "bedrock/nvidia.nemotron-super-3-120b",
        &[],
        PRICING,
        io("0.15", "0.65"),
    ),
    m(
        "bedrock/nvidia.nemotron-nano-3-30b",
        &[],
        PRICING,
        io("0.06", "0.24"),
    ),
    m(
        "bedrock/nvidia.nemotron-nano-9b-v2",
        &[],
        PRICING,
        io("0.06", "0.23"),
    ),
    // Served through cross-region inference profiles (`us.writer.palmyra-x5-v1:0`), at one
    // price in every region.
    m("bedrock/writer.palmyra-x5-v1", &[], PRICING, io("0.6", "6")),
    m(
        "bedrock/writer.palmyra-x4-v1",
        &[],
        PRICING,
        io("2.5", "10"),
    ),
];
