// Shared by the CLI test files: run the CLI in-process or the real binary,
// and write small input files into the test's temp dir.
#pragma once

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "app/cli/cli.h"

namespace tpusim::cli::testing {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

// `tpusim ARGS…` in this process (no simulation, or one per test process).
inline Outcome tpusim(std::vector<std::string> args) {
  args.insert(args.begin(), "tpusim");
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

// The real executable as scripts call it; stdout captured, stderr via a file
// of this process and call (ctest runs test processes in parallel).
inline Outcome binary(const std::string& args) {
  static int calls = 0;
  const std::string err_file = ::testing::TempDir() + "tpusim_stderr_" + std::to_string(::getpid()) + "_" +
                               std::to_string(++calls) + ".txt";
  FILE* p = ::popen((std::string(TPUSIM_BINARY) + " " + args + " 2>" + err_file).c_str(), "r");
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while (p != nullptr && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = p != nullptr ? ::pclose(p) : -1;
  std::stringstream es;
  {
    std::ifstream e(err_file);
    es << e.rdbuf();
  }
  std::remove(err_file.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out, es.str()};
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace tpusim::cli::testing
