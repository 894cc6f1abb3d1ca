// The chip config of a preset, for the lowering tests (a failed load is a
// test failure, not a crash).
#pragma once

#include <gtest/gtest.h>

#include "common/config_loader.h"

namespace tpusim::testing {

inline ChipConfig preset(const char* name = "v5e") {
  auto c = load_config(name);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : format_all(c.errors()));
  return c.ok() ? c.value().chip : ChipConfig{};
}

}  // namespace tpusim::testing
