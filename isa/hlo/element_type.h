// HLO element types (XLA PrimitiveType), defined once in an X-macro table
// (STYLE.md, practice 1): the lexer, the printer and byte-size arithmetic all
// read this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpusim::hlo {

// X(enumerator, text name, bits per element, kind)
// kind: 'p' pred, 's' signed int, 'u' unsigned int, 'f' float, 'c' complex,
//       't' token/opaque (no storage).
#define TPUSIM_HLO_ELEMENT_TYPES(X)          \
  X(kPred, "pred", 8, 'p')                   \
  X(kS1, "s1", 1, 's')                       \
  X(kS2, "s2", 2, 's')                       \
  X(kS4, "s4", 4, 's')                       \
  X(kS8, "s8", 8, 's')                       \
  X(kS16, "s16", 16, 's')                    \
  X(kS32, "s32", 32, 's')                    \
  X(kS64, "s64", 64, 's')                    \
  X(kU1, "u1", 1, 'u')                       \
  X(kU2, "u2", 2, 'u')                       \
  X(kU4, "u4", 4, 'u')                       \
  X(kU8, "u8", 8, 'u')                       \
  X(kU16, "u16", 16, 'u')                    \
  X(kU32, "u32", 32, 'u')                    \
  X(kU64, "u64", 64, 'u')                    \
  X(kF4E2M1FN, "f4e2m1fn", 4, 'f')           \
  X(kF8E3M4, "f8e3m4", 8, 'f')               \
  X(kF8E4M3, "f8e4m3", 8, 'f')               \
  X(kF8E4M3FN, "f8e4m3fn", 8, 'f')           \
  X(kF8E4M3FNUZ, "f8e4m3fnuz", 8, 'f')       \
  X(kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8, 'f') \
  X(kF8E5M2, "f8e5m2", 8, 'f')               \
  X(kF8E5M2FNUZ, "f8e5m2fnuz", 8, 'f')       \
  X(kF8E8M0FNU, "f8e8m0fnu", 8, 'f')         \
  X(kBF16, "bf16", 16, 'f')                  \
  X(kF16, "f16", 16, 'f')                    \
  X(kF32, "f32", 32, 'f')                    \
  X(kF64, "f64", 64, 'f')                    \
  X(kC64, "c64", 64, 'c')                    \
  X(kC128, "c128", 128, 'c')                 \
  X(kToken, "token", 0, 't')                 \
  X(kOpaque, "opaque", 0, 't')

enum class ElementType : std::uint8_t {
#define TPUSIM_X(e, name, bits, kind) e,
  TPUSIM_HLO_ELEMENT_TYPES(TPUSIM_X)
#undef TPUSIM_X
      kTuple,   // not an element type in text; marks tuple shapes
      kBuffer,  // `b(f32[4])`: a buffer shape wrapping one array shape
};

std::string_view element_type_name(ElementType t);
// Bits of storage per element (0 for token, opaque and tuple).
int element_type_bits(ElementType t);
// The table kind character ('p', 's', 'u', 'f', 'c', 't').
char element_type_kind(ElementType t);
bool is_floating(ElementType t);  // includes complex
bool is_integral(ElementType t);  // signed or unsigned integers
std::optional<ElementType> element_type_from_name(std::string_view name);

}  // namespace tpusim::hlo
