#include "isa/printer.h"

#include <charconv>
#include <string>
#include <type_traits>

namespace tpusim::isa {
namespace {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Shortest text that reads back to the same double.
std::string format_double(double v) {
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc{} ? ptr : buf);
  // Keep it a number token the lexer reads ("1e+20" is fine, "inf" is not).
  return s;
}

struct ValuePrinter {
  const Program& p;
  std::string operator()(std::int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return format_double(v); }
  std::string operator()(AccMode m) const { return std::string(name(m)); }
  std::string operator()(const SemRef& s) const {
    return s.id < p.semaphores.size() ? p.semaphores[s.id].name : "<sem?>";
  }
  std::string operator()(const TileRef& t) const { return print_tile(p, t); }
  std::string operator()(const GroupsRef& g) const {
    if (g.id >= p.replica_groups.size()) return "[]";
    std::string out = "[";
    bool first_group = true;
    for (const auto& group : p.replica_groups[g.id]) {
      if (!first_group) out += ", ";
      first_group = false;
      out += "[";
      for (std::size_t i = 0; i < group.size(); ++i) {
        if (i != 0) out += ", ";
        out += std::to_string(group[i]);
      }
      out += "]";
    }
    return out + "]";
  }
  template <typename E>
  std::string operator()(E e) const requires std::is_enum_v<E> {
    return std::string(name(e));
  }
};

}  // namespace

std::string print_tile(const Program& p, const TileRef& t) {
  if (t.buffer >= p.buffers.size()) return "<tile?>";
  const Buffer& b = p.buffers[t.buffer];
  if (t == p.whole(t.buffer)) return b.name;
  return b.name + "[" + std::to_string(t.row) + ":" + std::to_string(t.row + t.rows) + ", " +
         std::to_string(t.col) + ":" + std::to_string(t.col + t.cols) + "]";
}

std::string print_instruction(const Program& p, const Instruction& inst) {
  std::string out;
  std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, std::monostate>) {
          out = "<invalid>";
        } else {
          const S defaults{};
          out = std::string(opcode_info(opcode(inst.op)).mnemonic);
          const ValuePrinter vp{p};
          for_each_field_pair(s, defaults, [&](const FieldInfo& f, const auto& field, const auto& def) {
            if (f.presence == Presence::kSubop) {
              out += "." + vp(field);
            } else if (f.presence == Presence::kRequired || !(field == def)) {
              out += " " + std::string(f.name) + "=" + vp(field);
            }
          });
        }
      },
      inst.op);
  return out;
}

std::string print(const Program& p) {
  std::string out;
  for (const Buffer& b : p.buffers) {
    out += ".buffer " + b.name + " " + std::string(name(b.space)) + " " + std::string(name(b.dtype)) + " [";
    for (std::size_t i = 0; i < b.shape.size(); ++i) {
      if (i != 0) out += ", ";
      out += std::to_string(b.shape[i]);
    }
    out += "]";
    if (b.offset >= 0) out += " offset=" + std::to_string(b.offset);
    if (b.view_of < p.buffers.size()) out += " view=" + p.buffers[b.view_of].name;
    out += "\n";
  }
  for (const Semaphore& s : p.semaphores) {
    out += ".semaphore " + s.name;
    if (s.initial != 0) out += " init=" + std::to_string(s.initial);
    out += "\n";
  }
  for (const Program::Reuse& r : p.reuse) out += ".reuse " + quote(r.label) + " extra=" + std::to_string(r.extra) + "\n";
  std::uint32_t prov = 0;
  int depth = 0;
  for (const Instruction& inst : p.code) {
    if (inst.provenance != prov) {
      prov = inst.provenance;
      out += std::string(static_cast<std::size_t>(depth) * 2, ' ') + ".provenance " +
             quote(p.strings.get(prov)) + "\n";
    }
    const Opcode code = opcode(inst.op);
    if (code == Opcode::kEnd && depth > 0) --depth;
    out += std::string(static_cast<std::size_t>(depth) * 2, ' ') + print_instruction(p, inst) + "\n";
    if (code == Opcode::kRepeat) ++depth;
  }
  return out;
}

}  // namespace tpusim::isa
