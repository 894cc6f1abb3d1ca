#include "memory/hbm_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace tpusim {
namespace {

// Function-local: registrations run during static initialization of other
// translation units, in no fixed order.
std::map<std::string, HbmModelInfo, std::less<>>& registry() {
  static std::map<std::string, HbmModelInfo, std::less<>> models;
  return models;
}

}  // namespace

bool register_hbm_model(HbmModelInfo info) {
  const std::string name = info.name;
  if (!registry().emplace(name, std::move(info)).second) {
    std::fprintf(stderr, "internal: two HBM models are registered as '%s'\n", name.c_str());
    std::abort();
  }
  return true;
}

std::vector<const HbmModelInfo*> hbm_models() {
  std::vector<const HbmModelInfo*> out;
  for (const auto& [name, info] : registry()) out.push_back(&info);
  return out;
}

const HbmModelInfo* find_hbm_model(std::string_view name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

}  // namespace tpusim
