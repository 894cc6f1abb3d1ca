// Corpus-wide tests: every file in ../shared/refs/hlo-corpus parses, every
// module round-trips (parse -> print -> parse -> print is a fixpoint) and
// analyzes without error. Skips, saying so, when the corpus is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "isa/hlo/analysis.h"
#include "isa/hlo/parser.h"
#include "isa/hlo/printer.h"

namespace tpusim::hlo {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus_files() {
  const fs::path dir = fs::path(TPUSIM_SHARED_DIR) / "refs" / "hlo-corpus" / "files";
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

#define SKIP_IF_NO_CORPUS(files)                                                  \
  if ((files).empty()) GTEST_SKIP() << "HLO corpus not found under " TPUSIM_SHARED_DIR \
                                       "/refs/hlo-corpus/files; skipping"

// Modules in the corpus that are genuinely inconsistent. Like XLA's parser,
// the default parse keeps them (with a warning); under --strict each must
// fail with the stated reason (so the check keeps working).
struct KnownInconsistent {
  const char* file_suffix;
  int module;  // 1-based, among the file's modules
  const char* reason;
};
constexpr KnownInconsistent kKnownInconsistent[] = {
    {"hlo_text_to_lhlo_no_opt.hlotxt.hlo", 3,
     // `ENTRY main () -> f32[6]` declares no parameters, but the body has
     // parameter(0) and parameter(1) (select-and-scatter test).
     "declares 0 parameters in its signature but has 2 parameter instructions"},
};

const KnownInconsistent* known_inconsistent(const fs::path& f, int module) {
  for (const auto& k : kKnownInconsistent)
    if (f.filename().string().ends_with(k.file_suffix) && k.module == module) return &k;
  return nullptr;
}

TEST(HloCorpus, EveryFileParses) {
  const auto files = corpus_files();
  SKIP_IF_NO_CORPUS(files);
  int modules = 0;
  int inconsistent = 0;
  for (const fs::path& f : files) {
    ParsedFile parsed = parse_hlo_file(f.string());
    ParsedFile strict = parse_hlo_file(f.string(), ParseOptions{.strict = true});
    ASSERT_EQ(parsed.modules.size(), strict.modules.size()) << f;
    for (std::size_t i = 0; i < parsed.modules.size(); ++i) {
      const auto& m = parsed.modules[i];
      EXPECT_TRUE(m.ok()) << format_all(m.errors());
      if (m.ok()) ++modules;
      const auto& s = strict.modules[i];
      if (const auto* k = known_inconsistent(f, static_cast<int>(i) + 1)) {
        ASSERT_FALSE(s.ok()) << f << " module " << i + 1 << " is listed as inconsistent but passes --strict";
        EXPECT_NE(format_all(s.errors()).find(k->reason), std::string::npos) << format_all(s.errors());
        ++inconsistent;
        continue;
      }
      EXPECT_TRUE(s.ok()) << f << " module " << i + 1 << " under --strict:\n" << format_all(s.errors());
    }
  }
  EXPECT_EQ(inconsistent, static_cast<int>(std::size(kKnownInconsistent)));
  // README.md counts 342 lines starting with `HloModule`; some sit inside
  // comments (CHECK lines), so fewer modules are real.
  EXPECT_GE(modules, 300);
  std::printf("corpus: %zu files, %d modules parsed and checked, %d known inconsistent\n", files.size(), modules,
              inconsistent);
}

TEST(HloCorpus, EveryModuleRoundTrips) {
  const auto files = corpus_files();
  SKIP_IF_NO_CORPUS(files);
  for (const fs::path& f : files) {
    ParsedFile parsed = parse_hlo_file(f.string());
    int index = 0;
    for (const auto& m : parsed.modules) {
      ++index;
      if (!m.ok()) continue;  // reported by EveryFileParses
      const std::string once = print_module(*m.value());
      auto again = parse_hlo_module(once, f.filename().string() + "#" + std::to_string(index) + ".printed");
      ASSERT_TRUE(again.ok()) << f << " module " << index << ":\n" << format_all(again.errors());
      const std::string twice = print_module(*again.value());
      EXPECT_EQ(once, twice) << f << " module " << index;
      EXPECT_EQ(m.value()->instruction_count(), again.value()->instruction_count());
    }
  }
}


TEST(HloCorpus, EveryModuleAnalyzes) {
  const auto files = corpus_files();
  SKIP_IF_NO_CORPUS(files);
  const RooflineRates rates = RooflineRates::example_chip();
  int analyzed = 0;
  for (const fs::path& f : files) {
    ParsedFile parsed = parse_hlo_file(f.string(), ParseOptions{.verify_shapes = false});
    for (const auto& m : parsed.modules) {
      ASSERT_TRUE(m.ok()) << format_all(m.errors());
      const RooflineReport r = roofline(*m.value(), rates);
      EXPECT_GE(r.total.flops, 0.0) << f;
      EXPECT_GE(r.total.bound_time_s, 0.0) << f;
      EXPECT_FALSE(render_json(r).empty());
      EXPECT_FALSE(render_csv(r).empty());
      EXPECT_FALSE(render_text(r).empty());
      ++analyzed;
    }
  }
  EXPECT_EQ(analyzed, 342);
}

}  // namespace
}  // namespace tpusim::hlo
