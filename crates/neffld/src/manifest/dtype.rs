//! The two dtype numberings the manifests use (parse.md §6). They are
//! independent: an I/O tensor's `nrt_dtype_t` and a def.json `kbin_dtype`
//! share names but not numbers, so each has its own type and no conversion.

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

/// `kbin_dtype`: the def.json numbering (var `dtype`, descriptor `*_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum KbinDtype {
    Fp8E3 = 1,
    Fp8E4 = 2,
    Fp8E5 = 3,
    Fp16 = 4,
    Fp32 = 5,
    Fp32r = 6,
    Bf16 = 7,
    Uint8 = 8,
    Uint16 = 9,
    Uint32 = 10,
    Uint64 = 11,
    Int8 = 12,
    Int16 = 13,
    Int32 = 14,
    Int64 = 15,
}

impl KbinDtype {
    /// The 19-entry def.json string map (§6.2). Packed `_x4` formats become
    /// unsigned containers of the packed width; there is no plain `float8_e5m2`.
    pub fn from_def_str(s: &str) -> Option<KbinDtype> {
        Some(match s {
            "float8e3" => KbinDtype::Fp8E3,
            "float8e4" | "float8_e4m3fn" => KbinDtype::Fp8E4,
            "float8e5" => KbinDtype::Fp8E5,
            "float16" => KbinDtype::Fp16,
            "float32" => KbinDtype::Fp32,
            "float32r" => KbinDtype::Fp32r,
            "bfloat16" => KbinDtype::Bf16,
            "uint8" => KbinDtype::Uint8,
            "uint16" | "float4_e2m1fn_x4" => KbinDtype::Uint16,
            "uint32" | "float8_e4m3fn_x4" | "float8_e5m2_x4" => KbinDtype::Uint32,
            "uint64" => KbinDtype::Uint64,
            "int8" => KbinDtype::Int8,
            "int16" => KbinDtype::Int16,
            "int32" => KbinDtype::Int32,
            "int64" => KbinDtype::Int64,
            _ => return None,
        })
    }

    pub fn code(self) -> u32 {
        self as u32
    }

    /// The SDMA/ISA dtype code the instruction encodings use.
    pub fn isa_code(self) -> u8 {
        match self {
            KbinDtype::Fp8E3 => 13,
            KbinDtype::Fp8E4 => 14,
            KbinDtype::Fp8E5 => 15,
            KbinDtype::Fp16 => 7,
            KbinDtype::Fp32 => 10,
            KbinDtype::Fp32r => 11,
            KbinDtype::Bf16 => 6,
            KbinDtype::Uint8 => 3,
            KbinDtype::Uint16 => 5,
            KbinDtype::Uint32 => 9,
            KbinDtype::Uint64 => 1,
            KbinDtype::Int8 => 2,
            KbinDtype::Int16 => 4,
            KbinDtype::Int32 => 8,
            KbinDtype::Int64 => 12,
        }
    }

    /// Bytes per element, through the SDMA code (§6.2 size table).
    pub fn elem_size(self) -> u64 {
        match self.isa_code() {
            1 | 12 => 8,
            2 | 3 | 13 | 14 | 15 => 1,
            4..=7 => 2,
            _ => 4,
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

    #[test]
    fn def_map_and_isa_codes() {
        assert_eq!(KbinDtype::from_def_str("float16"), Some(KbinDtype::Fp16));
        assert_eq!(KbinDtype::Fp16.isa_code(), 7);
        assert_eq!(KbinDtype::Fp32.isa_code(), 10);
        assert_eq!(
            KbinDtype::from_def_str("float8_e5m2_x4"),
            Some(KbinDtype::Uint32)
        );
        assert_eq!(KbinDtype::from_def_str("float8_e5m2"), None);
        assert_eq!(KbinDtype::Fp32.elem_size(), 4);
        assert_eq!(KbinDtype::Int64.elem_size(), 8);
        assert_eq!(KbinDtype::Bf16.elem_size(), 2);
        assert_eq!(KbinDtype::Int8.elem_size(), 1);
    }
}
