#include "common/units.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

double parse_ok(std::string_view text, Dimension d) {
  double v = 0;
  std::string err;
  EXPECT_TRUE(parse_quantity(text, d, v, err)) << text << ": " << err;
  return v;
}

std::string parse_err(std::string_view text, Dimension d) {
  double v = 0;
  std::string err;
  EXPECT_FALSE(parse_quantity(text, d, v, err)) << text << " parsed as " << v;
  return err;
}

TEST(Units, DecimalAndBinarySizePrefixesDiffer) {
  EXPECT_DOUBLE_EQ(parse_ok("128 MiB", Dimension::kBytes), 128.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("128 MB", Dimension::kBytes), 128e6);
  EXPECT_DOUBLE_EQ(parse_ok("16 GiB", Dimension::kBytes), 17179869184.0);
  EXPECT_DOUBLE_EQ(parse_ok("2 kB", Dimension::kBytes), 2000);
  EXPECT_DOUBLE_EQ(parse_ok("2 KiB", Dimension::kBytes), 2048);
  EXPECT_DOUBLE_EQ(parse_ok("64B", Dimension::kBytes), 64);  // space optional
}

TEST(Units, BandwidthsInBytesAndBits) {
  EXPECT_DOUBLE_EQ(parse_ok("819 GB/s", Dimension::kBytesPerSecond), 819e9);
  EXPECT_DOUBLE_EQ(parse_ok("1.6 TB/s", Dimension::kBytesPerSecond), 1.6e12);
  EXPECT_DOUBLE_EQ(parse_ok("4.5e10 B/s", Dimension::kBytesPerSecond), 4.5e10);
  // 100 Gbps = 12.5 GB/s (bits, not bytes).
  EXPECT_DOUBLE_EQ(parse_ok("100 Gbps", Dimension::kBytesPerSecond), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_ok("25 Gb/s", Dimension::kBytesPerSecond), 3.125e9);
  EXPECT_DOUBLE_EQ(parse_ok("1 GiB/s", Dimension::kBytesPerSecond), 1073741824.0);
}

TEST(Units, FrequencyAndTime) {
  EXPECT_DOUBLE_EQ(parse_ok("1.5 GHz", Dimension::kHertz), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_ok("940 MHz", Dimension::kHertz), 940e6);
  EXPECT_DOUBLE_EQ(parse_ok("700 ns", Dimension::kSeconds), 700e-9);
  EXPECT_DOUBLE_EQ(parse_ok("1 us", Dimension::kSeconds), 1e-6);
  EXPECT_DOUBLE_EQ(parse_ok("1 \xC2\xB5s", Dimension::kSeconds), 1e-6);
  EXPECT_DOUBLE_EQ(parse_ok("2.5 ms", Dimension::kSeconds), 2.5e-3);
}

TEST(Units, BareNumberIsAnError) {
  EXPECT_NE(parse_err("819", Dimension::kBytesPerSecond).find("no unit"), std::string::npos);
  EXPECT_NE(parse_err("128", Dimension::kBytes).find("no unit"), std::string::npos);
}

TEST(Units, WrongDimensionIsAnError) {
  const std::string e = parse_err("819 GB", Dimension::kBytesPerSecond);
  EXPECT_NE(e.find("is a size"), std::string::npos) << e;
  EXPECT_NE(parse_err("1.5 GHz", Dimension::kSeconds).find("frequency"), std::string::npos);
}

TEST(Units, AmbiguousAndUnknownUnitsAreErrors) {
  EXPECT_NE(parse_err("16 KB", Dimension::kBytes).find("ambiguous"), std::string::npos);
  EXPECT_NE(parse_err("800 GBps", Dimension::kBytesPerSecond).find("ambiguous"), std::string::npos);
  EXPECT_NE(parse_err("3 furlongs", Dimension::kBytes).find("unknown unit"), std::string::npos);
  EXPECT_NE(parse_err("GB/s", Dimension::kBytesPerSecond).find("expected a bandwidth"), std::string::npos);
  EXPECT_NE(parse_err("", Dimension::kHertz).find("expected a frequency"), std::string::npos);
  EXPECT_FALSE(parse_err("1e999 B", Dimension::kBytes).empty());
}

TEST(Units, PlainNumbers) {
  double v = 0;
  EXPECT_TRUE(parse_number("128", v));
  EXPECT_DOUBLE_EQ(v, 128);
  EXPECT_TRUE(parse_number("-0.5e3", v));
  EXPECT_DOUBLE_EQ(v, -500);
  EXPECT_FALSE(parse_number("12x", v));
  EXPECT_FALSE(parse_number("", v));
  EXPECT_FALSE(parse_number(".", v));
}

TEST(Units, FormatsReadably) {
  EXPECT_EQ(format_quantity(128.0 * 1024 * 1024, Dimension::kBytes), "128 MiB");
  EXPECT_EQ(format_quantity(2048, Dimension::kBytes), "2 KiB");
  EXPECT_EQ(format_quantity(819e9, Dimension::kBytesPerSecond), "819 GB/s");
  EXPECT_EQ(format_quantity(1.5e9, Dimension::kHertz), "1.5 GHz");
  EXPECT_EQ(format_quantity(1e-6, Dimension::kSeconds), "1 us");
  EXPECT_EQ(format_si(1.966e14, "FLOP/s"), "196.6 TFLOP/s");
}

TEST(Units, FormatThenParseRoundTrips) {
  for (double bytes : {64.0, 2048.0, 1.0 * (1 << 20), 16.0 * (1ull << 30), 95.0 * (1ull << 30)}) {
    const std::string s = format_quantity(bytes, Dimension::kBytes);
    EXPECT_DOUBLE_EQ(parse_ok(s, Dimension::kBytes), bytes) << s;
  }
}

}  // namespace
}  // namespace tpusim
