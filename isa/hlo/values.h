// Readers for the structured values that appear in HLO text: integers and
// lists, shapes, windows, dim_labels, slice ranges, padding, replica groups,
// balanced blocks and literals. The parser uses them to validate attribute
// values (with a located error); accessors (attribute_values.h) use the same
// readers to decode a stored value, so the two can never disagree.
#pragma once

#include "common/collective.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/hlo/lexer.h"
#include "isa/hlo/shape.h"

namespace tpusim::hlo {

// A reader's error: where (byte offset in the lexer's buffer) and what.
struct ValueError {
  std::uint32_t offset = 0;
  std::string message;
};

// Bounds that keep hostile input from exhausting the stack or memory.
inline constexpr int kMaxNesting = 64;                       // tuple shapes, literals
// Iota device lists expand to at most this many devices (the largest TPU
// pods have ~10^4 chips): bounds time and memory per attribute decode.
inline constexpr std::int64_t kMaxExpandedDevices = 1 << 17;

using Ints = std::vector<std::int64_t>;

struct WindowDim {
  std::int64_t size = 1;
  std::int64_t stride = 1;
  std::int64_t pad_low = 0;
  std::int64_t pad_high = 0;
  std::int64_t lhs_dilate = 1;
  std::int64_t rhs_dilate = 1;
  bool reversal = false;
};
using Window = std::vector<WindowDim>;

// dim_labels=b01f_01io->b01f: positions of each logical dimension.
struct ConvDimLabels {
  std::int64_t input_batch = -1, input_feature = -1;
  Ints input_spatial;
  std::int64_t kernel_input_feature = -1, kernel_output_feature = -1;
  Ints kernel_spatial;
  std::int64_t output_batch = -1, output_feature = -1;
  Ints output_spatial;
};

struct SliceRange {
  std::int64_t start = 0, limit = 0, stride = 1;
};

struct PadDim {
  std::int64_t low = 0, high = 0, interior = 0;
};

// Device groups, either listed ({{0,1},{2,3}}) or in iota form
// ([G,S]<=[dims]T(perm)): iota(prod dims) reshaped to dims, transposed by
// perm, flattened and cut into G groups of S.
struct ReplicaGroups {
  tpusim::ReplicaGroups groups;  // expanded (also for the iota form); common/collective.h
  bool iota = false;
  bool mesh = false;  // mesh[…] {…} form: groups are not expanded
  Ints iota_shape;    // [G,S]
  Ints iota_reshape;  // dims after <=
  Ints iota_perm;     // T(...), empty = identity
};

// Parses a decimal integer word (with optional sign). False if not one.
bool parse_int(std::string_view word, std::int64_t& out);
bool parse_float(std::string_view word, double& out);  // also inf, -inf, nan

bool read_int(Lexer& lex, std::int64_t& out, ValueError& err);
bool read_int_list(Lexer& lex, Ints& out, ValueError& err);  // {1,2}
bool read_int_list_list(Lexer& lex, std::vector<Ints>& out, ValueError& err);
bool read_bracket_ints(Lexer& lex, Ints& out, ValueError& err);  // [2,4]
bool read_window(Lexer& lex, Window& out, ValueError& err);
bool read_dim_labels(Lexer& lex, ConvDimLabels& out, ValueError& err);
bool read_slice_ranges(Lexer& lex, std::vector<SliceRange>& out, ValueError& err);
bool read_padding(Lexer& lex, std::vector<PadDim>& out, ValueError& err);
bool read_replica_groups(Lexer& lex, ReplicaGroups& out, ValueError& err);
// `shape` is cleared first. Layout `{…}` is read only when it touches `]`.
bool read_shape(Lexer& lex, Shape& shape, ValueError& err, int depth = 0);
// Skips one balanced group starting at `{`, `(` or `[`.
bool skip_balanced(Lexer& lex, ValueError& err);
// Skips one value of unknown form: a balanced group or a token, followed by
// tokens glued to it without whitespace (`[2,4]<=[8]`, `T(1,0)`).
bool skip_raw_value(Lexer& lex, ValueError& err);
// Reads a literal up to (not including) the closing `)` of constant(…), or a
// single literal value (scalar, {…} or (…)) when `until_paren` is false.
bool skip_literal(Lexer& lex, bool until_paren, ValueError& err);

// `{key=value key="value", …}` (metadata, frontend_attributes): separators
// are spaces or commas; a string value is kept unescaped, any other value
// (a word, a {…} block, `#sdy.mesh<[]>`) as its text with comments removed.
struct KeyValue {
  std::string key;
  std::string value;
  bool operator==(const KeyValue&) const = default;
};
bool read_key_values(Lexer& lex, std::vector<KeyValue>& out, ValueError& err);

// iota(prod(reshape)) reshaped, transposed by perm (empty = identity), flat.
bool expand_iota(const Ints& reshape, const Ints& perm, Ints& out, std::string& err);

// True if `word` is a valid element-type name followed by `[` (a shape start).
bool starts_shape(const Lexer& lex);

// Re-emits `text` with comments removed and whitespace runs collapsed to one
// space (none where the original had none): the printer's form of raw values.
std::string normalize_value_text(std::string_view text);
void append_normalized(std::string& out, std::string_view text);

}  // namespace tpusim::hlo
