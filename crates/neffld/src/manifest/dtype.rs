//! The dtype numbering of the I/O tensors (parse.md §6). A def.json
//! `kbin_dtype` shares its names but not its numbers; the loader reads no
//! def.json dtype, so that numbering has no type here.

/// `nrt_dtype_t` of the public `nrt.h`: what `nrt_get_model_tensor_info` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum NrtDtype {
    Unknown = 0,
    Uint64 = 1,
    Int8 = 2,
    Uint8 = 3,
    Int16 = 4,
    Uint16 = 5,
    Bfloat16 = 6,
    Float16 = 7,
    Int32 = 8,
    Uint32 = 9,
    Float32 = 10,
    Fp32r = 11,
    Int64 = 12,
    Fp8E3 = 13,
    Fp8E4 = 14,
    Fp8E5 = 15,
}

impl NrtDtype {
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
