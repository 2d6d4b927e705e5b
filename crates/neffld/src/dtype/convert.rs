//! Converting elements between device dtypes, as `nrt_tensor_cast` and
//! `nrt_tensor_compute` do on the simulated device.
//!
//! The rules, neffld's where the runtime's are not public
//! (docs/decisions.md, "The C library"):
//! - a float result is rounded to nearest, ties to even (RNE): the rounding
//!   every NeuronCore documents as its default (Neuron "Rounding modes";
//!   stochastic rounding is an opt-in neffld does not model);
//! - a float too large for the target becomes the infinity of its sign, and
//!   a NaN stays a quiet NaN with its sign and leading payload bits, as IEEE
//!   754 and numpy's casts (`ml_dtypes` for bfloat16 and FP8) do;
//! - a float becomes an integer rounded to nearest, ties to even, then
//!   saturated to the integer's range; NaN becomes 0;
//! - an integer becomes a narrower integer saturated to its range.
//!
//! Every value of every format here is exact in an `f64`, and every
//! integer in an `i64`, so a conversion rounds once, from the exact value.

use super::NrtDtype;

/// One element, exactly: what a tensor's bytes hold, before it is written
/// in another dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    Int(i64),
    Float(f64),
}

/// A binary floating-point format laid out as IEEE 754: a sign bit,
/// `ebits` of biased exponent (all ones: infinity or NaN), `mbits` of
/// fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Float {
    ebits: u32,
    mbits: u32,
}

pub(crate) const F32: Float = Float {
    ebits: 8,
    mbits: 23,
};
pub(crate) const BF16: Float = Float { ebits: 8, mbits: 7 };
pub(crate) const F16: Float = Float {
    ebits: 5,
    mbits: 10,
};
pub(crate) const E4M3: Float = Float { ebits: 4, mbits: 3 };
pub(crate) const E5M2: Float = Float { ebits: 5, mbits: 2 };

/// How a dtype's elements are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Float(Float),
    Int { bytes: u32, signed: bool },
}

/// The encoding of a dtype the tensor operations take
/// ([`NrtDtype::convertible`]), `None` for the others.
pub(crate) fn kind(d: NrtDtype) -> Option<Kind> {
    let int = |bytes, signed| Some(Kind::Int { bytes, signed });
    match d {
        NrtDtype::Float32 => Some(Kind::Float(F32)),
        NrtDtype::Bfloat16 => Some(Kind::Float(BF16)),
        NrtDtype::Float16 => Some(Kind::Float(F16)),
        NrtDtype::Fp8E4 => Some(Kind::Float(E4M3)),
        NrtDtype::Fp8E5 => Some(Kind::Float(E5M2)),
        NrtDtype::Int8 => int(1, true),
        NrtDtype::Uint8 => int(1, false),
        NrtDtype::Int16 => int(2, true),
        NrtDtype::Uint16 => int(2, false),
        NrtDtype::Int32 => int(4, true),
        NrtDtype::Uint32 => int(4, false),
        NrtDtype::Unknown
        | NrtDtype::Uint64
        | NrtDtype::Fp32r
        | NrtDtype::Int64
        | NrtDtype::Fp8E3 => None,
    }
}

/// 2^k for the exponents these formats reach (|k| < 1023), exactly.
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

impl Float {
    fn exp_mask(self) -> u64 {
        (1 << self.ebits) - 1
    }

    fn frac_mask(self) -> u64 {
        (1 << self.mbits) - 1
    }

    fn bias(self) -> i32 {
        (1 << (self.ebits - 1)) - 1
    }

    /// The value of an encoding (the low `1 + ebits + mbits` bits).
    pub(crate) fn decode(self, bits: u64) -> f64 {
        let negative = (bits >> (self.ebits + self.mbits)) & 1 == 1;
        let exp = (bits >> self.mbits) & self.exp_mask();
        let frac = bits & self.frac_mask();
        let magnitude = if exp == self.exp_mask() {
            if frac == 0 {
                f64::INFINITY
            } else {
                // The payload in the leading fraction bits of a quiet NaN.
                f64::from_bits((0x7ff << 52) | (1 << 51) | (frac << (52 - self.mbits)))
            }
        } else if exp == 0 {
            frac as f64 * pow2(1 - self.bias() - self.mbits as i32)
        } else {
            (frac | (1 << self.mbits)) as f64 * pow2(exp as i32 - self.bias() - self.mbits as i32)
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The encoding of `x` rounded to nearest, ties to even; too large a
    /// magnitude is the infinity of its sign, a NaN a quiet NaN keeping its
    /// sign and leading payload bits.
    pub(crate) fn encode(self, x: f64) -> u64 {
        let sign = (x.to_bits() >> 63) << (self.ebits + self.mbits);
        let inf = self.exp_mask() << self.mbits;
        if x.is_nan() {
            let payload = (x.to_bits() >> (52 - self.mbits)) & self.frac_mask();
            return sign | inf | payload | (1 << (self.mbits - 1));
        }
        let a = x.abs();
        if a == f64::INFINITY {
            return sign | inf;
        }
        if a == 0.0 {
            return sign;
        }
        // The exponent of `a` (an f64 subnormal is below every format's
        // smallest, so its true exponent does not matter), no lower than the
        // format's smallest normal one: below it, the quantum is the
        // subnormals'.
        let emin = 1 - self.bias();
        let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
        // `a` in units of the quantum at its exponent, below 2^(mbits + 1):
        // dividing by a power of two is exact, so the one rounding is here.
        let n = (a / pow2(e - self.mbits as i32)).round_ties_even() as u64;
        // A carry out of the fraction (n = 2^(mbits + 1)) lands in the
        // exponent, as does a subnormal rounding up to the smallest normal.
        let bits = (((e - emin) as u64) << self.mbits) + n;
        sign | bits.min(inf)
    }
}

impl Kind {
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Kind::Float(f) => (1 + f.ebits + f.mbits) as usize / 8,
            Kind::Int { bytes, .. } => bytes as usize,
        }
    }

    /// The element in `bytes` (little-endian, [`Kind::size`] of them).
    pub(crate) fn read(self, bytes: &[u8]) -> Value {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        let raw = u64::from_le_bytes(word);
        match self {
            Kind::Float(f) => Value::Float(f.decode(raw)),
            Kind::Int {
                bytes: n,
                signed: false,
            } => Value::Int(raw as i64 & ((1i64 << (8 * n)) - 1)),
            Kind::Int {
                bytes: n,
                signed: true,
            } => {
                let shift = 64 - 8 * n;
                Value::Int(((raw << shift) as i64) >> shift)
            }
        }
    }

    /// Writes `v` into `out` ([`Kind::size`] bytes, little-endian) by the
    /// module's rules.
    pub(crate) fn write(self, v: Value, out: &mut [u8]) {
        let raw = match (self, v) {
            (Kind::Float(f), Value::Float(x)) => f.encode(x),
            // Every integer here is exact in an f64 (|i| < 2^53 for the
            // 32-bit types and sums of them); the encoding rounds once.
            (Kind::Float(f), Value::Int(i)) => f.encode(i as f64),
            (Kind::Int { bytes, signed }, v) => {
                let (lo, hi) = int_range(bytes, signed);
                let i = match v {
                    Value::Int(i) => i,
                    Value::Float(x) if x.is_nan() => 0,
                    // `as` saturates at the i64 range, inside which the
                    // clamp below saturates at the type's.
                    Value::Float(x) => x.round_ties_even() as i64,
                };
                i.clamp(lo, hi) as u64
            }
        };
        let n = out.len();
        out.copy_from_slice(&raw.to_le_bytes()[..n]);
    }
}

/// The smallest and largest value of an integer type.
fn int_range(bytes: u32, signed: bool) -> (i64, i64) {
    let bits = 8 * bytes;
    if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    }
}

/// Converts every element of `src`, of `from`, into `dst`, of `to`: the
/// two hold the same number of elements. The same dtype copies the bytes
/// (NaN payloads and all).
pub(crate) fn convert(from: Kind, src: &[u8], to: Kind, dst: &mut [u8]) {
    if from == to {
        dst.copy_from_slice(src);
        return;
    }
    for (s, d) in src
        .chunks_exact(from.size())
        .zip(dst.chunks_exact_mut(to.size()))
    {
        to.write(from.read(s), d);
    }
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};

    use super::*;

    /// A deterministic stream of 64-bit words (xorshift64*).
    fn words(mut s: u64) -> impl Iterator<Item = u64> {
        std::iter::from_fn(move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            Some(s.wrapping_mul(0x2545_f491_4f6c_dd1d))
        })
    }

    /// The bits a value reads back as, NaNs compared by being NaN.
    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan() && a.is_sign_negative() == b.is_sign_negative())
            || a.to_bits() == b.to_bits()
    }

    #[test]
    fn every_bfloat16_and_float16_decodes_as_half_reads_it() {
        for bits in 0..=u16::MAX {
            let b = bf16::from_bits(bits).to_f64();
            assert!(same(BF16.decode(bits.into()), b), "bf16 {bits:#06x}");
            let h = f16::from_bits(bits).to_f64();
            assert!(same(F16.decode(bits.into()), h), "f16 {bits:#06x}");
        }
    }

    /// The FP8 values from the format's definition, written out another way:
    /// sign, then 2^(1-bias) * fraction/2^m for subnormals, else
    /// 2^(e-bias) * (1 + fraction/2^m); the top exponent infinity or NaN.
    fn fp8_value(f: Float, bits: u8) -> f64 {
        let (e, m) = (f.ebits as i32, f.mbits as i32);
        let bias = (1 << (e - 1)) - 1;
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = (i32::from(bits) >> m) & ((1 << e) - 1);
        let frac = f64::from(i32::from(bits) & ((1 << m) - 1)) / f64::from(1 << m);
        if exp == (1 << e) - 1 {
            return if frac == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        if exp == 0 {
            sign * 2f64.powi(1 - bias) * frac
        } else {
            sign * 2f64.powi(exp - bias) * (1.0 + frac)
        }
    }

    #[test]
    fn every_fp8_decodes_to_its_value() {
        for f in [E4M3, E5M2] {
            for bits in 0..=u8::MAX {
                let want = fp8_value(f, bits);
                let got = f.decode(bits.into());
                assert!(
                    same(got, want) || (got.is_nan() && want.is_nan()),
                    "{f:?} {bits:#04x}"
                );
            }
        }
        // ml_dtypes' float8_e4m3 and float8_e5m2: largest finite values,
        // smallest subnormals, 1.0 and the infinities.
        assert_eq!(E4M3.decode(0x77), 240.0);
        assert_eq!(E4M3.decode(0x01), 2f64.powi(-9));
        assert_eq!(E4M3.decode(0x38), 1.0);
        assert_eq!(E4M3.decode(0xf8), f64::NEG_INFINITY);
        assert_eq!(E5M2.decode(0x7b), 57344.0);
        assert_eq!(E5M2.decode(0x01), 2f64.powi(-16));
        assert_eq!(E5M2.decode(0x3c), 1.0);
        assert_eq!(E5M2.decode(0x7c), f64::INFINITY);
    }

    /// Round-to-nearest-even by search: the finite values of a format in
    /// order (from `value`, which does not use `encode`), the nearest to
    /// `x`, on a tie the one whose code is even; past the largest by half
    /// a step or more, infinity.
    struct Nearest {
        /// (value, code) of every non-negative finite code, ascending.
        table: Vec<(f64, u64)>,
        inf: u64,
        sign: u64,
    }

    impl Nearest {
        fn new(f: Float, value: impl Fn(u64) -> f64) -> Nearest {
            let inf = f.exp_mask() << f.mbits;
            let table = (0..inf).map(|c| (value(c), c)).collect();
            let sign = 1 << (f.ebits + f.mbits);
            Nearest { table, inf, sign }
        }

        fn round(&self, x: f64) -> u64 {
            let sign = if x.is_sign_negative() { self.sign } else { 0 };
            let a = x.abs();
            let (max, max_code) = *self.table.last().unwrap();
            let step = max - self.table[self.table.len() - 2].0;
            if a >= max + step / 2.0 {
                return sign | self.inf;
            }
            let i = self.table.partition_point(|&(v, _)| v < a);
            let above = self.table.get(i).copied().unwrap_or((max, max_code));
            let below = self.table[i.saturating_sub(1)];
            let code = if a - below.0 < above.0 - a {
                below.1
            } else if above.0 - a < a - below.0 {
                above.1
            } else if below.1.is_multiple_of(2) {
                below.1
            } else {
                above.1
            };
            sign | code
        }

        /// Every value, every midpoint between neighbours and the f64s on
        /// either side of it, and past the largest.
        fn probes(&self) -> Vec<f64> {
            let mut out = Vec::new();
            for w in self.table.windows(2) {
                let mid = (w[0].0 + w[1].0) / 2.0;
                out.extend([w[0].0, mid, mid.next_down(), mid.next_up()]);
            }
            let (max, _) = *self.table.last().unwrap();
            let step = max - self.table[self.table.len() - 2].0;
            out.extend([
                max,
                max + step / 2.0,
                (max + step / 2.0).next_down(),
                max * 4.0,
            ]);
            let neg: Vec<f64> = out.iter().map(|x| -x).collect();
            out.extend(neg);
            out
        }
    }

    #[test]
    fn the_reference_rounds_to_nearest_even() {
        let r = Nearest::new(E4M3, |c| fp8_value(E4M3, c as u8));
        // 1.0 is 0x38; the next is 1.125 (0x39): 1.0625 is their midpoint
        // and goes to the even 0x38; 1.1875 between 0x39 and 0x3a to 0x3a.
        assert_eq!(r.round(1.0625), 0x38);
        assert_eq!(r.round(1.1875), 0x3a);
        assert_eq!(r.round(-1.0), 0xb8);
        assert_eq!(r.round(248.0), 0x78, "240 + half a step is infinity");
        assert_eq!(r.round(247.9), 0x77);
    }

    #[test]
    fn every_format_rounds_to_nearest_even_from_f64() {
        let formats: [(Float, Nearest); 4] = [
            (E4M3, Nearest::new(E4M3, |c| fp8_value(E4M3, c as u8))),
            (E5M2, Nearest::new(E5M2, |c| fp8_value(E5M2, c as u8))),
            (
                BF16,
                Nearest::new(BF16, |c| bf16::from_bits(c as u16).to_f64()),
            ),
            (
                F16,
                Nearest::new(F16, |c| f16::from_bits(c as u16).to_f64()),
            ),
        ];
        for (f, r) in &formats {
            let mut probes = r.probes();
            // Integers (int -> float casts) and arbitrary magnitudes.
            probes.extend((-70_000..70_000).map(f64::from));
            probes.extend(words(7).take(50_000).map(|w| {
                let x = f64::from_bits(w);
                if x.is_finite() {
                    x % 1e6
                } else {
                    0.5
                }
            }));
            for x in probes {
                assert_eq!(f.encode(x), r.round(x), "{f:?} {x:e}");
            }
            assert_eq!(f.encode(-0.0), r.round(-0.0));
        }
    }

    #[test]
    fn float32_to_bfloat16_matches_half_including_every_tie() {
        // Every bfloat16 pattern with the dropped half at zero, just below
        // the tie, at the tie, just above it, and at the top.
        for hi in 0..=u16::MAX as u32 {
            for lo in [0, 1, 0x7fff, 0x8000, 0x8001, 0xffff] {
                let x = f32::from_bits(hi << 16 | lo);
                let got = BF16.encode(F32.decode(x.to_bits().into()));
                assert_eq!(
                    got,
                    u64::from(bf16::from_f32(x).to_bits()),
                    "{:#010x}",
                    x.to_bits()
                );
            }
        }
        for w in words(11).take(1_000_000) {
            let x = f32::from_bits(w as u32);
            let got = BF16.encode(F32.decode(x.to_bits().into()));
            assert_eq!(
                got,
                u64::from(bf16::from_f32(x).to_bits()),
                "{:#010x}",
                x.to_bits()
            );
        }
        // 1 + 2^-8 is the tie between 1.0 (even) and 1 + 2^-7: it goes
        // down; 1 + 3 * 2^-8 between 1 + 2^-7 (odd) and 1 + 2^-6 goes up.
        assert_eq!(BF16.encode(1.0 + 2f64.powi(-8)), 0x3f80);
        assert_eq!(BF16.encode(1.0 + 3.0 * 2f64.powi(-8)), 0x3f82);
    }

    #[test]
    fn float32_to_float16_matches_half() {
        let mut xs: Vec<f32> = Vec::new();
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits).to_f32();
            xs.extend([h, h.next_up(), h.next_down()]);
        }
        xs.extend(words(13).take(1_000_000).map(|w| f32::from_bits(w as u32)));
        for x in xs {
            let got = F16.encode(F32.decode(x.to_bits().into()));
            let want = f16::from_f32(x).to_bits();
            if x.is_nan() {
                assert!(f16::from_bits(got as u16).is_nan(), "{:#010x}", x.to_bits());
            } else {
                assert_eq!(got, u64::from(want), "{:#010x}", x.to_bits());
            }
        }
    }

    #[test]
    fn f64_to_float32_rounds_as_ieee_754() {
        for w in words(17).take(1_000_000) {
            let x = f64::from_bits(w);
            let got = F32.encode(x);
            let want = u64::from((x as f32).to_bits());
            if x.is_nan() {
                assert!(f32::from_bits(got as u32).is_nan());
            } else {
                assert_eq!(got, want, "{x:e}");
            }
        }
    }

    #[test]
    fn bfloat16_and_float16_cast_into_each_other_as_half_does() {
        let bf = kind(NrtDtype::Bfloat16).unwrap();
        let h = kind(NrtDtype::Float16).unwrap();
        for bits in 0..=u16::MAX {
            let mut out = [0u8; 2];
            convert(bf, &bits.to_le_bytes(), h, &mut out);
            let want = f16::from_f32(bf16::from_bits(bits).to_f32());
            let got = f16::from_bits(u16::from_le_bytes(out));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "bf16 {bits:#06x}"
            );
            convert(h, &bits.to_le_bytes(), bf, &mut out);
            let want = bf16::from_f32(f16::from_bits(bits).to_f32());
            let got = bf16::from_bits(u16::from_le_bytes(out));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "f16 {bits:#06x}"
            );
        }
    }

    fn cast(from: NrtDtype, value: &[u8], to: NrtDtype) -> Vec<u8> {
        let (a, b) = (kind(from).unwrap(), kind(to).unwrap());
        let mut out = vec![0u8; b.size()];
        convert(a, value, b, &mut out);
        out
    }

    #[test]
    fn floats_become_integers_rounded_to_even_and_saturated() {
        let i32_of = |x: f32| {
            i32::from_le_bytes(
                cast(NrtDtype::Float32, &x.to_le_bytes(), NrtDtype::Int32)
                    .try_into()
                    .unwrap(),
            )
        };
        for (x, want) in [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (-2.5, -2),
            (2.4999998, 2),
            (1e10, i32::MAX),
            (-1e10, i32::MIN),
            (f32::INFINITY, i32::MAX),
            (f32::NEG_INFINITY, i32::MIN),
            (f32::NAN, 0),
        ] {
            assert_eq!(i32_of(x), want, "{x}");
        }
        let u8_of = |x: f32| cast(NrtDtype::Float32, &x.to_le_bytes(), NrtDtype::Uint8)[0];
        assert_eq!(u8_of(300.0), 255);
        assert_eq!(u8_of(-1.0), 0);
        assert_eq!(u8_of(254.5), 254);
        assert_eq!(u8_of(253.5), 254);
        let i8_of = |x: f32| cast(NrtDtype::Float32, &x.to_le_bytes(), NrtDtype::Int8)[0] as i8;
        assert_eq!(i8_of(-128.4), -128);
        assert_eq!(i8_of(-300.0), -128);
    }

    #[test]
    fn integers_saturate_into_narrower_integers() {
        let of = |from: NrtDtype, v: &[u8], to| cast(from, v, to);
        assert_eq!(
            of(NrtDtype::Int32, &(-5i32).to_le_bytes(), NrtDtype::Uint8),
            [0]
        );
        assert_eq!(
            of(NrtDtype::Int32, &70_000i32.to_le_bytes(), NrtDtype::Int16),
            32767i16.to_le_bytes()
        );
        assert_eq!(
            of(
                NrtDtype::Uint32,
                &4_000_000_000u32.to_le_bytes(),
                NrtDtype::Int32
            ),
            i32::MAX.to_le_bytes()
        );
        assert_eq!(
            of(NrtDtype::Int8, &[0x80], NrtDtype::Int32),
            (-128i32).to_le_bytes()
        );
        assert_eq!(
            of(NrtDtype::Uint16, &[0xff, 0xff], NrtDtype::Int32),
            65535i32.to_le_bytes()
        );
        assert_eq!(
            of(NrtDtype::Int16, &(-1i16).to_le_bytes(), NrtDtype::Uint32),
            [0; 4]
        );
    }

    #[test]
    fn integers_become_floats_rounded_once() {
        let f32_of = |i: i32| {
            f32::from_le_bytes(
                cast(NrtDtype::Int32, &i.to_le_bytes(), NrtDtype::Float32)
                    .try_into()
                    .unwrap(),
            )
        };
        for i in [
            0,
            1,
            -1,
            16_777_217,
            16_777_219,
            i32::MAX,
            i32::MIN,
            -16_777_217,
        ] {
            assert_eq!(f32_of(i).to_bits(), (i as f32).to_bits(), "{i}");
        }
        // 2^25 + 2^18 + 2^17 - 1 lies just below the midpoint of two
        // bfloat16 values, 2^25 + 2^18 (odd) and 2^25 + 2^19: rounding once
        // gives the lower; rounding to float32 first would reach the
        // midpoint and go to the even upper one.
        let i = (1 << 25) + (1 << 18) + (1 << 17) - 1;
        let got = cast(NrtDtype::Int32, &i32::to_le_bytes(i), NrtDtype::Bfloat16);
        assert_eq!(u16::from_le_bytes(got.try_into().unwrap()), 0x4c01);
        assert_eq!(
            bf16::from_f32(i as f32).to_bits(),
            0x4c02,
            "the double rounding this avoids"
        );
        let u = cast(NrtDtype::Uint32, &u32::MAX.to_le_bytes(), NrtDtype::Float32);
        assert_eq!(f32::from_le_bytes(u.try_into().unwrap()), 4_294_967_296.0);
        // Past float16's largest (65504) by half a step or more: infinity.
        let h = cast(NrtDtype::Int32, &65520i32.to_le_bytes(), NrtDtype::Float16);
        assert_eq!(u16::from_le_bytes(h.try_into().unwrap()), 0x7c00);
    }

    #[test]
    fn one_dtype_to_itself_copies_every_byte() {
        let nan = [0x01, 0x00, 0x80, 0x7f];
        assert_eq!(cast(NrtDtype::Float32, &nan, NrtDtype::Float32), nan);
        assert_eq!(cast(NrtDtype::Fp8E4, &[0x7f], NrtDtype::Fp8E4), [0x7f]);
    }

    #[test]
    fn only_the_documented_dtypes_have_an_encoding() {
        let takes: Vec<NrtDtype> = NrtDtype::ALL
            .into_iter()
            .filter(|d| d.convertible())
            .collect();
        assert_eq!(takes.len(), 11);
        for d in takes {
            assert_eq!(kind(d).unwrap().size() as u64, d.elem_size(), "{d:?}");
        }
        for d in [
            NrtDtype::Unknown,
            NrtDtype::Fp32r,
            NrtDtype::Fp8E3,
            NrtDtype::Int64,
            NrtDtype::Uint64,
        ] {
            assert!(!d.convertible(), "{d:?}");
        }
    }
}
