#include "app/validate/validate_collective.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tpusim::interconnect {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tpusim_ic_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

const char* kHeader =
    "collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,ref_time_s\n";

TEST(ValidateCollectiveTest, ShippedReferencesAgree) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/validation/refs/collectives.csv";
  std::ostringstream out, err;
  const int rc = validate_collective_csv(path, 0.05, false, out, err);
  EXPECT_EQ(rc, 0) << out.str() << err.str();
  EXPECT_EQ(err.str(), "");
  EXPECT_NE(out.str().find("outside tolerance"), std::string::npos);
  std::cout << out.str();  // the agreement table, for the log
}

TEST(ValidateCollectiveTest, IssueExampleRowAndJson) {
  // The cost forms' example row: 326.2 µs bandwidth term + 4 hops of 1 µs.
  const std::string path =
      write_temp("example.csv", std::string(kHeader) + "all-gather,8,true,all,33554432,45e9,1e-6,3.302e-4\n");
  std::ostringstream out, err;
  ASSERT_EQ(validate_collective_csv(path, 0.05, true, out, err), 0) << err.str();
  const auto doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["rows"].size(), 1u);
  EXPECT_NEAR(doc["rows"][0]["tpusim_time_s"].get<double>(), 3.302e-4, 1e-6);
  EXPECT_EQ(doc["rows"][0]["algorithm"], "per-axis-ring(x:ring)");
  EXPECT_TRUE(doc["passed"].get<bool>());
}

TEST(ValidateCollectiveTest, RowOutsideToleranceExitsOne) {
  const std::string path =
      write_temp("off.csv", std::string(kHeader) + "all-gather,8,true,all,33554432,45e9,1e-6,2.0e-4\n");
  std::ostringstream out, err;
  EXPECT_EQ(validate_collective_csv(path, 0.05, false, out, err), 1);
  EXPECT_NE(out.str().find("FAIL"), std::string::npos);
  // A per-row tolerance column overrides the default.
  const std::string loose = write_temp(
      "loose.csv", std::string(kHeader) + "all-gather,8,true,all,33554432,45e9,1e-6,2.0e-4,70%\n");
  std::ostringstream out2;
  EXPECT_EQ(validate_collective_csv(loose, 0.05, false, out2, err), 0);
}

TEST(ValidateCollectiveTest, MalformedRowsNameFileLineColumn) {
  const std::string path = write_temp(
      "bad.csv", std::string(kHeader) +
                     "# comment\n"
                     "all-gather,8,true,all,33554432,45e9,1e-6,3.302e-4\n"
                     "all-gathr,8,true,all,1,45e9,1e-6,1e-4\n"
                     "all-reduce,4x4,maybe,all,1,45e9,1e-6,1e-4\n"
                     "all-reduce,4x4,true,z,1,45e9,1e-6,1e-4\n"
                     "all-reduce,4x4,true,all,-5,45e9,1e-6,1e-4\n"
                     "all-reduce,4x4,true\n");
  std::ostringstream out, err;
  EXPECT_EQ(validate_collective_csv(path, 0.05, false, out, err), 2);
  const std::string e = err.str();
  EXPECT_NE(e.find(path + ":4:1: error: unknown collective 'all-gathr'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":5:16: error: wraparound 'maybe'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":6:21: error: group 'z'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":7:25: error: msg_bytes '-5'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":8:1: error: expected 8 columns"), std::string::npos) << e;
}

TEST(ValidateCollectiveTest, ShippedMultisliceReferencesAgree) {
  // Hierarchical all-reduce/all-gather/reduce-scatter over 2-8 slices joined
  // by DCN, against the closed form of docs/interconnect.md.
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/validation/refs/multislice_collectives.csv";
  std::ostringstream out, err;
  const int rc = validate_collective_csv(path, 0.05, true, out, err);
  EXPECT_EQ(rc, 0) << out.str() << err.str();
  const auto doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["rows"].size(), 13u);
  for (const auto& r : doc["rows"]) {
    EXPECT_GE(r["slices"].get<int>(), 2);
    EXPECT_EQ(r["algorithm"].get<std::string>().rfind("hierarchical(", 0), 0u) << r["algorithm"];
  }
  std::cout << out.str();
}

TEST(ValidateCollectiveTest, NamedOptionalColumnsAndUnknownOnesIgnored) {
  // Columns in any order after the eight; "note" is not a known column and is
  // ignored. 2 slices of an 8-ring, one chip per slice in each group would be
  // group 'x' (inside a slice: no DCN): 8-ring AG = 330.2 us as in the issue
  // example. Group 'all' spans both slices: hierarchical AG = DCN on V/8
  // (1/2·4 MiB/6.25e9 + 10 us = 345.5 us) + the ICI ring AG 330.2 us.
  const std::string path = write_temp(
      "named.csv",
      "collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,ref_time_s,"
      "note,dcn_latency_s,slices,dcn_bytes_per_s_per_chip,tolerance,algorithm\n"
      "all-gather,8,true,x,33554432,45e9,1e-6,3.302e-4,inside each slice,1e-5,2,6.25e9,1%,\n"
      "all-gather,8,true,all,33554432,45e9,1e-6,6.7577e-4,both slices,1e-5,2,6.25e9,1%,hierarchical\n"
      "all-gather,8,true,all,33554432,45e9,1e-6,6.7577e-4,auto picks it,1e-5,2,6.25e9,1%,auto\n"
      "all-gather,8,true,all,33554432,45e9,1e-6,3.302e-4\n");
  std::ostringstream out, err;
  EXPECT_EQ(validate_collective_csv(path, 0.05, true, out, err), 0) << out.str() << err.str();
  const auto doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["rows"].size(), 4u);
  EXPECT_EQ(doc["rows"][0]["algorithm"], "per-axis-ring(x:ring)");
  EXPECT_EQ(doc["rows"][1]["algorithm"], "hierarchical(per-axis-ring(x:ring)+dcn:line(2))");
  EXPECT_EQ(doc["rows"][3]["slices"], 1);
}

TEST(ValidateCollectiveTest, MultisliceColumnErrorsNameTheColumn) {
  const std::string path = write_temp(
      "badms.csv",
      "collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,ref_time_s,"
      "slices,dcn_bytes_per_s_per_chip,algorithm\n"
      "all-gather,8,true,all,1024,45e9,1e-6,1e-4,2,,\n"
      "all-gather,8,true,all,1024,45e9,1e-6,1e-4,0,1e9,\n"
      "all-gather,8,true,all,1024,45e9,1e-6,1e-4,2,1e9,tree\n"
      "all-to-all,8,true,all,1024,45e9,1e-6,1e-4,2,1e9,hierarchical\n");
  std::ostringstream out, err;
  EXPECT_EQ(validate_collective_csv(path, 0.05, false, out, err), 2);
  const std::string e = err.str();
  EXPECT_NE(e.find(path + ":2:12: error: 2 slices need the column 'dcn_bytes_per_s_per_chip'"), std::string::npos)
      << e;
  EXPECT_NE(e.find(path + ":3:43: error: slices '0'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":4:49: error: algorithm 'tree'"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ":5:49: error: all-to-all has only the direct algorithm"), std::string::npos) << e;
}

TEST(ValidateCollectiveTest, MissingFileExitsTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(validate_collective_csv("/nonexistent/collectives.csv", 0.05, false, out, err), 2);
  EXPECT_NE(err.str().find("/nonexistent/collectives.csv: error: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::interconnect
