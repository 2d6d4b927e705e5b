//! Element types as libnrt numbers them (`nrt_dtype_t`): what
//! `nrt_get_model_tensor_info` reports for a model's I/O tensors (parse.md
//! §6), and the device dtype a tensor carries for `nrt_tensor_cast` and
//! `nrt_tensor_compute` ([`crate::tensor_ops`]), whose element conversion
//! is `convert`'s. A def.json `kbin_dtype` shares the names but not the
//! numbers; the loader reads no def.json dtype, so that numbering has no
//! type here.

pub(crate) mod convert;

/// `nrt_dtype_t` of the public `nrt.h`: what `nrt_get_model_tensor_info`
/// reports, and a tensor's device dtype (`Unknown`, which the header also
/// spells `NRT_DTYPE_INVALID`, is a tensor without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum NrtDtype {
    /// A type the runtime does not name (FP8/FP4 strings, `float64`): bound by size alone.
    Unknown = 0,
    /// `uint64`.
    Uint64 = 1,
    /// `int8`.
    Int8 = 2,
    /// `uint8`.
    Uint8 = 3,
    /// `int16`.
    Int16 = 4,
    /// `uint16`.
    Uint16 = 5,
    /// `bfloat16`.
    Bfloat16 = 6,
    /// `float16`.
    Float16 = 7,
    /// `int32`.
    Int32 = 8,
    /// `uint32`.
    Uint32 = 9,
    /// `float32`.
    Float32 = 10,
    /// `fp32r`: float32 rounded as the engines round it.
    Fp32r = 11,
    /// `int64`.
    Int64 = 12,
    /// 8-bit float with a 3-bit exponent.
    Fp8E3 = 13,
    /// 8-bit float with a 4-bit exponent: for tensor casts, e4m3 laid out
    /// as IEEE 754 (bias 7, infinities, largest finite 240), numpy's
    /// `ml_dtypes.float8_e4m3`. The compiler calls the trn1/trn2 type
    /// F8E4M3 and keeps F8E4M3FN (no infinities, largest 448) for trn3;
    /// that this code is the former is neffld's reading (docs/decisions.md).
    Fp8E4 = 14,
    /// 8-bit float with a 5-bit exponent: e5m2 (bias 15, infinities,
    /// largest finite 57344), `ml_dtypes.float8_e5m2`.
    Fp8E5 = 15,
}

impl NrtDtype {
    /// Every code of the header, in value order.
    pub const ALL: [NrtDtype; 16] = [
        NrtDtype::Unknown,
        NrtDtype::Uint64,
        NrtDtype::Int8,
        NrtDtype::Uint8,
        NrtDtype::Int16,
        NrtDtype::Uint16,
        NrtDtype::Bfloat16,
        NrtDtype::Float16,
        NrtDtype::Int32,
        NrtDtype::Uint32,
        NrtDtype::Float32,
        NrtDtype::Fp32r,
        NrtDtype::Int64,
        NrtDtype::Fp8E3,
        NrtDtype::Fp8E4,
        NrtDtype::Fp8E5,
    ];

    /// The dtype a C caller's code names; `None` for a value the header
    /// has no enumerator for.
    pub fn from_code(code: u32) -> Option<NrtDtype> {
        NrtDtype::ALL.into_iter().find(|d| d.code() == code)
    }

    /// The neff.json `dltype` map (§6.1). Only the eleven names the runtime
    /// knows; everything else (FP8/FP4 strings, `float64`) is `None`, which
    /// the caller turns into UNKNOWN with a warning.
    pub fn from_io_str(s: &str) -> Option<NrtDtype> {
        Some(match s {
            "float32" => NrtDtype::Float32,
            "float16" => NrtDtype::Float16,
            "bfloat16" => NrtDtype::Bfloat16,
            "int8" => NrtDtype::Int8,
            "int16" => NrtDtype::Int16,
            "int32" => NrtDtype::Int32,
            "int64" => NrtDtype::Int64,
            "uint8" => NrtDtype::Uint8,
            "uint16" => NrtDtype::Uint16,
            "uint32" => NrtDtype::Uint32,
            "uint64" => NrtDtype::Uint64,
            _ => return None,
        })
    }

    /// The numeric value a C caller sees.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The lower-case name: the neff.json spelling for the eleven it maps,
    /// the `nrt.h` enumerator's suffix for the rest.
    pub fn name(self) -> &'static str {
        match self {
            NrtDtype::Unknown => "unknown",
            NrtDtype::Uint64 => "uint64",
            NrtDtype::Int8 => "int8",
            NrtDtype::Uint8 => "uint8",
            NrtDtype::Int16 => "int16",
            NrtDtype::Uint16 => "uint16",
            NrtDtype::Bfloat16 => "bfloat16",
            NrtDtype::Float16 => "float16",
            NrtDtype::Int32 => "int32",
            NrtDtype::Uint32 => "uint32",
            NrtDtype::Float32 => "float32",
            NrtDtype::Fp32r => "fp32r",
            NrtDtype::Int64 => "int64",
            NrtDtype::Fp8E3 => "fp8_e3",
            NrtDtype::Fp8E4 => "fp8_e4",
            NrtDtype::Fp8E5 => "fp8_e5",
        }
    }

    /// The header's enumerator (`NRT_DTYPE_FLOAT32`), for messages a C
    /// caller can search its headers for.
    pub fn c_name(self) -> &'static str {
        match self {
            NrtDtype::Unknown => "NRT_DTYPE_UNKNOWN",
            NrtDtype::Uint64 => "NRT_DTYPE_UINT64",
            NrtDtype::Int8 => "NRT_DTYPE_INT8",
            NrtDtype::Uint8 => "NRT_DTYPE_UINT8",
            NrtDtype::Int16 => "NRT_DTYPE_INT16",
            NrtDtype::Uint16 => "NRT_DTYPE_UINT16",
            NrtDtype::Bfloat16 => "NRT_DTYPE_BFLOAT16",
            NrtDtype::Float16 => "NRT_DTYPE_FLOAT16",
            NrtDtype::Int32 => "NRT_DTYPE_INT32",
            NrtDtype::Uint32 => "NRT_DTYPE_UINT32",
            NrtDtype::Float32 => "NRT_DTYPE_FLOAT32",
            NrtDtype::Fp32r => "NRT_DTYPE_FP32R",
            NrtDtype::Int64 => "NRT_DTYPE_INT64",
            NrtDtype::Fp8E3 => "NRT_DTYPE_FP8_E3",
            NrtDtype::Fp8E4 => "NRT_DTYPE_FP8_E4",
            NrtDtype::Fp8E5 => "NRT_DTYPE_FP8_E5",
        }
    }

    /// Whether `nrt_tensor_cast` and `nrt_tensor_compute` take the dtype:
    /// the types every NeuronCore from v3 (trn2) computes natively and
    /// whose encoding is public — float32, bfloat16, float16, the two FP8
    /// formats, and the 8-, 16- and 32-bit integers. neffld's choice, as
    /// the runtime's list is not public (docs/decisions.md): fp32r and
    /// FP8_E3 have no public encoding, and 64-bit integers are left out
    /// with them until a source says the runtime takes them.
    pub fn convertible(self) -> bool {
        convert::kind(self).is_some()
    }

    /// The dtypes [`NrtDtype::convertible`] takes, as a list for messages.
    pub fn convertible_names() -> String {
        let names: Vec<&str> = NrtDtype::ALL
            .into_iter()
            .filter(|d| d.convertible())
            .map(NrtDtype::name)
            .collect();
        names.join(", ")
    }

    /// Bytes per element; UNKNOWN counts as 1, as the original does.
    pub fn elem_size(self) -> u64 {
        match self {
            NrtDtype::Unknown
            | NrtDtype::Int8
            | NrtDtype::Uint8
            | NrtDtype::Fp8E3
            | NrtDtype::Fp8E4
            | NrtDtype::Fp8E5 => 1,
            NrtDtype::Float16 | NrtDtype::Bfloat16 | NrtDtype::Int16 | NrtDtype::Uint16 => 2,
            NrtDtype::Float32 | NrtDtype::Fp32r | NrtDtype::Int32 | NrtDtype::Uint32 => 4,
            NrtDtype::Int64 | NrtDtype::Uint64 => 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_map_matches_the_header_values() {
        assert_eq!(
            NrtDtype::from_io_str("float16").map(NrtDtype::code),
            Some(7)
        );
        assert_eq!(
            NrtDtype::from_io_str("float32").map(NrtDtype::code),
            Some(10)
        );
        assert_eq!(
            NrtDtype::from_io_str("bfloat16").map(NrtDtype::code),
            Some(6)
        );
        assert_eq!(NrtDtype::from_io_str("uint64").map(NrtDtype::code), Some(1));
        assert_eq!(NrtDtype::from_io_str("float64"), None);
        assert_eq!(NrtDtype::from_io_str("float8_e4m3fn"), None);
        assert_eq!(NrtDtype::Unknown.elem_size(), 1);
        assert_eq!(NrtDtype::Int64.elem_size(), 8);
        // Each mapped name reads back as itself.
        for n in [
            "float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
            "uint32", "uint64",
        ] {
            assert_eq!(NrtDtype::from_io_str(n).map(NrtDtype::name), Some(n));
        }
    }
}
